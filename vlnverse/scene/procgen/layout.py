"""Packing a room program into a footprint, as a label grid.

The house is laid out in three bands along a circulation *spine*: public rooms below,
the spine (a hallway, or the living room in small homes) in the middle, private rooms
above, so every bedroom and bathroom opens onto a hallway or living space and the
kitchen sits beside the dining room. Bands of unequal width leave notches in the
footprint; the living room may reach into a neighbouring band and become L-shaped.
The grid is then rotated/mirrored at random. Working on a 0.1 m integer grid keeps
every wall, door and floor exactly aligned.
"""

from __future__ import annotations

import numpy as np

from vlnverse.scene.procgen.program import ROOM_MIN_WIDTH, RoomSpec

#: Grid cell size of the layout (m).
CELL = 0.1

_PRIVATE = ("bedroom", "bathroom", "study")
_BOTTOM_ORDER = {"living_room": 0, "dining_room": 1, "kitchen": 2, "laundry": 3, "storage": 4,
                 "study": 5, "bathroom": 6, "bedroom": 7}


def _cells(metres: float) -> int:
    return int(round(metres / CELL))


def _widths(rng: np.random.Generator, specs: list[RoomSpec], depth: int) -> list[int]:
    """Band widths (cells) giving each room about its target area at ``depth``."""
    out = []
    for spec in specs:
        natural = spec.area / (depth * CELL) if depth else 0.0
        out.append(max(_cells(ROOM_MIN_WIDTH[spec.room_type]), _cells(natural)))
    return out


def _stretch(widths: list[int], target: int) -> list[int]:
    """Grow widths (largest first, round robin) until they sum to ``target``."""
    widths = list(widths)
    order = sorted(range(len(widths)), key=lambda i: (-widths[i], i))
    k = 0
    while sum(widths) < target:
        widths[order[k % len(order)]] += 1
        k += 1
    return widths


def _balance(rng: np.random.Generator, top: list[RoomSpec], bottom: list[RoomSpec]) -> None:
    """Move private rooms from an overfull top band to the bottom band (both touch the spine)."""
    while len(top) > len(bottom) + 1:
        movable = [s for s in top if s.room_type in ("study", "bathroom")] or top[1:]
        pick = movable[int(rng.integers(len(movable)))]
        top.remove(pick)
        bottom.append(pick)


def layout_program(rng: np.random.Generator, specs: list[RoomSpec]) -> np.ndarray:
    """Lay out ``specs`` as an (ny, nx) int16 label grid (room index, -1 outside).

    Row ``r`` spans y in [r·CELL, (r+1)·CELL), column ``c`` spans x likewise; the grid
    has a one-cell border of -1.
    """
    index = {s.room_id: i for i, s in enumerate(specs)}
    hallway = next((s for s in specs if s.room_type == "hallway"), None)
    living = next(s for s in specs if s.room_type == "living_room")
    top = [s for s in specs if s.room_type in _PRIVATE]
    top = [top[i] for i in rng.permutation(len(top))]
    if hallway is not None:
        bottom = [s for s in specs if s.room_type not in _PRIVATE and s is not hallway]
        spine = hallway
    else:
        bottom = [s for s in specs if s.room_type not in _PRIVATE and s is not living]
        spine = living
    _balance(rng, top, bottom)
    bottom.sort(key=lambda s: _BOTTOM_ORDER[s.room_type])

    depth_top = _cells(rng.uniform(3.2, 4.4))
    depth_bottom = _cells(rng.uniform(3.6, 5.0) if hallway else rng.uniform(3.0, 4.2)) if bottom else 0
    w_top = _widths(rng, top, depth_top)
    w_bottom = _widths(rng, bottom, depth_bottom)

    # The living room may reach into the band next to it and so become L-shaped.
    l_shape = rng.random() < 0.55
    ext = 0
    if hallway is not None and l_shape:
        ext = max(_cells(1.6), int(round(w_bottom[0] * rng.uniform(0.45, 0.7))))
    elif hallway is None and l_shape and top:
        ext = _cells(rng.uniform(1.8, 3.0))
    width = max(sum(w_top) + (ext if hallway is None else 0), sum(w_bottom), _cells(5.0))
    if hallway is not None:
        width = max(width, ext + _cells(2.4))
        depth_spine = _cells(rng.uniform(1.2, 1.6))
    else:
        depth_spine = int(np.clip(_cells(living.area / (width * CELL)), _cells(3.2), _cells(5.5)))

    def fit(widths: list[int], available: int) -> tuple[list[int], int]:
        """Stretch a band to ``available`` or leave a notch; returns widths and x offset."""
        if not widths:
            return widths, 0
        slack = available - sum(widths)
        if slack < _cells(1.5):
            return _stretch(widths, available), 0
        return widths, int(rng.integers(2)) * slack  # notch left or right

    top_avail = width - (ext if hallway is None else 0)
    w_top, x_top = fit(w_top, top_avail)
    w_bottom, x_bottom = fit(w_bottom, width)
    if hallway is not None and ext:
        # end the L on a wall between private rooms, so each keeps a full-width doorway side
        bounds = [x_top + int(b) for b in np.cumsum([0] + w_top)]
        fits = [b - x_bottom for b in bounds if _cells(1.6) <= b - x_bottom <= w_bottom[0] - _cells(1.0)]
        ext = min(fits, key=lambda e: (abs(e - ext), e)) if fits else 0

    ny = depth_bottom + depth_spine + depth_top
    grid = np.full((ny, width), -1, dtype=np.int16)
    y_spine, y_top = depth_bottom, depth_bottom + depth_spine
    grid[y_spine:y_top, :] = index[spine.room_id]
    x = x_bottom
    for spec, w in zip(bottom, w_bottom, strict=True):
        grid[:y_spine, x:x + w] = index[spec.room_id]
        x += w
    x = x_top
    for spec, w in zip(top, w_top, strict=True):
        grid[y_top:, x:x + w] = index[spec.room_id]
        x += w
    if ext:
        if hallway is not None:  # living (first in the bottom band) takes the spine's start
            x0 = x_bottom
            grid[y_spine:y_top, x0:x0 + ext] = index[living.room_id]
        else:  # living takes the end of the top band
            grid[y_top:, width - ext:] = index[living.room_id]

    grid = np.rot90(grid, int(rng.integers(4)))
    if rng.random() < 0.5:
        grid = grid[:, ::-1]
    return np.pad(grid, 1, constant_values=-1).astype(np.int16)
