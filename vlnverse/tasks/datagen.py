"""Headless, resumable, parallel dataset generation (``vlnverse datagen``).

One scene is one unit of work. A worker loads the scene, generates its episodes
(:mod:`vlnverse.tasks.generate`) and writes, atomically and in this order, the shard
``shards/<scene_id>.jsonl.gz`` and its record ``shards/<scene_id>.json`` (counts, checksum,
the config hash). A re-run skips every scene whose record matches its shard and the
config, so a run killed at any moment and re-run ends with exactly the files of an
uninterrupted run. Scenes that cannot be loaded are skipped and reported. The manifest
(and the report) are written last, from the records.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlnverse import __version__
from vlnverse.config import config_from_mapping, config_to_dict, load_config_file
from vlnverse.errors import ConfigError, DatasetError, VLNVerseError
from vlnverse.fileio import (
    OutputLock,
    prepare_output_dir,
    remove_stale_temp_files,
    write_json_atomic,
)
from vlnverse.llm import UsageTotals, make_llm
from vlnverse.parallel import check_executor, run_units
from vlnverse.redact import redact
from vlnverse.tasks.corpus import SceneEntry, discover_scenes
from vlnverse.tasks.generate import GenerationConfig, generate_scene_episodes
from vlnverse.tasks.storage import (
    SHARD_DIR,
    build_manifest,
    count_episodes,
    sha256_file,
    write_episodes,
    write_manifest,
)

log = logging.getLogger(__name__)

RUN_FILE = "datagen.json"
SCENES_PER_RENDERING_PROCESS = 12
"""Scenes per rendering worker before fresh processes replace the workers: the simulator's
native libraries keep ~10-20 MB after each scene's renderer is closed, which would add up
over a paper-scale build."""


@dataclass(frozen=True)
class DatagenConfig:
    """A dataset generation run (the YAML files in ``datagen/`` hold these fields).

    Attributes:
        scenes: Corpus directory.
        out: Dataset directory.
        seed: Dataset seed.
        llm: ``none`` | ``openai:MODEL`` | ``hf:PATH`` | ``replay:FILE`` (see :func:`vlnverse.llm.make_llm`);
            any LLM needs ``generation.render`` (the Describer reads rendered images), else
            the config is refused rather than silently running without the Describer.
        llm_cache: Response cache folder (default ``<out>/llm_cache``; ``none`` disables).
        workers: Scene-parallel worker processes.
        generation: What to generate per scene.
    """

    scenes: str
    out: str
    seed: int = 0
    llm: str = "none"
    llm_cache: str | None = None
    workers: int = 1
    generation: GenerationConfig = field(default_factory=GenerationConfig)

    def __post_init__(self) -> None:
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or self.seed < 0:
            raise ConfigError(f"seed must be a non-negative integer, got {self.seed!r}")
        if not isinstance(self.workers, int) or self.workers < 1:
            raise ConfigError(f"workers must be a positive integer, got {self.workers!r}")
        if not isinstance(self.llm, str):
            raise ConfigError(f"llm must be a spec string, got {self.llm!r}")

    @classmethod
    def from_file(cls, path: str | Path, **overrides: Any) -> DatagenConfig:
        """Load a YAML/JSON pipeline config; relative paths are relative to the file's folder
        as named (a link to a config elsewhere, such as ``datagen/paper_splits.yaml``, is
        read there, beside the link)."""
        base = load_config_file(cls, path)
        folder = Path(path).absolute().parent
        changes = {name: str((folder / getattr(base, name)).resolve()) for name in ("scenes", "out")
                   if not Path(getattr(base, name)).is_absolute()}
        changes.update({k: v for k, v in overrides.items() if v is not None})
        return dataclasses.replace(base, **changes)

    def fingerprint(self) -> dict[str, Any]:
        """What decides the dataset's bytes (not where it is, nor how many workers make it)."""
        data = config_to_dict(self.generation)
        if not data["families"]:
            del data["families"]  # the hash of a config without them is what it was before they existed
        return {"seed": self.seed, "llm": redact(self.llm), "generation": data, "vlnverse": __version__}

    @property
    def config_hash(self) -> str:
        text = json.dumps(self.fingerprint(), sort_keys=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def generation_from_mapping(data: dict[str, Any]) -> GenerationConfig:
    return config_from_mapping(GenerationConfig, data, where="generation")


@dataclass
class SceneOutcome:
    """What happened to one scene in this run.

    Attributes:
        scene_id, split: The scene.
        status: ``generated``, ``resumed`` (already done) or ``skipped`` (cannot be loaded).
        record: The shard record (None when skipped).
        error: Why the scene was skipped.
        usage: LLM usage of this scene in this run.
        seconds: Wall time of this scene in this run.
        worker: The process that ran it (``pid@host``; empty when resumed or skipped early).
        peak_rss_mb: That process's peak resident memory after the scene (MiB).
    """

    scene_id: str
    split: str
    status: str
    record: dict[str, Any] | None = None
    error: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    worker: str = ""
    peak_rss_mb: float = 0.0

    @property
    def episodes(self) -> int:
        if not self.record:
            return 0
        return sum(n for tasks in self.record["counts"].values() for n in tasks.values())


@dataclass
class DatagenSummary:
    """The result of a run: the manifest and every scene's outcome."""

    manifest: dict[str, Any]
    outcomes: list[SceneOutcome]
    usage: UsageTotals
    seconds: float

    @property
    def skipped(self) -> list[SceneOutcome]:
        return [o for o in self.outcomes if o.status == "skipped"]


def _record_path(out: Path, scene_id: str) -> Path:
    return out / SHARD_DIR / f"{scene_id}.json"


def _shard_rel(scene_id: str) -> str:
    return f"{SHARD_DIR}/{scene_id}.jsonl.gz"


def completed_record(out: Path, scene_id: str, config_hash: str) -> dict[str, Any] | None:
    """The record of a scene finished by an earlier run with the same config, or None."""
    path = _record_path(out, scene_id)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    shard = out / record.get("file", "")
    if record.get("config_hash") != config_hash or not shard.is_file() or sha256_file(shard) != record.get("sha256"):
        return None
    if any(not (out / image).is_file() for image in record.get("images", [])):
        return None
    return record


_LLM_CACHE: dict[tuple, Any] = {}


def _worker_llm(spec: str, cache_dir: str | None):
    """One client per process and spec (reused across the scenes a worker runs)."""
    key = (spec, cache_dir)
    if key not in _LLM_CACHE:
        _LLM_CACHE[key] = make_llm(spec, cache_dir=cache_dir)
    return _LLM_CACHE[key]


def run_scene(entry: SceneEntry, config: DatagenConfig) -> SceneOutcome:
    """Generate one scene and write its shard and record (the worker function)."""
    from vlnverse.scene.inspect import prepare_scene
    from vlnverse.tasks.context import SceneContext

    started = time.perf_counter()
    out = Path(config.out)
    gen = config.generation
    try:
        prepared = prepare_scene(entry.path, gen.agent_radius, gen.agent_height, gen.resolution)
        context = SceneContext(prepared, viewpoint_distance=gen.sampling.viewpoint_distance)
    except VLNVerseError as exc:
        return SceneOutcome(entry.scene_id, entry.split, "skipped", error=str(exc))
    except Exception as exc:  # noqa: BLE001 - a corrupt USD file raises pxr's own errors
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return SceneOutcome(entry.scene_id, entry.split, "skipped", error=f"cannot load {entry.rel_path}: {first}")
    llm = _worker_llm(config.llm, _cache_dir(config))
    before = llm.totals.to_dict() if llm is not None else None
    result = generate_scene_episodes(context, scene_split=entry.split, scene_rel_path=entry.rel_path,
                                     config=gen, seed=config.seed, out_dir=out, llm=llm)
    rel = _shard_rel(entry.scene_id)
    digest = write_episodes(out / rel, result.episodes)
    record = {"scene_id": entry.scene_id, "split": entry.split, "file": rel, "sha256": digest,
              "counts": count_episodes(result.episodes), "images": result.images, "fallbacks": result.fallbacks,
              "shortfall": result.shortfall, "config_hash": config.config_hash}
    write_json_atomic(_record_path(out, entry.scene_id), record)
    return SceneOutcome(entry.scene_id, entry.split, "generated", record=record,
                        usage=_usage_delta(before, llm.totals.to_dict()) if llm is not None else {},
                        seconds=time.perf_counter() - started)


def _cache_dir(config: DatagenConfig) -> str | None:
    if config.llm.strip().lower() == "none" or config.llm.startswith("replay:"):
        return None
    if config.llm_cache is None:
        return str(Path(config.out) / "llm_cache")
    return None if config.llm_cache.lower() == "none" else config.llm_cache


def _usage_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The usage between two :meth:`UsageTotals.to_dict` snapshots (cost None if unknown)."""
    delta = {k: after[k] - before[k] for k in ("calls", "cached_calls", "prompt_tokens", "completion_tokens")}
    cost_a, cost_b = before["cost_usd"], after["cost_usd"]
    delta["cost_usd"] = None if cost_a is None or cost_b is None else cost_b - cost_a
    return delta


def _start_run(config: DatagenConfig, overwrite: bool) -> None:
    out = Path(config.out)
    run_file = out / RUN_FILE
    state = {"config_hash": config.config_hash, "fingerprint": config.fingerprint()}
    if run_file.is_file():
        try:
            previous = json.loads(run_file.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            previous = {}
        finished = any((out / SHARD_DIR).glob("*.json"))  # a run that never finished a scene blocks nothing
        if previous.get("config_hash") != config.config_hash and finished and not overwrite:
            raise DatasetError(f"{out} holds a dataset generated with a different configuration "
                               f"(hash {previous.get('config_hash')} vs {config.config_hash}); "
                               "use another --out or pass --overwrite")
    write_json_atomic(run_file, state)
    remove_stale_temp_files(out)


def run_datagen(config: DatagenConfig, *, overwrite: bool = False,
                progress: Callable[[SceneOutcome], None] | None = None,
                on_start: Callable[[int, int], None] | None = None, executor: str = "local",
                ray_address: str | None = None) -> DatagenSummary:
    """Generate (or finish generating) the dataset ``config`` describes.

    Args:
        config: The run.
        overwrite: Allow replacing a dataset made with another configuration.
        progress: Called with each scene's outcome as it completes.
        on_start: Called with (scenes to generate, scenes already done) before work starts.
        executor: ``local`` (``config.workers`` processes) or ``ray`` (as many Ray tasks at
            once); the bytes do not depend on it.
        ray_address: Ray cluster address (``None``: a local Ray instance).

    Raises:
        DatasetError: no scenes, or ``out`` holds another configuration's dataset.
        ConfigError: invalid LLM spec or settings (a missing API key included).
        OutputError: ``out`` cannot be written, or another run is writing it.
        WorkerError: a local worker process died (the scenes it was generating are named).
        DependencyNotInstalled: ``ray`` asked for but not installed.
    """
    started = time.perf_counter()
    check_executor(executor, config.workers)
    entries = discover_scenes(config.scenes)
    _check_spec(config.llm)
    _check_counts(config.generation)
    if config.llm.strip().lower() != "none" and not config.generation.render:
        raise ConfigError("an LLM pipeline needs rendered images: its Describer reads the target view and "
                          "the path frames; add --render (generation.render: true), or use --llm none")
    _worker_llm(config.llm, _cache_dir(config))  # a missing key or model fails before anything is written
    out = prepare_output_dir(config.out)
    with OutputLock(out):
        return _run(config, entries, overwrite, progress, on_start, started, executor, ray_address)


def _run(config: DatagenConfig, entries: list[SceneEntry], overwrite: bool,
         progress: Callable[[SceneOutcome], None] | None, on_start: Callable[[int, int], None] | None,
         started: float, executor: str, ray_address: str | None) -> DatagenSummary:
    """The part of :func:`run_datagen` that writes, under the output folder's lock."""
    out = Path(config.out)
    _start_run(config, overwrite)
    outcomes: dict[str, SceneOutcome] = {}
    todo = []
    for entry in entries:
        record = completed_record(out, entry.scene_id, config.config_hash)
        if record is not None:
            outcomes[entry.scene_id] = SceneOutcome(entry.scene_id, entry.split, "resumed", record=record)
        else:
            todo.append(entry)
    if on_start:
        on_start(len(todo), len(outcomes))
    for outcome in _execute(todo, config, executor, ray_address):
        outcomes[outcome.scene_id] = outcome
        if outcome.status == "skipped":
            log.warning("skipped scene %s: %s", outcome.scene_id, outcome.error)
        if progress:
            progress(outcome)
    ordered = [outcomes[e.scene_id] for e in entries]
    totals = UsageTotals()
    for o in ordered:
        if o.usage:
            totals.merge(o.usage)
    manifest = _write_manifest(config, ordered, entries)
    return DatagenSummary(manifest, ordered, totals, time.perf_counter() - started)


def _check_counts(generation: GenerationConfig) -> None:
    """Refuse settings under which no requested task gets a trajectory; warn about a task
    that gets none (``per_scene x ratio`` rounds to 0) while others do."""
    counts = generation.counts()
    ratios = {"fine": generation.fine_ratio, "long_horizon": generation.long_horizon_ratio}
    empty = [f"no {kind} trajectories (per_scene x {kind}_ratio {ratios[kind]:g} rounds to 0)"
             for kind in ratios if kind in generation.tasks and counts[kind] == 0]
    if empty and not any(counts.values()):
        raise ConfigError(f"--per-scene {generation.per_scene} gives {'; '.join(empty)}; raise --per-scene")
    for reason in empty:
        log.warning("--per-scene %d gives %s: the dataset will lack that task", generation.per_scene, reason)


def _check_spec(spec: str) -> None:
    from vlnverse.llm import parse_spec
    from vlnverse.llm.factory import LLM_BACKENDS

    parsed = parse_spec(spec)
    if parsed is not None and parsed[0] not in LLM_BACKENDS.names():
        raise ConfigError(f"invalid LLM spec {spec!r}: unknown backend {parsed[0]!r}; "
                          f"valid: none, {', '.join(LLM_BACKENDS.names())}")


def _execute(todo: list[SceneEntry], config: DatagenConfig, executor: str, ray_address: str | None):
    """Run scenes on the executor, yielding outcomes (with who ran them) as they finish."""
    recycle = SCENES_PER_RENDERING_PROCESS if config.generation.render else None
    for unit in run_units(functools.partial(run_scene, config=config), todo, workers=config.workers,
                          executor=executor, ray_address=ray_address, describe=lambda e: f"scene {e.scene_id}",
                          units_per_process=recycle):
        yield dataclasses.replace(unit.value, worker=unit.worker, peak_rss_mb=unit.peak_rss_mb)


def _write_manifest(config: DatagenConfig, outcomes: list[SceneOutcome], entries: list[SceneEntry]) -> dict[str, Any]:
    out = Path(config.out)
    shards = {o.scene_id: o.record for o in outcomes if o.record}
    extra = {
        "generator": "vlnverse datagen",
        "config_hash": config.config_hash,
        "generation": config.fingerprint(),
        "scene_splits": {e.scene_id: e.split for e in entries},
        "scenes_dir": os.path.relpath(os.path.abspath(config.scenes), os.path.abspath(out)),  # moves with both
        "skipped_scenes": {o.scene_id: o.error for o in outcomes if o.status == "skipped"},
        "shortfall": {o.scene_id: o.record["shortfall"] for o in outcomes if o.record and o.record.get("shortfall")},
        "fallbacks": sum(o.record.get("fallbacks", 0) for o in outcomes if o.record),
        "start_distance": config.generation.sampling.manifest_entry(),
    }
    manifest = build_manifest(out, shards, extra=extra)
    write_manifest(out, manifest)
    return manifest
