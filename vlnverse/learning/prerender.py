"""Pre-rendering (paper §5.2): observations along the oracle's actions of a dataset split.

Each episode of the split is played in the simulator by the oracle (``info["oracle_action"]``,
the shortest-path follower of VLN-CE's teacher) until it stops; every step's observation
(RGB, depth, optionally semantics), the oracle action taken from it and the agent pose are
kept. One scene is one unit of work, as in datagen: a worker renders a scene's episodes and
writes, in order, the frame chunks ``<split>/<scene>/<sensor>-<k>.npy|npz`` and then the
scene record ``<split>/<scene>/frames.json``. A re-run skips scenes whose record matches the
config, so a killed run re-run ends with the files of an uninterrupted one.

With the oracle walking under teleporting physics (``tel_hop``), a planner
process walks the scene's episodes ahead without cameras and this process only renders
the camera rig at the walk's poses; DAgger walks, ``slide`` and ``strict`` (where the agent
may push objects) render as the env walks. A writer thread stacks, compresses and writes whole
chunks, converting depth readings to the stored dtype as it stacks them, and hands each chunk
to zlib and to the file in one call (which releases the GIL for all of it: a writer that wrote
frame by frame waited for the GIL between frames while the renderer held it, and fell about a
second behind). While a scene renders, the interpreter switches threads every millisecond
rather than every 5 ms, so the writer gets the GIL back soon after each such call and ends the
scene with the renderer rather than half a second or more behind it.

Chunks hold ``chunk_frames`` consecutive frames of the scene: zlib-compressed ``.npz``
files by default (about a quarter of the bytes, decompressed when read), or with
``compress=False`` raw ``.npy`` files that :mod:`vlnverse.learning.frames` memory-maps, so a
training batch is a slice of the page cache. The container does not decide the frames: a
scene stored in either format is kept by a re-run of either.
"""

from __future__ import annotations

import concurrent.futures as futures
import functools
import hashlib
import io
import json
import logging
import multiprocessing
import time
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from vlnverse import __version__
from vlnverse.config import config_to_dict
from vlnverse.errors import ConfigError, DatasetError
from vlnverse.fileio import atomic_open, write_bytes_atomic, write_json_atomic
from vlnverse.parallel import pooled
from vlnverse.sim.gl.context import start_method, worker_setup
from vlnverse.sim.physics import PhysicsConfig
from vlnverse.sim.types import Pose

log = logging.getLogger(__name__)

RECORD = "frames.json"
INDEX = "prerender.json"
DEPTH_DTYPES = ("float16", "float32")


@dataclass(frozen=True)
class PrerenderConfig:
    """What to render and how to store it.

    Attributes:
        dataset: Dataset folder.
        out: Frame store folder (one sub-folder per split).
        split: Dataset split to render.
        task: Task to render (``None``: every task of the split).
        rgb_size: RGB resolution (square, pixels; paper C.2.1: 224).
        depth_size: Depth resolution (square, pixels; paper: 256), normalized to [0, 1] over 0-10 m.
        semantic: Also store instance-segmentation frames (at the RGB resolution).
        physics: Physics mode the oracle walks under: ``tel_hop`` (the default) places the camera
            exactly at each reference action's end, as the paper captures offline frames along the
            trajectory (C.2.1), and skips the physics step (the main cost besides rendering);
            ``slide`` is VLN-CE's sliding agent.
        max_steps: Step cap per episode (paper: 200).
        chunk_frames: Frames per chunk file.
        compress: zlib-compressed ``.npz`` chunks (the default: about a quarter of the bytes;
            training decompresses each chunk once per process while it fits the reader's cache),
            else memory-mappable ``.npy`` (nothing to decompress; about four times the bytes).
        compress_level: zlib level 1-9 (1: ~3.5x faster than numpy's default 6 on RGB
            chunks, ~30 % larger files).
        depth_dtype: ``float16`` (half the bytes) or ``float32`` (the env's values exactly).
        workers: Scene-parallel worker processes.
        backend: Simulator backend.
        renderer: Camera renderer of the embedded backend (``auto``, ``gl``, ``tiny``); part of
            the fingerprint, since renderers draw different pixels.
        policy: A Seq2Seq/CMA checkpoint whose actions are mixed with the oracle's (DAgger):
            at each step the oracle's action is executed with probability ``beta`` and the
            policy's otherwise; the stored label is always the oracle's. ``None``: the oracle walks.
        beta: DAgger's probability of executing the oracle's action.
        seed: Seeds the DAgger mixture (per episode, so any worker draws the same).
    """

    dataset: str
    out: str
    split: str = "train"
    task: str | None = None
    rgb_size: int = 224
    depth_size: int = 256
    semantic: bool = False
    physics: str = "tel_hop"
    max_steps: int = 200
    chunk_frames: int = 256
    compress: bool = True
    compress_level: int = 1
    depth_dtype: str = "float16"
    workers: int = 1
    backend: str = "bullet"
    renderer: str = "auto"
    policy: str | None = None
    beta: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.beta <= 1.0:
            raise ConfigError(f"prerender beta must be in [0, 1], got {self.beta!r}")
        for name in ("rgb_size", "depth_size", "max_steps", "chunk_frames", "workers"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"prerender {name} must be a positive integer, got {value!r}")
        if self.compress_level not in range(1, 10):
            raise ConfigError(f"prerender compress_level must be an integer in 1..9, got {self.compress_level!r}")
        if self.depth_dtype not in DEPTH_DTYPES:
            raise ConfigError(f"prerender depth_dtype must be one of {', '.join(DEPTH_DTYPES)}, got {self.depth_dtype!r}")
        from vlnverse.sim.physics import physics_mode

        object.__setattr__(self, "physics", physics_mode(self.physics))

    def sensors(self) -> dict[str, dict[str, Any]]:
        """The sensor rig the frames are rendered with (also what a learned agent observes)."""
        rig: dict[str, dict[str, Any]] = {
            "rgb": {"kind": "rgb", "width": self.rgb_size, "height": self.rgb_size},
            "depth": {"kind": "depth", "width": self.depth_size, "height": self.depth_size, "normalize": True},
        }
        if self.semantic:
            rig["semantic"] = {"kind": "semantic", "width": self.rgb_size, "height": self.rgb_size}
        return rig

    def fingerprint(self) -> dict[str, Any]:
        """What decides the frames (not where they go, nor how many workers render them)."""
        data = config_to_dict(self)
        for name in ("out", "workers", "dataset", "compress_level"):
            data.pop(name)
        data["dataset_id"] = _dataset_id(self.dataset)
        data["vlnverse"] = __version__
        physics = PhysicsConfig(mode=self.physics)
        if not physics.teleports:  # the physics rate moves the frames of a walk with contacts
            data["physics_hz"] = physics.physics_hz
        return data

    @property
    def config_hash(self) -> str:
        return hashlib.sha256(json.dumps(self.fingerprint(), sort_keys=True).encode()).hexdigest()[:16]

    @property
    def same_frames(self) -> set[str]:
        """The hashes of this config stored in either chunk format (the same frames)."""
        return {self.config_hash, replace(self, compress=not self.compress).config_hash}


def _dataset_id(path: str) -> str:
    """The dataset's identity: its manifest checksum (so a regenerated dataset re-renders)."""
    manifest = Path(path) / "manifest.json"
    if not manifest.is_file():
        raise DatasetError(f"{path} is not a dataset folder (no manifest.json)")
    return hashlib.sha256(manifest.read_bytes()).hexdigest()[:16]


@dataclass
class SceneFrames:
    """A rendered scene's outcome.

    Attributes:
        scene_id: The scene.
        status: ``rendered`` or ``resumed``.
        record: The scene record (``frames.json``).
        seconds: Wall time in this run.
    """

    scene_id: str
    status: str
    record: dict[str, Any]
    seconds: float = 0.0

    @property
    def frames(self) -> int:
        return int(self.record["frames"])


@dataclass
class PrerenderSummary:
    """A pre-render run: per-scene outcomes, frames, bytes and throughput."""

    out: Path
    scenes: list[SceneFrames] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def frames(self) -> int:
        return sum(s.frames for s in self.scenes)

    @property
    def rendered_frames(self) -> int:
        return sum(s.frames for s in self.scenes if s.status == "rendered")

    @property
    def bytes(self) -> int:
        return sum(int(s.record["bytes"]) for s in self.scenes)

    @property
    def frames_per_second(self) -> float:
        return self.rendered_frames / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"out": str(self.out), "scenes": len(self.scenes), "episodes": sum(len(s.record["episodes"]) for s in self.scenes),
                "frames": self.frames, "rendered_frames": self.rendered_frames, "bytes": self.bytes,
                "seconds": round(self.seconds, 3), "frames_per_second": round(self.frames_per_second, 2),
                "resumed_scenes": sum(s.status == "resumed" for s in self.scenes)}


def scene_dir(out: str | Path, split: str, scene_id: str) -> Path:
    return Path(out) / split / scene_id


def chunk_name(sensor: str, index: int, compress: bool) -> str:
    return f"{sensor}-{index:05d}.{'npz' if compress else 'npy'}"


def completed(folder: Path, hashes: set[str]) -> dict[str, Any] | None:
    """The record of a scene finished with one of ``hashes`` whose chunks all exist, or None."""
    try:
        record = json.loads((folder / RECORD).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    if record.get("config_hash") not in hashes or any(not (folder / f).is_file() for f in record["files"]):
        return None
    return record


def walk(env: Any, episode: Any, max_steps: int, mixture: Any = None) -> Iterator[tuple[dict[str, Any], int]]:
    """``(observation, oracle action)`` pairs along ``episode`` in ``env``: the oracle walks,
    or ``mixture(observation, oracle_action) -> action`` chooses what is executed (DAgger).
    The walk ends when the executed action ends the episode (STOP) or after ``max_steps``."""
    obs, info = env.reset(options={"episode": episode})
    if mixture is not None:
        mixture.reset(episode.episode_id)
    for _ in range(max_steps):
        label = int(info["oracle_action"])
        yield obs, label
        action = label if mixture is None else mixture(obs, label)
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return


class DaggerMixture:
    """Executes the oracle's action with probability ``beta``, else the policy's; the policy
    always sees (and conditions on) the executed action."""

    def __init__(self, config: PrerenderConfig) -> None:
        from vlnverse.learning.agent import LearnedAgent, LearnedAgentConfig

        self.agent = LearnedAgent(LearnedAgentConfig(checkpoint=config.policy))
        self.beta, self.seed = config.beta, config.seed

    def reset(self, episode_id: str) -> None:
        self.agent.reset(None)
        self.rng = np.random.default_rng([self.seed, zlib.crc32(episode_id.encode())])

    def __call__(self, observation: dict[str, Any], label: int) -> int:
        predicted = self.agent.act(observation)
        action = label if self.rng.random() < self.beta else predicted
        self.agent.set_previous_action(action)
        return action


class _ChunkWriter:
    """Buffers frames of one sensor and hands them ``chunk_frames`` at a time to ``pool``,
    which stacks, compresses and writes the chunk while the caller renders on. The chunk
    goes to zlib and to the file in one call each, which release the GIL for the whole chunk:
    frame by frame, the writer thread would wait for the GIL between frames while the
    renderer holds it, and fall behind."""

    def __init__(self, folder: Path, sensor: str, config: PrerenderConfig, pool: futures.Executor) -> None:
        self.folder, self.sensor, self.config, self.pool = folder, sensor, config, pool
        self.buffer: list[np.ndarray] = []
        self.files: list[str] = []
        self.pending: list[futures.Future] = []

    def add(self, frame: np.ndarray) -> None:
        self.buffer.append(frame)
        if len(self.buffer) == self.config.chunk_frames:
            self.flush()

    def flush(self) -> None:
        if not self.buffer:
            return
        name = chunk_name(self.sensor, len(self.files), self.config.compress)
        self.pending.append(self.pool.submit(_write_chunk, self.folder / name, self.sensor, self.buffer, self.config))
        self.files.append(name)
        self.buffer = []

    def finish(self) -> int:
        """Flush, wait for every chunk; returns the bytes written."""
        self.flush()
        return sum(f.result() for f in self.pending)


def _write_chunk(path: Path, sensor: str, readings: list[np.ndarray], config: PrerenderConfig) -> int:
    """Write one chunk of ``sensor``'s readings (depth as ``config.depth_dtype``) straight into
    its (atomically renamed) file; returns its bytes."""
    frames = np.stack(readings, dtype=np.dtype(config.depth_dtype) if sensor == "depth" else None)
    with atomic_open(path, "wb") as handle:
        if config.compress:
            with zipfile.ZipFile(handle, "w", zipfile.ZIP_DEFLATED, compresslevel=config.compress_level) as archive:
                with archive.open("frames.npy", "w", force_zip64=True) as member:
                    _write_array(member, frames)
        else:
            _write_array(handle, frames)
        return handle.tell()


def _write_array(out: Any, frames: np.ndarray) -> None:
    """``np.save``'s bytes of the C-contiguous ``frames``, the data in one write."""
    np.lib.format.write_array_header_1_0(out, np.lib.format.header_data_from_array_1_0(frames))
    out.write(memoryview(frames).cast("B"))


def _walk_env(scene_file: str, config: PrerenderConfig, sensors: dict[str, Any]) -> Any:
    from vlnverse.envs.nav_env import NavEnv

    return NavEnv(scene_file, backend=config.backend, renderer=config.renderer if sensors else "tiny",
                  physics=config.physics, sensors=sensors, max_episode_steps=config.max_steps)


def _walked(env: Any, episode: Any, config: PrerenderConfig,
            mixture: Any = None) -> tuple[list[dict[str, Any]], list[int], list[np.ndarray]]:
    """Observations, oracle actions and poses of ``episode`` walked in ``env``."""
    observations, actions, poses = [], [], []
    for obs, action in walk(env, episode, config.max_steps, mixture):
        observations.append(obs)
        actions.append(action)
        poses.append(np.asarray(env.unwrapped.sim.pose.as_array(), dtype=np.float64))
    return observations, actions, poses


_PLANNER: dict[str, Any] = {}


def _start_planner(scene_file: str, config: PrerenderConfig) -> None:
    """Planner process: the scene's env without cameras (its walk renders nothing)."""
    _PLANNER.update(env=_walk_env(scene_file, config, {}), config=config)


def _plan(episode: Any) -> tuple[list[int], list[np.ndarray]]:
    return _walked(_PLANNER["env"], episode, _PLANNER["config"])[1:]


def _inline_steps(scene_file: str, episodes: list[Any], config: PrerenderConfig) -> Iterator[tuple]:
    """The env renders each step as it walks (DAgger's policy sees the frames; under
    ``slide`` the agent may push objects, so frames are taken as the walk sees them)."""
    env = _walk_env(scene_file, config, config.sensors())
    mixture = DaggerMixture(config) if config.policy else None
    try:
        for episode in episodes:
            yield (episode, *_walked(env, episode, config, mixture))
    finally:
        env.close()


def _planned_steps(scene_file: str, episodes: list[Any], config: PrerenderConfig) -> Iterator[tuple]:
    """Teleporting physics, oracle walk: a planner process walks the episodes ahead
    without cameras while this process only renders the camera rig at the walk's poses
    (the scene as loaded: a teleporting agent moves no object)."""
    context = multiprocessing.get_context(start_method())
    with futures.ProcessPoolExecutor(1, mp_context=context, initializer=_start_planner,
                                     initargs=(scene_file, config)) as planner:
        plans = planner.map(_plan, episodes)  # the planner starts walking while the renderer loads
        env = _walk_env(scene_file, config, config.sensors())
        camera = _RigCamera(env.unwrapped.sim)
        try:
            for episode, (actions, poses) in zip(episodes, plans, strict=True):
                yield episode, [camera(pose) for pose in poses], actions, poses
        finally:
            env.close()


class _RigCamera:
    """What ``Simulator.observe`` returns with the agent at a pose (``render_cameras``). The
    bullet agent has no visual shape, so no camera sees it and it stays put (teleporting it
    also wakes the movables it could reach, whose poses every later render then re-reads);
    other backends teleport it first."""

    def __init__(self, sim: Any) -> None:
        self.sim, self.teleport = sim, sim.backend_name != "bullet"

    def __call__(self, pose: np.ndarray) -> dict[str, np.ndarray]:
        at = Pose(*pose.tolist())
        if self.teleport:
            self.sim.backend.set_agent_pose(at)
        return self.sim.render_cameras(at)


def render_scene(scene_id: str, scene_file: str, episodes: list[Any], config: PrerenderConfig) -> SceneFrames:
    """Render one scene's episodes and write its chunks and record (the worker function)."""
    from vlnverse.sim.physics import PhysicsConfig

    started = time.perf_counter()
    folder = scene_dir(config.out, config.split, scene_id)
    folder.mkdir(parents=True, exist_ok=True)
    planned = config.policy is None and PhysicsConfig(mode=config.physics).teleports
    actions: list[int] = []
    poses: list[np.ndarray] = []
    records = []
    with futures.ThreadPoolExecutor(1) as pool:
        writers = {name: _ChunkWriter(folder, name, config, pool) for name in config.sensors()}
        for episode, observations, taken, visited in (_planned_steps if planned else _inline_steps)(
                scene_file, episodes, config):
            for obs in observations:
                for name, writer in writers.items():
                    writer.add(obs[name])
            records.append({"episode_id": episode.episode_id, "task": episode.task,
                            "instruction": episode.instruction.text, "start": len(actions), "length": len(taken),
                            "stopped": bool(taken and taken[-1] == 0)})
            actions += taken
            poses += visited
        chunk_bytes = sum(writer.finish() for writer in writers.values())
    arrays = io.BytesIO()
    np.savez(arrays, actions=np.asarray(actions, dtype=np.int64), poses=np.asarray(poses, dtype=np.float64).reshape(-1, 4))
    write_bytes_atomic(folder / "steps.npz", arrays.getvalue())
    files = [f for w in writers.values() for f in w.files] + ["steps.npz"]
    record = {"scene_id": scene_id, "scene_file": scene_file, "config_hash": config.config_hash,
              "frames": len(actions), "chunk_frames": config.chunk_frames, "compress": config.compress,
              "sensors": {name: len(w.files) for name, w in writers.items()}, "files": files,
              "bytes": chunk_bytes + arrays.tell(), "episodes": records}
    write_json_atomic(folder / RECORD, record)
    return SceneFrames(scene_id, "rendered", record, time.perf_counter() - started)


def _scene_jobs(config: PrerenderConfig) -> list[tuple[str, str, list[Any]]]:
    from vlnverse.tasks.dataset import EpisodeDataset

    dataset = EpisodeDataset.open(config.dataset)
    by_scene: dict[str, tuple[str, list[Any]]] = {}
    for episode in dataset.episodes(config.split, config.task):
        scene_file, chosen = by_scene.setdefault(episode.scene_id, (str(dataset.scene_file(episode)), []))
        chosen.append(episode)
    return [(scene_id, scene_file, episodes) for scene_id, (scene_file, episodes) in sorted(by_scene.items())]


def _run_job(job: tuple[str, str, list[Any]], config: PrerenderConfig) -> SceneFrames:
    return render_scene(*job, config)


def _execute(jobs: list[tuple[str, str, list[Any]]], config: PrerenderConfig) -> Iterator[SceneFrames]:
    if config.workers == 1 or len(jobs) <= 1:
        for job in jobs:
            yield _run_job(job, config)
        return
    yield from pooled(functools.partial(_run_job, config=config), jobs, workers=config.workers,
                      context=multiprocessing.get_context(start_method()), initializer=worker_setup,
                      describe=lambda job: f"scene {job[0]}")


def prerender(config: PrerenderConfig, progress: Callable[[SceneFrames], None] | None = None) -> PrerenderSummary:
    """Render (or finish rendering) the frames of ``config.split``; returns what was done.

    Raises:
        DatasetError: the dataset is missing, or the split/task has no episodes.
    """
    started = time.perf_counter()
    jobs = _scene_jobs(config)
    split_dir = Path(config.out) / config.split
    split_dir.mkdir(parents=True, exist_ok=True)
    for stale in split_dir.rglob(".*.tmp"):
        stale.unlink(missing_ok=True)
    outcomes: dict[str, SceneFrames] = {}
    todo = []
    for job in jobs:
        record = completed(scene_dir(config.out, config.split, job[0]), config.same_frames)
        if record is not None:
            outcomes[job[0]] = SceneFrames(job[0], "resumed", record)
        else:
            todo.append(job)
    for outcome in _execute(todo, config):
        outcomes[outcome.scene_id] = outcome
        log.info("pre-rendered %s: %d frames in %.1f s", outcome.scene_id, outcome.frames, outcome.seconds)
        if progress:
            progress(outcome)
    summary = PrerenderSummary(Path(config.out), [outcomes[job[0]] for job in jobs], time.perf_counter() - started)
    write_json_atomic(split_dir / INDEX, {"config": config_to_dict(config), "config_hash": config.config_hash,
                                          "sensors": config.sensors(), "scenes": [s.scene_id for s in summary.scenes],
                                          "summary": summary.to_dict()})
    return summary
