"""``vlnverse release build``: the whole benchmark, scenes to dataset card, by one command.

Stages, each resumable (a killed build re-run with the same options continues and ends with
the bytes of an uninterrupted one):

1. ``scenes``: the procedural corpus (263 homes at scale 1; 177/33/53 scene splits), through
   :func:`~vlnverse.scene.procgen.corpus.generate_corpus`;
2. ``episodes``: every task of Table 2 (plus the other tasks the generator offers, e.g.
   ObjectNav) with reference images, through :func:`~vlnverse.tasks.datagen.run_datagen`
   with the generation settings of ``paper_splits.yaml`` (package data, linked from ``datagen/``);
3. ``report``: dataset statistics and plots (one streaming pass) and the corpus's statistics;
4. ``card``: the dataset card ``README.md`` and ``SHA256SUMS`` over every file.

Layout: ``DIR/scenes``, ``DIR/dataset`` (manifest, shards, images, report), ``DIR/stats``
(corpus statistics), ``DIR/README.md``, ``DIR/SHA256SUMS``, and ``DIR/build.json``: how
this build went (stage times, peak memory per worker), which depends on the machine and
so lies outside the checksums. Scenes and datagen run on the local pool or Ray
(:mod:`vlnverse.parallel`); the executor and worker count never change the bytes.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlnverse import __version__
from vlnverse.config import config_to_dict
from vlnverse.data import data_path
from vlnverse.errors import ConfigError
from vlnverse.fileio import OutputLock, prepare_output_dir, write_json_atomic
from vlnverse.parallel import check_executor, peak_rss_mb
from vlnverse.redact import redact
from vlnverse.scene.procgen.corpus import PAPER_SPLIT, CorpusOptions, generate_corpus
from vlnverse.tasks.datagen import DatagenConfig, run_datagen
from vlnverse.tasks.episode import TASKS
from vlnverse.tasks.generate import GenerationConfig

log = logging.getLogger(__name__)

PAPER_SCENES = sum(PAPER_SPLIT.values())
STAGES = ("scenes", "episodes", "report", "card")
BUILD_FILE = "build.json"
PAPER_CONFIG = data_path("paper_splits.yaml")
"""The datagen config whose ``generation`` section a release uses (Table 2's shape)."""

Progress = Callable[[str, int, int], None]
"""Called with (stage, units done, units in the stage) as the build advances."""


@dataclass(frozen=True)
class ReleaseConfig:
    """A release build.

    Attributes:
        out: Release folder.
        scale: Share of the paper's 263 scenes to build (1 = all; at least 3 scenes).
        seed: Seed of the corpus and of the dataset.
        workers: Processes (local) or Ray tasks at once.
        executor: ``local`` or ``ray``.
        ray_address: Ray cluster address (None: a local Ray instance).
        llm: Instruction LLM spec (``none``: prior instructions).
        per_scene: Coarse trajectories per scene (None: the generation config's, 75).
        generation_file: Datagen YAML whose ``generation`` section is used (None: :data:`PAPER_CONFIG`).
    """

    out: str
    scale: float = 1.0
    seed: int = 0
    workers: int = 1
    executor: str = "local"
    ray_address: str | None = None
    llm: str = "none"
    per_scene: int | None = None
    generation_file: str | None = None

    def __post_init__(self) -> None:
        if not (isinstance(self.scale, int | float) and 0 < self.scale <= 1):
            raise ConfigError(f"scale must be in (0, 1], got {self.scale!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ConfigError(f"seed must be a non-negative integer, got {self.seed!r}")
        if self.per_scene is not None and (not isinstance(self.per_scene, int) or self.per_scene < 1):
            raise ConfigError(f"per_scene must be a positive integer, got {self.per_scene!r}")
        check_executor(self.executor, self.workers)

    @property
    def scene_count(self) -> int:
        return max(3, round(PAPER_SCENES * self.scale))

    def generation(self) -> GenerationConfig:
        """Table 2's generation settings, with every task the generator offers and images."""
        path = Path(self.generation_file) if self.generation_file else PAPER_CONFIG
        if not path.is_file():
            raise ConfigError(f"generation config {path} not found (give --config FILE)")
        base = DatagenConfig.from_file(path).generation
        changes: dict[str, Any] = {"tasks": tuple(dict.fromkeys((*base.tasks, *TASKS))), "render": True}
        if self.per_scene is not None:
            changes["per_scene"] = self.per_scene
        return dataclasses.replace(base, **changes)

    def datagen(self) -> DatagenConfig:
        out = Path(self.out)
        return DatagenConfig(scenes=str(out / "scenes"), out=str(out / "dataset"), seed=self.seed, llm=self.llm,
                             workers=self.workers, generation=self.generation())

    def corpus(self) -> CorpusOptions:
        return CorpusOptions(count=self.scene_count, seed=self.seed)

    def identity(self) -> dict[str, Any]:
        """What decides the release's bytes (not where, nor on how many workers)."""
        return {"vlnverse": __version__, "scale": self.scale, "scenes": self.scene_count, "seed": self.seed,
                "llm": redact(self.llm), "corpus": self.corpus().identity(),
                "generation": config_to_dict(self.generation())}


@dataclass
class BuildLog:
    """``build.json``: stage wall times (this run and summed over the runs that resumed
    the build), per worker and stage the units run and the peak resident memory after the
    first and after the last, and the runs so far."""

    identity: dict[str, Any]
    stages: dict[str, dict[str, float]] = field(default_factory=dict)
    workers: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    runs: int = 0

    @classmethod
    def load(cls, path: Path, identity: dict[str, Any]) -> BuildLog:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return cls(identity)
        if data.get("identity") != identity:
            raise ConfigError(f"{path.parent} holds a release built with other options "
                              f"(scale {data.get('identity', {}).get('scale')}, seed "
                              f"{data.get('identity', {}).get('seed')}, ...); choose another --out")
        return cls(identity, data.get("stages", {}), data.get("workers", {}), data.get("runs", 0))

    def timed(self, stage: str, seconds: float) -> None:
        entry = self.stages.setdefault(stage, {"seconds": 0.0, "total_seconds": 0.0})
        entry["seconds"] = round(seconds, 2)
        entry["total_seconds"] = round(entry.get("total_seconds", 0.0) + seconds, 2)

    def memory(self, worker: str, stage: str, peak_mb: float) -> None:
        """Record a worker's peak RSS after one more unit: the peak after its first unit
        beside the peak after its last shows whether memory stays flat over the build."""
        entry = self.workers.setdefault(worker, {}).setdefault(stage, {"units": 0, "first_mb": peak_mb})
        entry["units"] += 1
        entry["peak_mb"] = max(entry.get("peak_mb", 0.0), peak_mb)

    def peak_mb(self, worker: str) -> float:
        return max(entry["peak_mb"] for entry in self.workers[worker].values())

    def write(self, path: Path) -> None:
        write_json_atomic(path, {"identity": self.identity, "runs": self.runs, "stages": self.stages,
                                 "workers": self.workers})

    @classmethod
    def start(cls, out: Path, identity: dict[str, Any]) -> BuildLog:
        """The log of the build in ``out`` (refused when made with other options), counting this run."""
        build = cls.load(out / BUILD_FILE, identity)
        build.runs += 1
        build.write(out / BUILD_FILE)
        return build

    def stage(self, out: Path, name: str, work: Callable[[], Any]) -> Any:
        """Run stage ``name`` of the build in ``out``, timing it into the log."""
        started = time.perf_counter()
        result = work()
        self.timed(name, time.perf_counter() - started)
        self.write(out / BUILD_FILE)
        log.info("stage %s: %.1f s", name, self.stages[name]["seconds"])
        return result


@dataclass(frozen=True)
class ReleaseSummary:
    """The result of a build: the build log, the dataset manifest and the card's path."""

    log: BuildLog
    manifest: dict[str, Any]
    card: Path
    skipped_scenes: dict[str, str]


def build_release(config: ReleaseConfig, *, progress: Progress | None = None) -> ReleaseSummary:
    """Build (or finish building) the release ``config`` describes.

    Raises:
        ConfigError: bad options, or ``out`` holds a release made with other options.
        OutputError: ``out`` cannot be written, or another run is writing it.
        WorkerError: a local worker process died (re-run to resume).
        DependencyNotInstalled: ``--executor ray`` without Ray.
    """
    from vlnverse.release.card import write_card, write_checksums, write_stats

    tick = progress or (lambda stage, done, total: None)
    out = prepare_output_dir(config.out)
    datagen = config.datagen()
    with OutputLock(out):
        build = BuildLog.start(out, config.identity())
        build.stage(out, "scenes", lambda: _scenes(config, build, tick))
        summary = build.stage(out, "episodes", lambda: _episodes(config, datagen, build, tick))
        build.stage(out, "report", lambda: write_stats(out, datagen, tick))
        build.memory("main", "report", round(peak_rss_mb(), 1))
        card = build.stage(out, "card", lambda: write_card(out, config, summary.manifest, tick))
        write_checksums(out, exclude=(BUILD_FILE,))
        build.write(out / BUILD_FILE)
    return ReleaseSummary(build, summary.manifest, card, summary.manifest.get("skipped_scenes", {}))


def _scenes(config: ReleaseConfig, build: BuildLog, tick: Progress) -> None:
    total, done = config.scene_count, 0

    def on_scene(meta: dict, skipped: bool) -> None:
        nonlocal done
        done += 1
        if "worker" in meta:
            build.memory(meta["worker"], "scenes", meta["peak_rss_mb"])
        tick("scenes", done, total)

    tick("scenes", 0, total)
    generate_corpus(Path(config.out) / "scenes", config.corpus(), workers=config.workers, on_scene=on_scene,
                    executor=config.executor, ray_address=config.ray_address)


def _episodes(config: ReleaseConfig, datagen: DatagenConfig, build: BuildLog, tick: Progress):
    state = {"done": 0, "total": config.scene_count}

    def on_start(todo: int, done: int) -> None:
        state["done"] = done
        tick("episodes", done, state["total"])

    def on_scene(outcome) -> None:
        state["done"] += 1
        if outcome.worker:
            build.memory(outcome.worker, "episodes", outcome.peak_rss_mb)
        tick("episodes", state["done"], state["total"])

    return run_datagen(datagen, progress=on_scene, on_start=on_start, executor=config.executor,
                       ray_address=config.ray_address)
