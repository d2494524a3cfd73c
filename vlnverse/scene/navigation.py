"""Geodesic navigation on a navigable map: distance fields, A* paths, smoothing (paper §3.3.2).

* :meth:`Navigator.distance_field` — geodesic distance from goal(s) to every navigable cell
  by second-order fast marching (``scikit-fmm``); unreachable cells are ``inf``.
* :meth:`Navigator.shortest_path` — an 8-connected A* path (``pyastar2d``, C++) smoothed by
  line-of-sight shortcutting into a polyline of waypoints; its length is the reported
  geodesic distance, so datasets and metrics agree with the paths they store.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyastar2d
import skfmm

from vlnverse.errors import NavigationError
from vlnverse.scene.occupancy import OccupancyMap

LOS_SAMPLES_PER_CELL = 3  # samples per cell along a line-of-sight test


@dataclass(frozen=True)
class NavPath:
    """A smoothed path: waypoints (K,3) on the floor, its length in metres, and reachability."""

    points: np.ndarray
    length: float
    reachable: bool

    @staticmethod
    def unreachable() -> NavPath:
        return NavPath(points=np.zeros((0, 3)), length=float("inf"), reachable=False)


class DistanceField:
    """Geodesic distance (m) to the goal(s) over the navigable map."""

    def __init__(self, occupancy: OccupancyMap, distances: np.ndarray) -> None:
        self.occupancy = occupancy
        self.distances = distances

    def distance_at(self, points) -> float | np.ndarray:
        """Distance from ``points`` (…,2|3) to the goal; off-map points snap to the nearest
        navigable cell and add the snap distance. ``inf`` where unreachable."""
        pts = np.asarray(points, dtype=np.float64)
        flat = pts.reshape(-1, pts.shape[-1])[:, :2]
        occ = self.occupancy
        rows, cols = occ._nearest_index(None)
        rc = np.clip(occ.world_to_cell(flat), 0, np.array(occ.shape) - 1)
        nr, nc = rows[rc[:, 0], rc[:, 1]], cols[rc[:, 0], rc[:, 1]]
        snapped = ~occ.navigable[rc[:, 0], rc[:, 1]]
        extra = np.where(snapped, np.linalg.norm(occ.cell_to_world(np.stack([nr, nc], 1))[:, :2] - flat, axis=1), 0.0)
        out = (self.distances[nr, nc] + extra).reshape(pts.shape[:-1])
        return float(out) if out.ndim == 0 else out


class Navigator:
    """Shortest paths and geodesic distances on one :class:`OccupancyMap`."""

    def __init__(self, occupancy: OccupancyMap) -> None:
        self.occupancy = occupancy
        self._weights = np.where(occupancy.navigable, 1.0, np.inf).astype(np.float32)

    # -- points ----------------------------------------------------------------------
    def snap(self, point) -> tuple[int, int]:
        """The navigable cell for ``point``: its own cell, else the nearest navigable one.

        Raises:
            NavigationError: the point is not finite or has no floor under it.
        """
        occ = self.occupancy
        point = np.asarray(point, dtype=np.float64)
        if point.shape[-1] < 2 or not np.all(np.isfinite(point)):
            raise NavigationError(f"{occ.scene_path}: invalid point {point.tolist()}")
        rc = occ.world_to_cell(point)
        if not occ.in_grid(rc) or not (occ.free[rc[0], rc[1]] or self._near_free(rc)):
            raise NavigationError(f"{occ.scene_path}: no floor under point ({point[0]:.2f}, {point[1]:.2f})")
        if occ.navigable[rc[0], rc[1]]:
            return int(rc[0]), int(rc[1])
        rows, cols = occ._nearest_index(None)
        return int(rows[rc[0], rc[1]]), int(cols[rc[0], rc[1]])

    def _near_free(self, rc: np.ndarray) -> bool:
        """Within one agent radius of free space (a point touching a wall still counts)."""
        occ = self.occupancy
        k = int(np.ceil(occ.agent_radius / occ.resolution))
        window = occ.free[max(rc[0] - k, 0):rc[0] + k + 1, max(rc[1] - k, 0):rc[1] + k + 1]
        return bool(window.any())

    # -- distance fields -------------------------------------------------------------
    def distance_field(self, goals) -> DistanceField:
        """Geodesic distance from every navigable cell to the nearest of ``goals`` (xy/xyz)."""
        occ = self.occupancy
        goals = np.atleast_2d(np.asarray(goals, dtype=np.float64))
        cells = np.array([self.snap(g) for g in goals])
        rows, cols = np.indices(occ.shape)
        centers = occ.cell_to_world(cells)[:, :2]
        seed_radius = 1.5 * occ.resolution
        cell_x = occ.origin[0] + (cols + 0.5) * occ.resolution
        cell_y = occ.origin[1] + (rows + 0.5) * occ.resolution
        euclid = np.min([np.hypot(cell_x - gx, cell_y - gy) for gx, gy in centers], axis=0)
        phi = np.ma.MaskedArray(euclid - seed_radius, mask=~occ.navigable)
        distances = np.full(occ.shape, np.inf)
        reached = np.isin(occ.components, np.unique(occ.components[cells[:, 0], cells[:, 1]]))
        try:
            marched = skfmm.distance(phi, dx=occ.resolution, order=2)
            values = np.ma.filled(marched, np.inf) + seed_radius
        except ValueError:  # the seed circle holds every navigable cell: no contour to march
            values = euclid
        inside = euclid <= seed_radius
        values = np.where(inside, euclid, values)
        distances[reached] = values[reached]
        distances[~occ.navigable] = np.inf
        return DistanceField(occ, distances)

    # -- paths -------------------------------------------------------------------------
    def shortest_path(self, start, goal) -> NavPath:
        """Smoothed shortest path from ``start`` to ``goal``; unreachable gives ``inf`` length."""
        occ = self.occupancy
        s, g = self.snap(start), self.snap(goal)
        if occ.components[s] != occ.components[g]:
            return NavPath.unreachable()
        cells = pyastar2d.astar_path(self._weights, s, g, allow_diagonal=True)
        if cells is None:
            return NavPath.unreachable()
        waypoints = self._smooth(np.asarray(cells, dtype=np.int64))
        points = occ.cell_to_world(waypoints)
        start_xy, goal_xy = np.asarray(start, float)[:2], np.asarray(goal, float)[:2]
        if occ.is_navigable(start_xy) and self._line_of_sight_world(start_xy, points[min(1, len(points) - 1), :2]):
            points[0, :2] = start_xy
        if occ.is_navigable(goal_xy) and self._line_of_sight_world(points[max(len(points) - 2, 0), :2], goal_xy):
            points[-1, :2] = goal_xy
        length = float(np.linalg.norm(np.diff(points[:, :2], axis=0), axis=1).sum())
        return NavPath(points=points, length=length, reachable=True)

    def geodesic_distance(self, start, goal) -> float:
        """Length of the smoothed shortest path (``inf`` if unreachable)."""
        return self.shortest_path(start, goal).length

    # -- smoothing ---------------------------------------------------------------------
    def line_of_sight(self, a_rc, b_rc) -> bool:
        """Whether the straight segment between two cell centres stays navigable."""
        a, b = np.asarray(a_rc, float), np.asarray(b_rc, float)
        n = int(np.abs(b - a).max() * LOS_SAMPLES_PER_CELL) + 2
        t = np.linspace(0.0, 1.0, n)[:, None]
        pts = np.floor(a + (b - a) * t + 0.5).astype(np.int64)
        return bool(self.occupancy.navigable[pts[:, 0], pts[:, 1]].all())

    def _line_of_sight_world(self, a_xy, b_xy) -> bool:
        occ = self.occupancy
        a = (np.asarray(a_xy) - occ.origin) / occ.resolution - 0.5
        b = (np.asarray(b_xy) - occ.origin) / occ.resolution - 0.5
        return self.line_of_sight(a[::-1], b[::-1])

    def _smooth(self, cells: np.ndarray) -> np.ndarray:
        """Shortcut forward, then again backward over the densified result (pulls the
        polyline taut around corners that the first pass approached from one side)."""
        forward = self._shortcut(cells)
        dense = _densify(forward)
        return self._shortcut(dense[::-1])[::-1]

    def _shortcut(self, cells: np.ndarray) -> np.ndarray:
        """Greedy line-of-sight shortcutting: from each anchor jump to the farthest visible cell."""
        if len(cells) <= 2:
            return cells
        out = [0]
        anchor, last = 0, len(cells) - 1
        while anchor < last:
            # exponential search for a blocked cell, then binary search for the visibility edge
            step, good = 1, anchor + 1
            while good + step <= last and self.line_of_sight(cells[anchor], cells[good + step]):
                good += step
                step *= 2
            bad = min(good + step, last + 1)
            while bad - good > 1:
                mid = (good + bad) // 2
                if self.line_of_sight(cells[anchor], cells[mid]):
                    good = mid
                else:
                    bad = mid
            out.append(good)
            anchor = good
        return cells[out]


def _densify(waypoints: np.ndarray) -> np.ndarray:
    """Cells along a polyline of cell centres, about one per cell, endpoints kept."""
    pieces = []
    for a, b in zip(waypoints[:-1], waypoints[1:]):
        n = int(np.abs(b - a).max()) + 1
        t = np.linspace(0.0, 1.0, n, endpoint=False)[:, None]
        pieces.append(np.floor(a + (b - a) * t + 0.5).astype(np.int64))
    pieces.append(waypoints[-1:])
    dense = np.concatenate(pieces)
    keep = np.ones(len(dense), dtype=bool)
    keep[1:] = np.any(dense[1:] != dense[:-1], axis=1)
    return dense[keep]
