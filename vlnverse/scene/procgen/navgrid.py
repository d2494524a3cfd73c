"""A fine occupancy raster of a plan under construction, for placement and reachability.

The generator needs to ask "is this footprint free?" and "can a 0.3 m-radius agent still
reach every room?" thousands of times while it furnishes a house, long before a USD file
exists. This raster answers both from the plan's own footprints (walls at floor level,
objects whose height range meets the agent's body). The written scene is checked again,
independently, by :mod:`.validation` through the environment layer.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import ndimage

from vlnverse.scene.procgen.layout import CELL

#: Raster resolution (m); must divide :data:`CELL`.
RES = 0.05


class NavGrid:
    """Room labels, blocked cells and keep-out zones on a RES grid with origin (0, 0).

    Args:
        labels: The plan's label grid (cells of :data:`CELL`).
    """

    def __init__(self, labels: np.ndarray) -> None:
        k = int(round(CELL / RES))
        self.rooms = np.repeat(np.repeat(labels, k, axis=0), k, axis=1).astype(np.int16)
        self.blocked = np.zeros(self.rooms.shape, dtype=bool)
        self.keepout = np.zeros(self.rooms.shape, dtype=bool)

    @property
    def shape(self) -> tuple[int, int]:
        return self.rooms.shape

    def cells(self, rect: tuple[float, float, float, float], *, grow: bool = True) -> tuple[slice, slice]:
        """Row/column slices of the cells a world rect (x0, y0, x1, y1) touches.

        With ``grow`` every partly covered cell counts; otherwise only cells whose centre
        lies inside.
        """
        x0, y0, x1, y1 = rect
        if grow:
            c0, c1 = math.floor(x0 / RES + 1e-6), math.ceil(x1 / RES - 1e-6)
            r0, r1 = math.floor(y0 / RES + 1e-6), math.ceil(y1 / RES - 1e-6)
        else:
            c0, c1 = math.ceil(x0 / RES - 0.5), math.floor(x1 / RES - 0.5) + 1
            r0, r1 = math.ceil(y0 / RES - 0.5), math.floor(y1 / RES - 0.5) + 1
        ny, nx = self.shape
        return slice(max(r0, 0), min(max(r1, 0), ny)), slice(max(c0, 0), min(max(c1, 0), nx))

    def block(self, rect: tuple[float, float, float, float]) -> None:
        self.blocked[self.cells(rect)] = True

    def reserve(self, rect: tuple[float, float, float, float]) -> None:
        self.keepout[self.cells(rect)] = True

    def is_free(self, rect: tuple[float, float, float, float], room: int, *,
                allow_keepout: bool = False) -> bool:
        """Whether the rect lies in ``room`` and touches no blocked (or reserved) cell."""
        sl = self.cells(rect)
        if sl[0].stop - sl[0].start <= 0 or sl[1].stop - sl[1].start <= 0:
            return False
        ys, xs = sl
        ny, nx = self.shape
        x0, y0, x1, y1 = rect
        if x0 < 0 or y0 < 0 or x1 > nx * RES or y1 > ny * RES:
            return False
        if not np.all(self.rooms[sl] == room) or self.blocked[sl].any():
            return False
        return allow_keepout or not self.keepout[sl].any()

    def navigable(self, agent_radius: float, window: tuple[slice, slice] | None = None) -> np.ndarray:
        """Cells whose centre is farther than ``agent_radius`` from any blocked or outside cell."""
        sl = window or (slice(0, self.shape[0]), slice(0, self.shape[1]))
        free = (self.rooms[sl] >= 0) & ~self.blocked[sl]
        dist = ndimage.distance_transform_edt(free) * RES
        return dist > agent_radius + RES / 2.0

    def connected(self, points: list[tuple[float, float]], agent_radius: float,
                  window: tuple[slice, slice] | None = None) -> bool:
        """Whether all ``points`` are navigable and in one connected component."""
        sl = window or (slice(0, self.shape[0]), slice(0, self.shape[1]))
        nav = self.navigable(agent_radius, sl)
        comps, _ = ndimage.label(nav)
        seen = set()
        for x, y in points:
            r, c = int(y / RES) - sl[0].start, int(x / RES) - sl[1].start
            if not (0 <= r < nav.shape[0] and 0 <= c < nav.shape[1]):
                return False
            patch = comps[max(r - 1, 0):r + 2, max(c - 1, 0):c + 2]
            labels = set(np.unique(patch[patch > 0]).tolist())
            if not labels:
                return False
            seen.add(min(labels))
        return len(seen) <= 1

    def navigable_area_per_room(self, agent_radius: float, num_rooms: int) -> list[float]:
        """Navigable floor area (m²) per room index."""
        nav = self.navigable(agent_radius)
        counts = np.bincount(self.rooms[nav].astype(np.int64), minlength=num_rooms)
        return [round(float(n) * RES * RES, 3) for n in counts[:num_rooms]]

    def window_around(self, rect: tuple[float, float, float, float], margin: float) -> tuple[slice, slice]:
        x0, y0, x1, y1 = rect
        return self.cells((x0 - margin, y0 - margin, x1 + margin, y1 + margin))
