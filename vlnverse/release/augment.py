"""``vlnverse release augment``: new procedural homes and their training episodes for a track.

A track's homes are the scenes ``0 .. N-1`` of its corpus seed, with house seeds drawn in seed
space 0 (``[0, 2**32)``). Augmentation homes are scenes of the same corpus seed drawn in seed
space 1 (``[2**48, 2**48 + 2**32)``; :data:`~vlnverse.scene.procgen.corpus.SEED_SPACE_BASES` says
why there), so no augmentation home has the seed, or draws the random numbers, of any track's
home, whatever the track's scale. As a second line of defence the build compares each home's
layout digest (rooms, objects, floor-plan graph; :func:`~vlnverse.scene.procgen.house.layout_digest`)
with the track's homes and refuses a repeat: it caught a first design whose augmentation seeds
(``2**32 + s``) drew what track seeds drew on their second attempt.

Homes ``first .. first + homes - 1`` of that space make one set, so sets built with adjacent
ranges (``--first 0 --homes 24``, then ``--first 24 --homes 96``) never share a home and a model
can train on several of them. Every home is a training scene; its episodes are the track's
fine- and coarse-grained ones made with the track's generation settings, none held out as
``val_seen`` (augmentation homes are never evaluated). The track's own episodes never change.

Stages (each resumable, the bytes independent of executor and workers):

1. ``scenes``: the homes (``AUG/scenes``), on local workers or Ray;
2. ``check``: layout digests against the track's homes;
3. ``episodes``: ``AUG/dataset`` (train split, fine + coarse), on local workers or Ray;
4. ``frames``: the oracle's frames at the track's training resolution (``AUG/frames``, local
   workers; skipped with ``frames=False``), what ``vlnverse train --augment AUG`` reads;
5. ``card``: ``AUG/README.md`` and ``AUG/SHA256SUMS`` (scenes, dataset and card; the frames
   are deterministic and listed by count and size, not checksummed).

``AUG/build.json`` records the options (a re-run with others is refused) and stage times.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlnverse import __version__
from vlnverse.config import config_to_dict
from vlnverse.errors import ConfigError
from vlnverse.eval.tracks import Track, get_track
from vlnverse.fileio import OutputLock, prepare_output_dir, write_json_atomic, write_text_atomic
from vlnverse.parallel import check_executor
from vlnverse.release.build import BUILD_FILE, BuildLog, Progress, ReleaseConfig
from vlnverse.scene.procgen.corpus import CorpusOptions, generate_corpus
from vlnverse.scene.procgen.house import generate_house, layout_digest
from vlnverse.tasks.datagen import DatagenConfig, run_datagen
from vlnverse.tasks.generate import GenerationConfig

log = logging.getLogger(__name__)

AUGMENT_SEED_SPACE = 1
TASKS = ("fine", "coarse")
FRAMES = "frames"
CARD = "README.md"
CHECKSUMS = "SHA256SUMS"
AUGMENT_FILE = "augment.json"
"""What a set is (track, homes, episodes, frames), for the trainer and the card; inside the checksums."""


@dataclass(frozen=True)
class AugmentConfig:
    """An augmentation set for a track.

    Attributes:
        track: The track whose generation settings the episodes follow (``mini``, ``full``).
        out: Output folder.
        homes: Number of homes (>= 1).
        first: Index of the set's first home in the augmentation seed space (sets with
            disjoint ranges share no home).
        per_home: Coarse trajectories per home (fine: a third of them); None: the track's.
        frames: Pre-render the oracle's frames (stage 4).
        rgb_size, depth_size: Frame resolution (the ``cpu`` training preset's 64 px by default).
        max_steps: Step cap of a pre-rendered episode (None: the track's).
        workers: Local processes or Ray tasks at once.
        executor: ``local`` or ``ray`` (homes and episodes; frames run on local workers).
        ray_address: Ray cluster address (None: a local Ray instance).
    """

    track: str
    out: str
    homes: int
    first: int = 0
    per_home: int | None = None
    frames: bool = True
    rgb_size: int = 64
    depth_size: int = 64
    max_steps: int | None = None
    workers: int = 1
    executor: str = "local"
    ray_address: str | None = None

    def __post_init__(self) -> None:
        get_track(self.track)
        for name in ("homes", "rgb_size", "depth_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        if isinstance(self.first, bool) or not isinstance(self.first, int) or self.first < 0:
            raise ConfigError(f"first must be a non-negative integer, got {self.first!r}")
        for name in ("per_home", "max_steps"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        check_executor(self.executor, self.workers)

    @property
    def the_track(self) -> Track:
        return get_track(self.track)

    @property
    def steps(self) -> int:
        return self.max_steps or self.the_track.max_steps

    def corpus(self) -> CorpusOptions:
        """All homes up to the set's last, in the augmentation seed space (only the set's are built)."""
        return CorpusOptions(count=self.first + self.homes, seed=self.the_track.seed,
                             seed_space=AUGMENT_SEED_SPACE, splits="train")

    def generation(self) -> GenerationConfig:
        """The track's generation settings, fine + coarse only, no images, nothing held out."""
        base = _track_release(self.the_track, self.out).generation()
        changes: dict[str, Any] = {"tasks": TASKS, "render": False, "val_seen_fraction": 0.0}
        if self.per_home is not None:
            changes["per_scene"] = self.per_home
        return dataclasses.replace(base, **changes)

    def datagen(self) -> DatagenConfig:
        out = Path(self.out)
        return DatagenConfig(scenes=str(out / "scenes"), out=str(out / "dataset"), seed=self.the_track.seed,
                             workers=self.workers, generation=self.generation())

    def prerender_config(self):
        from vlnverse.learning.prerender import PrerenderConfig

        return PrerenderConfig(dataset=str(Path(self.out) / "dataset"), out=str(Path(self.out) / FRAMES),
                               split="train", rgb_size=self.rgb_size, depth_size=self.depth_size,
                               max_steps=self.steps, workers=self.workers)

    def identity(self) -> dict[str, Any]:
        """What decides the set's bytes (not where, nor on how many workers)."""
        identity = {"vlnverse": __version__, "track": self.track, "first": self.first, "homes": self.homes,
                    "corpus": self.corpus().identity(), "generation": config_to_dict(self.generation())}
        if self.frames:
            identity["frames"] = {"rgb_size": self.rgb_size, "depth_size": self.depth_size, "max_steps": self.steps}
        return identity

    def command(self) -> str:
        """The command that rebuilds this set."""
        parts = [f"vlnverse release augment --track {self.track} --homes {self.homes}"]
        parts += [f"--first {self.first}"] if self.first else []
        parts += [f"--per-home {self.per_home}"] if self.per_home is not None else []
        parts += [f"--rgb-size {self.rgb_size} --depth-size {self.depth_size}"] \
            if (self.rgb_size, self.depth_size) != (64, 64) else []
        parts += [f"--max-steps {self.max_steps}"] if self.max_steps is not None else []
        parts += ["--no-frames"] if not self.frames else []
        return " ".join(parts + ["--out AUG"])


def _track_release(track: Track, out: str) -> ReleaseConfig:
    return ReleaseConfig(out=out, scale=track.scale, seed=track.seed)


def home_ids(config: AugmentConfig) -> list[str]:
    """The scene ids of the set's homes."""
    options = config.corpus()
    return [options.scene_id(index) for index in range(config.first, config.first + config.homes)]


def track_layouts(track: Track) -> dict[str, str]:
    """``layout digest -> scene id`` of every home of ``track`` (each house generated, not written)."""
    release = _track_release(track, "")
    options = CorpusOptions(count=release.scene_count, seed=track.seed)
    return {layout_digest(generate_house(options.scene_seed(i), options.house).summary()): options.scene_id(i)
            for i in range(options.count)}


def check_layouts(homes: dict[str, str], track_homes: dict[str, str], track: str) -> None:
    """Refuse a set with a home that repeats a track home or another home of the set.

    Args:
        homes: ``scene id -> layout digest`` of the set.
        track_homes: ``layout digest -> scene id`` of the track's homes.
        track: The track's name, for the message.

    Raises:
        ConfigError: naming the repeated homes.
    """
    repeats = [f"{scene} repeats {track}'s {track_homes[digest]}" for scene, digest in sorted(homes.items())
               if digest in track_homes]
    seen: dict[str, str] = {}
    for scene, digest in sorted(homes.items()):
        if digest in seen:
            repeats.append(f"{scene} repeats {seen[digest]} of this set")
        seen.setdefault(digest, scene)
    if repeats:
        raise ConfigError("augmentation homes must be new homes: " + "; ".join(repeats))


@dataclass(frozen=True)
class AugmentSummary:
    """A finished set: its facts (``augment.json``), the build log and the card's path."""

    facts: dict[str, Any]
    log: BuildLog
    card: Path


def build_augmentation(config: AugmentConfig, *, progress: Progress | None = None) -> AugmentSummary:
    """Build (or finish building) the augmentation set ``config`` describes.

    Raises:
        ConfigError: bad options, a repeated home, or ``out`` holds a set made with other options.
        OutputError: ``out`` cannot be written, or another run is writing it.
        WorkerError: a local worker process died (re-run to resume).
        DependencyNotInstalled: ``--executor ray`` without Ray.
    """
    tick = progress or (lambda stage, done, total: None)
    out = prepare_output_dir(config.out)
    with OutputLock(out):
        build = BuildLog.start(out, config.identity())
        build.stage(out, "scenes", lambda: _homes(config, tick))
        digests = build.stage(out, "check", lambda: _check(config, tick))
        manifest = build.stage(out, "episodes", lambda: _episodes(config, tick))
        frames = build.stage(out, "frames", lambda: _frames(config, tick)) if config.frames else None
        facts = _facts(config, manifest, digests, frames)
        write_json_atomic(out / AUGMENT_FILE, facts)
        card = build.stage(out, "card", lambda: write_augment_card(out, config, facts))
        from vlnverse.release.card import write_checksums

        write_checksums(out, exclude=(BUILD_FILE,), skip_dirs=(FRAMES,))
        build.write(out / BUILD_FILE)
    return AugmentSummary(facts, build, card)


def _homes(config: AugmentConfig, tick: Progress) -> None:
    done = 0

    def on_scene(meta: dict, skipped: bool) -> None:
        nonlocal done
        done += 1
        tick("scenes", done, config.homes)

    tick("scenes", 0, config.homes)
    generate_corpus(Path(config.out) / "scenes", config.corpus(), workers=config.workers, on_scene=on_scene,
                    executor=config.executor, ray_address=config.ray_address, indices=range(config.first,
                                                                                          config.first + config.homes))


def _check(config: AugmentConfig, tick: Progress) -> dict[str, str]:
    tick("check", 0, 1)
    scenes = Path(config.out) / "scenes"
    homes = {scene: layout_digest(json.loads((scenes / scene / "meta.json").read_text(encoding="utf-8")))
             for scene in home_ids(config)}
    check_layouts(homes, track_layouts(config.the_track), config.track)
    tick("check", 1, 1)
    return homes


def _episodes(config: AugmentConfig, tick: Progress) -> dict[str, Any]:
    state = {"done": 0}

    def on_start(todo: int, done: int) -> None:
        state["done"] = done
        tick("episodes", done, config.homes)

    def on_scene(outcome) -> None:
        state["done"] += 1
        tick("episodes", state["done"], config.homes)

    summary = run_datagen(config.datagen(), progress=on_scene, on_start=on_start, executor=config.executor,
                          ray_address=config.ray_address)
    if summary.manifest.get("skipped_scenes"):
        raise ConfigError(f"homes could not be loaded: {summary.manifest['skipped_scenes']}")
    return summary.manifest


def _frames(config: AugmentConfig, tick: Progress) -> dict[str, Any]:
    from vlnverse.learning.prerender import prerender

    done = 0

    def on_scene(outcome) -> None:
        nonlocal done
        done += 1
        tick("frames", done, config.homes)

    tick("frames", 0, config.homes)
    return prerender(config.prerender_config(), progress=on_scene).to_dict()


def _facts(config: AugmentConfig, manifest: dict[str, Any], digests: dict[str, str],
           frames: dict[str, Any] | None) -> dict[str, Any]:
    tasks = manifest["splits"].get("train", {})
    facts: dict[str, Any] = {
        "track": config.track, "first": config.first, "homes": config.homes, "home_ids": home_ids(config),
        "seed_space": AUGMENT_SEED_SPACE, "dataset_config_hash": manifest.get("config_hash"),
        "episodes": {task: int(tasks.get(task, {}).get("episodes", 0)) for task in TASKS},
        "layout_digests": digests, "command": config.command(),
    }
    if frames is not None:
        facts["frames"] = {"count": frames["frames"], "bytes": frames["bytes"], "rgb_size": config.rgb_size,
                           "depth_size": config.depth_size, "max_steps": config.steps}
    return facts


def _disk_bytes(folder: Path) -> int:
    return sum(os.path.getsize(Path(root, name)) for root, _, files in os.walk(folder) for name in files)


def write_augment_card(out: Path, config: AugmentConfig, facts: dict[str, Any]) -> Path:
    """``AUG/README.md``: what the set holds, how it is disjoint from the track, how to use and rebuild it."""
    track = config.the_track
    episodes = facts["episodes"]
    frames = facts.get("frames")
    scenes_mb = _disk_bytes(out / "scenes") / 2**20
    dataset_mb = _disk_bytes(out / "dataset") / 2**20
    lines = [
        f"# Augmentation set for {track.label}", "",
        f"{config.homes} new procedural homes (`{facts['home_ids'][0]}` to `{facts['home_ids'][-1]}`) and their "
        f"training episodes: {episodes['fine']} fine-grained and {episodes['coarse']} coarse-grained, "
        f"{sum(episodes.values())} in all, made with the track's generation settings (none held out). "
        "Results of a model trained with it are labelled `+aug` and never mixed with the track's plain rows.", "",
        "| homes | fine | coarse | frames | disk |", "|---|---|---|---|---|",
        f"| {config.homes} | {episodes['fine']} | {episodes['coarse']} | "
        + (f"{frames['count']:,} ({frames['rgb_size']} px RGB, {frames['depth_size']} px depth)" if frames else "not rendered")
        + f" | scenes {scenes_mb:.1f} MiB, episodes {dataset_mb:.1f} MiB"
        + (f", frames {frames['bytes'] / 2**20:.1f} MiB" if frames else "") + " |", "",
        "## New homes, never the track's", "",
        f"The track's homes have house seeds below 2^32; these homes are indices {config.first} to "
        f"{config.first + config.homes - 1} of the augmentation seed space, whose seeds lie in [2^48, 2^48 + 2^32): "
        "no seed, nor any random draw of the house generator, can be shared. The build also compared each home's layout digest (rooms and their areas, objects "
        f"by category, doors, footprint, floor-plan graph) with those of {track.name}'s homes and found no repeat "
        "(`augment.json` lists the digests). A set with another `--first`/`--homes` range shares no home with "
        "this one.", "",
        "## Use", "",
        "    vlnverse train cma --dataset REL/dataset --task fine,coarse --preset cpu --frames FRAMES --augment AUG "
        "--out RUN", "",
        "## Contents", "",
        "- `scenes/`: one `aug_NNNN/scene.usdc` with its `meta.json` per home; `splits.json` (every home trains).",
        "- `dataset/`: `manifest.json` and `shards/<home>.jsonl.gz`, the train split's episodes.",
        "- `frames/train/`: the oracle's frames of every episode, as `vlnverse dataset prerender` writes them "
        "(deterministic; not in `SHA256SUMS`)." if frames else "- no frames (built with `--no-frames`).",
        f"- `{AUGMENT_FILE}`: the set's facts; `{CHECKSUMS}`: SHA-256 of scenes, dataset and this card; "
        f"`{BUILD_FILE}`: stage times of the build that made this copy.", "",
        "## Rebuild bit for bit", "",
        f"    {config.command()}", "    cd AUG && sha256sum -c SHA256SUMS", "",
        "Any `--workers` or `--executor local|ray` gives the same bytes; a killed build resumes when run again.", "",
    ]
    path = out / CARD
    write_text_atomic(path, "\n".join(lines))
    return path
