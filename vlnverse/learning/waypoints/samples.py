"""Training samples of the waypoint predictor: rendered depth panoramas and their targets.

Per scene of a split, ``poses_per_scene`` poses: half at points of the split's reference
paths (facing along the path, ±45°; the path's point ahead is a target too), half at
navigable points drawn uniformly (any heading). Each pose's 12-view depth panorama is
rendered at the agents' resolution and area-pooled to the network's input; its targets and
the navigability of every heatmap cell are read from the scene's navigable map
(:mod:`~vlnverse.learning.waypoints.targets`). One ``.npz`` per scene, written atomically,
so an interrupted run renders only the scenes it lacks.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from vlnverse.agents.config import PanoramaConfig
from vlnverse.agents.panorama import make_rig, view_name
from vlnverse.fileio import atomic_open
from vlnverse.learning.waypoints.targets import TargetConfig, navigable_grid, targets_at

log = logging.getLogger(__name__)

MAX_TARGETS = 8  # stored per pose, padded with NaN


def pool_depth(views: np.ndarray, size: int) -> np.ndarray:
    """``(12, H, W)`` depth area-averaged to ``(12, size, size)`` (H, W multiples of ``size``)."""
    count, height, width = views.shape
    if height % size or width % size:
        raise ValueError(f"depth views of {height}x{width} px do not pool to {size} px")
    return views.reshape(count, size, height // size, size, width // size).mean(axis=(2, 4))


def scene_poses(occupancy, paths: list[np.ndarray], count: int, rng: np.random.Generator
                ) -> list[tuple[float, float, float, np.ndarray | None]]:
    """``count`` poses ``(x, y, yaw, path ahead or None)`` of a scene (see the module docs)."""
    poses: list[tuple[float, float, float, np.ndarray | None]] = []
    on_paths = count // 2 if paths else 0
    for _ in range(on_paths):
        path = paths[int(rng.integers(len(paths)))]
        i = int(rng.integers(len(path) - 1))
        t = float(rng.uniform())
        point = path[i] + t * (path[i + 1] - path[i])
        direction = path[i + 1] - path[i]
        yaw = math.atan2(direction[1], direction[0]) + float(rng.uniform(-math.pi / 4, math.pi / 4))
        poses.append((float(point[0]), float(point[1]), yaw, np.vstack([point, path[i + 1:]])))
    for point in occupancy.sample_navigable(rng, count - on_paths):
        poses.append((float(point[0]), float(point[1]), float(rng.uniform(-math.pi, math.pi)), None))
    return poses


def render_scene(scene_file: Path, paths: list[np.ndarray], out: Path, *, count: int, seed: int,
                 input_size: int, panorama: PanoramaConfig, targets: TargetConfig,
                 agent_radius: float = 0.30, agent_height: float = 1.50) -> None:
    """Render one scene's samples into ``out`` (``depth`` (n, 12, s, s) float16, ``targets``
    (n, 8, 2) heading/distance or NaN, ``navigable`` (n, 120, 12) bool, ``poses`` (n, 3))."""
    from vlnverse.scene.loading import scene_with_occupancy
    from vlnverse.sim.simulator import Simulator
    from vlnverse.sim.types import Pose

    scene, occupancy = scene_with_occupancy(scene_file, agent_radius=agent_radius, agent_height=agent_height)
    rng = np.random.default_rng(seed)
    poses = scene_poses(occupancy, paths, count, rng)
    depth = np.zeros((len(poses), panorama.views, input_size, input_size), dtype=np.float16)
    goal = np.full((len(poses), MAX_TARGETS, 2), np.nan, dtype=np.float32)
    navigable = np.zeros((len(poses), 120, 12), dtype=bool)
    with Simulator(scene, sensors=make_rig(panorama, ("depth",)), occupancy=occupancy) as sim:
        for i, (x, y, yaw, path) in enumerate(poses):
            readings = sim.render_cameras(Pose(x, y, occupancy.floor_height, yaw))
            views = np.stack([np.asarray(readings[view_name("depth", v)], dtype=np.float32).reshape(
                panorama.image_size, panorama.image_size) for v in range(panorama.views)])
            depth[i] = pool_depth(views, input_size)
            found = targets_at(occupancy, x, y, yaw, targets, path)[:MAX_TARGETS]
            goal[i, :len(found)] = found
            navigable[i] = navigable_grid(occupancy, x, y, yaw)
    with atomic_open(out, "wb") as handle:
        np.savez_compressed(handle, depth=depth, targets=goal, navigable=navigable,
                            poses=np.array([p[:3] for p in poses], dtype=np.float32))


def render_split(dataset: str, split: str, folder: Path, *, count: int, seed: int, input_size: int,
                 panorama: PanoramaConfig, targets: TargetConfig,
                 progress: Callable[[str, int, int], None] | None = None) -> list[Path]:
    """The sample files of every scene of ``split`` in ``folder`` (rendering the missing ones)."""
    from vlnverse.tasks.dataset import EpisodeDataset

    data = EpisodeDataset.open(dataset)
    by_scene: dict[str, tuple[Path, list[np.ndarray]]] = {}
    for episode in data.episodes(split):
        file, paths = by_scene.setdefault(episode.scene_id, (data.scene_file(episode), []))
        if len(episode.reference_path) > 1:
            paths.append(np.asarray(episode.reference_path, dtype=np.float64)[:, :2])
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for n, (scene_id, (file, paths)) in enumerate(sorted(by_scene.items())):
        out = folder / f"{scene_id}.npz"
        if not out.is_file():
            log.info("rendering %d waypoint samples of %s", count, scene_id)
            render_scene(file, paths, out, count=count, seed=seed + n, input_size=input_size,
                         panorama=panorama, targets=targets)
        files.append(out)
        if progress:
            progress(f"render {split}", n + 1, len(by_scene))
    return files


def load_samples(files: list[Path]) -> dict[str, np.ndarray]:
    """The arrays of several scenes' sample files, concatenated."""
    parts = [np.load(f) for f in files]
    return {key: np.concatenate([p[key] for p in parts]) for key in ("depth", "targets", "navigable", "poses")}
