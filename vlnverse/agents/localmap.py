"""A top-down local map drawn from the agent's own panoramic depth (no privileged map).

The map is agent-centred and heading-up: the top row is straight ahead, left is left.
Cells are unknown, free (seen through) or obstacle (a depth hit the body would touch).
:meth:`LocalMap.ascii` is what text models read, :meth:`LocalMap.image` what VLMs see.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vlnverse.agents.config import WaypointConfig
from vlnverse.agents.panorama import Panorama
from vlnverse.agents.waypoints.candidate import Candidate

UNKNOWN, FREE, OBSTACLE = 0, 1, 2
MAP_RADIUS = 4.0        # metres shown on each side of the agent
MAP_RESOLUTION = 0.4    # metres per cell
RAY_SPACING_DEG = 5.0
_GLYPHS = np.array([" ", ".", "#"])
_COLOURS = np.array([[40, 40, 40], [225, 225, 225], [20, 20, 160]], dtype=np.uint8)


@dataclass(frozen=True)
class LocalMap:
    """Cells around the agent; ``grid[row, col]``, row 0 = farthest ahead, col 0 = leftmost."""

    grid: np.ndarray
    resolution: float

    @property
    def centre(self) -> int:
        return self.grid.shape[0] // 2

    def cell_of(self, offset: np.ndarray) -> tuple[int, int] | None:
        """The cell of an agent-frame point (x forward, y left), or None off the map."""
        row = self.centre - int(np.round(offset[0] / self.resolution))
        col = self.centre - int(np.round(offset[1] / self.resolution))
        size = self.grid.shape[0]
        return (row, col) if 0 <= row < size and 0 <= col < size else None

    def ascii(self, candidates: Sequence[Candidate] = ()) -> str:
        """Text rows: ``@`` the agent (facing up), letters the candidates, ``#`` obstacles,
        ``.`` free, blank unknown."""
        chars = _GLYPHS[self.grid].astype("<U1")
        chars[self.centre, self.centre] = "@"
        for candidate in candidates:
            cell = None if candidate.turn else self.cell_of(candidate.offset)
            if cell is not None:
                chars[cell] = candidate.id
        return "\n".join("".join(row).rstrip() for row in chars)

    def image(self, candidates: Sequence[Candidate] = (), scale: int = 8) -> np.ndarray:
        """An RGB picture (``scale`` pixels per cell): agent red, candidates green."""
        picture = _COLOURS[self.grid]
        picture[self.centre, self.centre] = (220, 30, 30)
        for candidate in candidates:
            cell = None if candidate.turn else self.cell_of(candidate.offset)
            if cell is not None:
                picture[cell] = (30, 180, 30)
        return np.repeat(np.repeat(picture, scale, axis=0), scale, axis=1)


def build_local_map(panorama: Panorama, config: WaypointConfig, *, radius: float = MAP_RADIUS,
                    resolution: float = MAP_RESOLUTION) -> LocalMap:
    """The local map of one panorama: rays free up to the first obstacle, obstacles marked."""
    size = 2 * int(round(radius / resolution)) + 1
    grid = np.full((size, size), UNKNOWN, dtype=np.int8)
    local = LocalMap(grid, resolution)
    obstacles = panorama.obstacle_points(config.step_height, config.body_height)
    bins = round(360.0 / RAY_SPACING_DEG)
    reach = np.full(bins, radius * 1.5)  # the nearest obstacle in each direction (visibility)
    if len(obstacles):
        angle = np.arctan2(obstacles[:, 1], obstacles[:, 0])
        index = np.round(angle / np.radians(RAY_SPACING_DEG)).astype(int) % bins
        np.minimum.at(reach, index, np.hypot(obstacles[:, 0], obstacles[:, 1]))
    headings = np.radians(np.arange(bins) * RAY_SPACING_DEG)
    steps = np.arange(0.0, radius * 1.5, resolution / 2.0)
    for heading, distance in zip(headings, reach, strict=True):
        along = steps[steps < distance]
        points = np.stack([along * np.cos(heading), along * np.sin(heading)], axis=1)
        _mark(local, points, FREE)
    _mark(local, obstacles, OBSTACLE)
    return local


def _mark(local: LocalMap, points: np.ndarray, value: int) -> None:
    if len(points) == 0:
        return
    rows = local.centre - np.round(points[:, 0] / local.resolution).astype(int)
    cols = local.centre - np.round(points[:, 1] / local.resolution).astype(int)
    size = local.grid.shape[0]
    inside = (rows >= 0) & (rows < size) & (cols >= 0) & (cols < size)
    local.grid[rows[inside], cols[inside]] = value
