"""Scene files parsed and rasterized once: shared within a process, cached across processes.

:func:`scene_with_occupancy` is what envs, dataset generation and the inspection tools
call to open a scene file. Within a process the last :data:`PREPARED_SCENES` results are
kept (the envs of one scene, e.g. one per physics mode, share them;
:func:`vlnverse.cache.clear_memory` forgets them); across processes
they come from the disk cache (:mod:`vlnverse.cache`), valid while every file the stage
is composed from keeps its size and modification time.
"""

from __future__ import annotations

import os
from pathlib import Path

from vlnverse.cache import ProcessMemo, cached
from vlnverse.scene.occupancy import OccupancyMap, build_occupancy
from vlnverse.scene.types import Scene
from vlnverse.scene.usd_loader import load_scene

PREPARED_SCENES = 4
"""Prepared scenes a process keeps in memory."""

_prepared = ProcessMemo(PREPARED_SCENES)


def scene_with_occupancy(path: str | Path, *, agent_radius: float = 0.30, agent_height: float = 1.50,
                         resolution: float = 0.05, step_height: float = 0.10) -> tuple[Scene, OccupancyMap]:
    """The parsed scene file and its occupancy map for an agent of these dimensions.

    Raises:
        SceneError: the file is missing or not a usable scene (see :func:`load_scene`).
    """
    path = Path(path).resolve()
    dims = (float(agent_radius), float(agent_height), float(resolution), float(step_height))
    key = (str(path), dims)
    scene, occupancy, _ = _prepared.get(
        key, lambda: cached("scene+occupancy", key, lambda: _prepare(path, dims), fresh=_unchanged), fresh=_unchanged)
    return scene, occupancy


Prepared = tuple[Scene, OccupancyMap, tuple]
"""A cache entry: the scene, its occupancy map and the signatures of the scene's source files."""


def _prepare(path: Path, dims: tuple[float, float, float, float]) -> Prepared:
    radius, height, resolution, step_height = dims
    scene = load_scene(path)
    occupancy = build_occupancy(scene, agent_radius=radius, agent_height=height, resolution=resolution,
                                step_height=step_height)
    return scene, occupancy, tuple(_signature(f) for f in scene.sources)


def _unchanged(entry: Prepared) -> bool:
    """Whether every file the cached scene was composed from is as it was."""
    scene, _, signatures = entry
    return bool(scene.sources) and tuple(_signature(f) for f in scene.sources) == signatures


def _signature(file: str) -> tuple[int, int] | None:
    """(size, modification time in ns) of ``file``, ``None`` when it cannot be read."""
    try:
        stat = os.stat(file)
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns
