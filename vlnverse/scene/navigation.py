"""Geodesic navigation on a navigable map: distance fields, A* paths, smoothing (paper §3.3.2).

* :meth:`Navigator.distance_field` — geodesic distance from goal(s) to every navigable cell
  by second-order fast marching (``scikit-fmm``); unreachable cells are ``inf``.
* :meth:`Navigator.shortest_path` — an 8-connected A* path (``pyastar2d``, C++) smoothed by
  line-of-sight shortcutting into a polyline of waypoints; its length is the reported
  geodesic distance, so datasets and metrics agree with the paths they store.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import pyastar2d
import skfmm

from vlnverse.errors import NavigationError
from vlnverse.scene.occupancy import OccupancyMap

LOS_SAMPLES_PER_CELL = 3  # samples per cell along a line-of-sight test
CORNER_CUT_PASSES = 2
CORNER_CUT_STEPS = 5  # binary-search steps for how deep a corner is cut


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
        occ = self.occupancy
        nearest_rows, nearest_cols = occ._nearest_index(None)
        if pts.shape in ((2,), (3,)):  # one point (a pose): the same arithmetic on floats
            x, y = float(pts[0]), float(pts[1])
            cell = occ.cell_of(x, y)
            if cell is not None:
                row, col, _ = cell
                nr, nc = int(nearest_rows[row, col]), int(nearest_cols[row, col])
                distance = float(self.distances[nr, nc])
                if occ.navigable[row, col]:
                    return distance
                ox, oy = occ._origin_xy
                dx, dy = ox + (nc + 0.5) * occ.resolution - x, oy + (nr + 0.5) * occ.resolution - y
                return distance + math.sqrt(dx * dx + dy * dy)
        flat = pts.reshape(-1, pts.shape[-1])[:, :2]
        rows, cols, _ = occ.cell_indices(flat)
        nr, nc = nearest_rows[rows, cols], nearest_cols[rows, cols]
        out = self.distances[nr, nc]
        snapped = ~occ.navigable[rows, cols]
        if snapped.any():
            snap = np.linalg.norm(occ.cell_to_world(np.stack([nr, nc], 1))[:, :2] - flat, axis=1)
            out = out + np.where(snapped, snap, 0.0)
        out = out.reshape(pts.shape[:-1])
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
        points = self._attach_endpoint(points, np.asarray(start, float)[:2], first=True)
        points = self._attach_endpoint(points, np.asarray(goal, float)[:2], first=False)
        length = float(np.linalg.norm(np.diff(points[:, :2], axis=0), axis=1).sum())
        return NavPath(points=points, length=length, reachable=True)

    def _attach_endpoint(self, points: np.ndarray, xy: np.ndarray, first: bool) -> np.ndarray:
        """Use the exact query point as the path's end (it lies in the end cell, or snapped
        to it): it replaces the cell centre when it sees the next waypoint, else precedes it."""
        if not self.occupancy.is_navigable(xy):
            return points
        end = np.array([xy[0], xy[1], self.occupancy.floor_height])
        neighbour = points[1 if first else -2, :2] if len(points) > 1 else end[:2]
        if self._line_of_sight_world(xy, neighbour):
            points[0 if first else -1] = end
            return points
        return np.vstack([end, points]) if first else np.vstack([points, end])

    def geodesic_distance(self, start, goal) -> float:
        """Length of the smoothed shortest path (``inf`` if unreachable)."""
        return self.shortest_path(start, goal).length

    # -- smoothing ---------------------------------------------------------------------
    def line_of_sight(self, a_rc, b_rc) -> bool:
        """Whether the straight segment between two cell centres stays navigable."""
        ar, ac = float(a_rc[0]), float(a_rc[1])
        dr, dc = float(b_rc[0]) - ar, float(b_rc[1]) - ac
        t = _fractions(int(max(abs(dr), abs(dc)) * LOS_SAMPLES_PER_CELL) + 2)
        rows = (ar + 0.5 + dr * t).astype(np.intp)
        cols = (ac + 0.5 + dc * t).astype(np.intp)
        return bool(self.occupancy.navigable[rows, cols].all())

    def _line_of_sight_world(self, a_xy, b_xy) -> bool:
        occ = self.occupancy
        a = (np.asarray(a_xy) - occ.origin) / occ.resolution - 0.5
        b = (np.asarray(b_xy) - occ.origin) / occ.resolution - 0.5
        return self.line_of_sight(a[::-1], b[::-1])

    def _smooth(self, cells: np.ndarray) -> np.ndarray:
        """Shortcut the grid path, then alternately cut corners and shortcut again: the
        polyline tightens around obstacle corners toward the taut (shortest) path."""
        waypoints = self._shortcut(cells).astype(np.float64)
        for _ in range(CORNER_CUT_PASSES):
            waypoints = self._shortcut(self._cut_corners(waypoints))
        return waypoints

    def _cut_corners(self, waypoints: np.ndarray) -> np.ndarray:
        """Replace each interior waypoint ``b`` (between ``a`` and ``c``) by ``b + s(a-b)`` and
        ``b + s(c-b)`` with the largest ``s`` that keeps line of sight: the polyline wraps
        closer around the obstacle corner that ``b`` turns at."""
        if len(waypoints) <= 2:
            return waypoints
        out = [waypoints[0]]
        for i in range(1, len(waypoints) - 1):
            a, b, c = out[-1], waypoints[i], waypoints[i + 1]
            lo, hi = 0.0, 0.5
            for _ in range(CORNER_CUT_STEPS):
                mid = (lo + hi) / 2
                if self.line_of_sight(b + mid * (a - b), b + mid * (c - b)):
                    lo = mid
                else:
                    hi = mid
            if lo > 0:
                out += [b + lo * (a - b), b + lo * (c - b)]
            else:
                out.append(b)
        out.append(waypoints[-1])
        return np.array(out)

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


@functools.lru_cache(maxsize=4096)
def _fractions(n: int) -> np.ndarray:
    """``n`` evenly spaced fractions from 0 to 1 (cached: line-of-sight tests are hot)."""
    return np.linspace(0.0, 1.0, n)
