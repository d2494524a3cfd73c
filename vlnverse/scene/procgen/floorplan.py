"""Floor plans: rooms, walls, doors and windows derived from a label grid.

:func:`sample_floorplan` samples a room program, lays it out (:mod:`.layout`) and turns
the label grid into geometry-ready records: every boundary between two labels becomes a
wall segment (none for open-plan living/dining connections), doors are chosen so the
door graph is a spanning tree that follows the adjacency rules (bedrooms and bathrooms
open onto hallways or living space, the kitchen onto the dining room), plus a few
extra connections, an entrance door and windows in exterior walls.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from vlnverse.errors import SceneError
from vlnverse.scene.procgen.layout import CELL, layout_program
from vlnverse.scene.procgen.program import RoomSpec, sample_program

DOOR_HEIGHT = 2.1
DOOR_MIN_WIDTH, DOOR_MAX_WIDTH = 0.8, 1.2
LEAF_THICKNESS = 0.04

#: Which neighbours a room prefers to open onto, best first (others rank last).
_DOOR_PREFERENCES = {
    "bedroom": ("hallway", "living_room", "dining_room"),
    "bathroom": ("hallway", "living_room", "dining_room"),
    "study": ("hallway", "living_room", "dining_room"),
    "kitchen": ("dining_room", "living_room", "hallway"),
    "dining_room": ("living_room", "hallway", "kitchen"),
    "living_room": ("hallway", "dining_room"),
    "laundry": ("kitchen", "hallway", "living_room"),
    "storage": ("hallway", "kitchen", "living_room"),
    "hallway": ("living_room",),
}
_NO_WINDOWS = ("hallway", "storage")


@dataclass(frozen=True)
class Segment:
    """A maximal straight boundary between two labels of the grid.

    Attributes:
        vertical: True for a line x = const (u runs along +y), else y = const (u along +x).
        line: The constant coordinate (m).
        start, end: Extent along u (m).
        neg, pos: Room index on the negative side (smaller x or y) and positive side;
            -1 for outside.
    """

    vertical: bool
    line: float
    start: float
    end: float
    neg: int
    pos: int

    @property
    def length(self) -> float:
        return self.end - self.start

    def point(self, u: float) -> np.ndarray:
        """World xy of the point at distance ``u`` from the segment start."""
        along = self.start + u
        return np.array([self.line, along]) if self.vertical else np.array([along, self.line])

    def normal_into(self, room: int) -> np.ndarray:
        """Unit xy normal pointing into ``room`` (one of the two sides)."""
        sign = 1.0 if room == self.pos else -1.0
        return np.array([sign, 0.0]) if self.vertical else np.array([0.0, sign])

    @property
    def rooms(self) -> tuple[int, int]:
        return (self.neg, self.pos)


@dataclass(frozen=True)
class Opening:
    """A hole in a wall: ``u0..u1`` along the segment, ``z0..z1`` in height."""

    u0: float
    u1: float
    z0: float
    z1: float
    kind: str  # "door" or "window"


@dataclass(frozen=True)
class Wall:
    """A wall on a segment (thickness centred on the line) with its openings."""

    segment: Segment
    thickness: float
    owner: int
    exterior: bool
    openings: tuple[Opening, ...] = ()


@dataclass(frozen=True)
class DoorPlan:
    """A connection between rooms: doorway (optionally with a leaf) or open plan.

    Attributes:
        door_id: ``door_<k>``.
        segment: The segment the opening is in (for open plan: the longest shared one).
        u0, u1: Opening extent along the segment.
        rooms: Room indices it connects (one for the entrance).
        open_plan: True when no wall separates the rooms.
        leaf: Whether a door leaf is authored.
        state: ``"open"``/``"closed"`` for a leaf, else None.
        swing_room: Room the open leaf swings into (-1 if none).
        hinge_at_start: Whether the leaf hinges at ``u0`` (else at ``u1``).
    """

    door_id: str
    segment: Segment
    u0: float
    u1: float
    rooms: tuple[int, ...]
    open_plan: bool = False
    leaf: bool = False
    state: str | None = None
    swing_room: int = -1
    hinge_at_start: bool = True

    @property
    def width(self) -> float:
        return round(self.u1 - self.u0, 6)

    @property
    def center(self) -> np.ndarray:
        return self.segment.point((self.u0 + self.u1) / 2.0)


@dataclass(frozen=True)
class RoomPlan:
    """A room's footprint: rectangles (x0, y0, x1, y1) tiling its grid cells."""

    index: int
    room_id: str
    room_type: str
    rects: tuple[tuple[float, float, float, float], ...]

    @property
    def area(self) -> float:
        return float(sum((x1 - x0) * (y1 - y0) for x0, y0, x1, y1 in self.rects))


@dataclass(frozen=True)
class FloorPlan:
    """A complete floor plan.

    Attributes:
        rooms: Rooms, index = label in ``labels``.
        walls: Walls with their openings.
        doors: Doorways, open-plan connections and the entrance.
        labels: The (ny, nx) label grid (cell :data:`CELL`, origin (0, 0)).
        wall_height: Ceiling height (m).
        interior_thickness, exterior_thickness: Wall thicknesses (m).
    """

    rooms: tuple[RoomPlan, ...]
    walls: tuple[Wall, ...]
    doors: tuple[DoorPlan, ...]
    labels: np.ndarray = field(repr=False)
    wall_height: float
    interior_thickness: float
    exterior_thickness: float

    @property
    def footprint_area(self) -> float:
        return float(np.count_nonzero(self.labels >= 0)) * CELL * CELL

    def room_graph_signature(self) -> str:
        """A canonical string of the room-type adjacency via doors (for diversity stats)."""
        edges = sorted(
            "-".join(sorted(self.rooms[r].room_type for r in d.rooms)) + ("~" if d.open_plan else "")
            for d in self.doors
        )
        types = sorted(r.room_type for r in self.rooms)
        return "|".join(types) + "#" + ",".join(edges)


def extract_segments(labels: np.ndarray) -> list[Segment]:
    """All maximal boundary segments between different labels (cells of size CELL)."""
    segments: list[Segment] = []
    ny, nx = labels.shape
    for vertical in (True, False):
        grid = labels if vertical else labels.T
        for c in range(grid.shape[1] - 1):
            neg, pos = grid[:, c], grid[:, c + 1]
            diff = np.flatnonzero(neg != pos)
            if diff.size == 0:
                continue
            run_start = diff[0]
            for k in range(1, diff.size + 1):
                end_run = (
                    k == diff.size
                    or diff[k] != diff[k - 1] + 1
                    or neg[diff[k]] != neg[diff[k - 1]]
                    or pos[diff[k]] != pos[diff[k - 1]]
                )
                if end_run:
                    r0, r1 = run_start, diff[k - 1] + 1
                    segments.append(Segment(vertical, round((c + 1) * CELL, 6), round(r0 * CELL, 6),
                                            round(r1 * CELL, 6), int(neg[r0]), int(pos[r0])))
                    if k < diff.size:
                        run_start = diff[k]
    return segments


def room_rects(labels: np.ndarray, room: int) -> tuple[tuple[float, float, float, float], ...]:
    """Decompose a room's cells into rectangles (row runs merged down columns)."""
    mask = labels == room
    rects: list[list[int]] = []  # x0, y0, x1, y1 in cells; open ones may grow in y
    open_runs: dict[tuple[int, int], list[int]] = {}
    for r in range(mask.shape[0]):
        cols = np.flatnonzero(mask[r])
        runs: list[tuple[int, int]] = []
        if cols.size:
            breaks = np.flatnonzero(np.diff(cols) > 1)
            starts = np.concatenate([[cols[0]], cols[breaks + 1]])
            ends = np.concatenate([cols[breaks], [cols[-1]]]) + 1
            runs = list(zip(starts.tolist(), ends.tolist(), strict=True))
        next_open: dict[tuple[int, int], list[int]] = {}
        for run in runs:
            rect = open_runs.get(run)
            if rect is None:
                rect = [run[0], r, run[1], r + 1]
                rects.append(rect)
            else:
                rect[3] = r + 1
            next_open[run] = rect
        open_runs = next_open
    return tuple(
        (round(x0 * CELL, 6), round(y0 * CELL, 6), round(x1 * CELL, 6), round(y1 * CELL, 6))
        for x0, y0, x1, y1 in rects
    )


def _snap(value: float) -> float:
    return round(round(value / 0.05) * 0.05, 6)


class _DoorPlanner:
    """Chooses connections and places openings on segments."""

    def __init__(self, rng: np.random.Generator, specs: list[RoomSpec], segments: list[Segment],
                 margin: float) -> None:
        self.rng = rng
        self.specs = specs
        self.segments = segments
        self.margin = margin
        self.shared: dict[tuple[int, int], list[int]] = {}
        for i, seg in enumerate(segments):
            if seg.neg >= 0 and seg.pos >= 0:
                self.shared.setdefault(tuple(sorted(seg.rooms)), []).append(i)
        self.doors: list[DoorPlan] = []
        self.open_pairs: set[tuple[int, int]] = set()

    def usable_segment(self, pair: tuple[int, int], width: float = DOOR_MIN_WIDTH) -> int | None:
        """The longest segment between ``pair`` that fits a door of ``width``, if any."""
        best = None
        for i in self.shared.get(pair, []):
            if self.segments[i].length - 2 * self.margin >= width - 1e-9 and (
                best is None or self.segments[i].length > self.segments[best].length
            ):
                best = i
        return best

    def add_door(self, rooms: tuple[int, ...], seg_index: int, *, leaf_p: float) -> None:
        seg = self.segments[seg_index]
        avail = seg.length - 2 * self.margin
        widest = max(DOOR_MIN_WIDTH, min(DOOR_MAX_WIDTH, avail))
        width = min(max(_snap(self.rng.uniform(DOOR_MIN_WIDTH, widest)), DOOR_MIN_WIDTH), widest)
        u0 = _snap(self.margin + self.rng.uniform(0.0, max(0.0, avail - width)))
        u0 = min(max(u0, self.margin), seg.length - self.margin - width)
        leaf = bool(self.rng.random() < leaf_p)
        swing = -1
        if leaf and len(rooms) == 2:
            a, b = rooms
            swing = a if self.specs[b].room_type == "hallway" else b
        self.doors.append(DoorPlan(
            f"door_{len(self.doors)}", seg, round(u0, 6), round(u0 + width, 6), rooms,
            leaf=leaf, state=("open" if len(rooms) == 2 else "closed") if leaf else None,
            swing_room=swing, hinge_at_start=bool(self.rng.random() < 0.5),
        ))

    def add_open_plan(self, pair: tuple[int, int]) -> None:
        seg_index = max(self.shared[pair], key=lambda i: (self.segments[i].length, -i))
        seg = self.segments[seg_index]
        self.open_pairs.add(pair)
        self.doors.append(DoorPlan(f"door_{len(self.doors)}", seg, 0.0, seg.length, pair,
                                   open_plan=True))

    def connect_all(self) -> None:
        """Spanning tree over rooms by door preference, then extra connections."""
        types = [s.room_type for s in self.specs]
        root = types.index("hallway") if "hallway" in types else types.index("living_room")
        if "dining_room" in types:
            pair = tuple(sorted((types.index("living_room"), types.index("dining_room"))))
            seg = self.usable_segment(pair, 2.0)
            if seg is not None and self.rng.random() < 0.5:
                self.add_open_plan(pair)
        connected = {root}
        for a, b in self.open_pairs:
            if a in connected or b in connected:
                connected |= {a, b}
        while len(connected) < len(self.specs):
            best = None
            for room in range(len(self.specs)):
                if room in connected:
                    continue
                prefs = _DOOR_PREFERENCES[types[room]]
                for other in sorted(connected):
                    pair = tuple(sorted((room, other)))
                    seg = self.usable_segment(pair)
                    if seg is None:
                        continue
                    rank = prefs.index(types[other]) if types[other] in prefs else len(prefs)
                    key = (rank, room, other)
                    if best is None or key < best[0]:
                        best = (key, room, other, seg)
            if best is None:
                raise SceneError("floor plan has rooms that no door can connect")
            _, room, other, seg = best
            self.add_door(tuple(sorted((room, other))), seg, leaf_p=0.6)
            connected.add(room)
            for a, b in self.open_pairs:
                if a in connected or b in connected:
                    connected |= {a, b}
        if "kitchen" in types and "dining_room" in types:
            pair = tuple(sorted((types.index("kitchen"), types.index("dining_room"))))
            already = any(set(d.rooms) == set(pair) for d in self.doors)
            seg = self.usable_segment(pair)
            if not already and seg is not None and self.rng.random() < 0.7:
                self.add_door(pair, seg, leaf_p=0.0)
        self._entrance(root)

    def _entrance(self, root: int) -> None:
        order = [root] + [i for i, s in enumerate(self.specs)
                          if s.room_type in ("living_room", "dining_room", "kitchen") and i != root]
        for room in order:
            candidates = [i for i, s in enumerate(self.segments) if room in s.rooms and -1 in s.rooms
                          and s.length - 2 * self.margin >= 0.9]
            if candidates:
                seg = max(candidates, key=lambda i: (self.segments[i].length, -i))
                self.add_door((room,), seg, leaf_p=1.0)
                return


def _place_windows(rng: np.random.Generator, specs: list[RoomSpec], segments: list[Segment],
                   doors: list[DoorPlan], margin: float) -> dict[int, list[Opening]]:
    """Windows on exterior segments, avoiding doors; returns openings per segment index."""
    out: dict[int, list[Opening]] = {}
    door_spans: dict[int, list[tuple[float, float]]] = {}
    seg_index = {id(s): i for i, s in enumerate(segments)}
    for d in doors:
        door_spans.setdefault(seg_index[id(d.segment)], []).append((d.u0, d.u1))
    for room, spec in enumerate(specs):
        if spec.room_type in _NO_WINDOWS:
            continue
        exterior = [i for i, s in enumerate(segments) if room in s.rooms and -1 in s.rooms]
        exterior.sort(key=lambda i: (-segments[i].length, i))
        placed = 0
        for i in exterior:
            if placed >= 2:
                break
            seg = segments[i]
            lo, hi = margin, seg.length - margin
            for u0, u1 in door_spans.get(i, []):  # keep the larger free side of a door
                if u0 - lo >= hi - u1:
                    hi = min(hi, u0 - 0.3)
                else:
                    lo = max(lo, u1 + 0.3)
            if hi - lo < 0.8:
                continue
            width = _snap(rng.uniform(0.8, min(1.8, hi - lo)))
            width = min(max(width, 0.8), hi - lo)
            start = _snap(lo + rng.uniform(0.0, hi - lo - width))
            start = min(max(start, lo), hi - width)
            sill = 1.4 if spec.room_type == "bathroom" else _snap(rng.uniform(0.8, 1.0))
            top = 1.9 if spec.room_type == "bathroom" else 2.1
            out.setdefault(i, []).append(Opening(round(start, 6), round(start + width, 6), sill, top, "window"))
            placed += 1
    return out


def plan_floor(rng: np.random.Generator, specs: list[RoomSpec], labels: np.ndarray) -> FloorPlan:
    """Turn a label grid into a :class:`FloorPlan` (walls, doors, windows)."""
    segments = extract_segments(labels)
    t_int = _snap(rng.uniform(0.10, 0.15))
    t_ext = _snap(rng.uniform(0.15, 0.20))
    height = round(float(rng.uniform(2.6, 3.0)), 2)
    margin = t_ext / 2.0 + 0.15
    planner = _DoorPlanner(rng, specs, segments, margin)
    planner.connect_all()
    doors = planner.doors
    windows = _place_windows(rng, specs, segments, doors, margin)
    seg_index = {id(s): i for i, s in enumerate(segments)}
    door_openings: dict[int, list[Opening]] = {}
    for d in doors:
        if not d.open_plan:
            door_openings.setdefault(seg_index[id(d.segment)], []).append(
                Opening(d.u0, d.u1, 0.0, DOOR_HEIGHT, "door"))
    walls = []
    for i, seg in enumerate(segments):
        pair = tuple(sorted(seg.rooms))
        if pair in planner.open_pairs:
            continue
        exterior = -1 in seg.rooms
        owner = max(seg.rooms) if exterior else min(seg.rooms)
        openings = sorted(door_openings.get(i, []) + windows.get(i, []), key=lambda o: o.u0)
        walls.append(Wall(seg, t_ext if exterior else t_int, owner, exterior, tuple(openings)))
    rooms = tuple(RoomPlan(i, s.room_id, s.room_type, room_rects(labels, i)) for i, s in enumerate(specs))
    return FloorPlan(rooms, tuple(walls), tuple(doors), labels, height, t_int, t_ext)


def sample_floorplan(rng: np.random.Generator, num_rooms: int) -> FloorPlan:
    """Sample a house with ``num_rooms`` rooms: program, layout and openings."""
    specs = sample_program(rng, num_rooms)
    labels = layout_program(rng, specs)
    present = set(np.unique(labels[labels >= 0]).tolist())
    if present != set(range(len(specs))):
        raise SceneError("layout lost a room")
    return plan_floor(rng, specs, labels)


def segment_box(seg: Segment, u0: float, u1: float, thickness: float) -> tuple[float, float, float, float]:
    """World (x0, y0, x1, y1) of the wall band of ``seg`` between ``u0`` and ``u1``."""
    a, b = seg.start + u0, seg.start + u1
    h = thickness / 2.0
    if seg.vertical:
        return (seg.line - h, a, seg.line + h, b)
    return (a, seg.line - h, b, seg.line + h)


def wall_pieces(wall: Wall, height: float) -> list[tuple[float, float, float, float, float, float]]:
    """Solid boxes (x0, y0, z0, x1, y1, z1) of a wall, leaving its openings as holes.

    The first and last pieces reach half a thickness past the segment ends so corners
    and T-junctions close.
    """
    seg, t = wall.segment, wall.thickness
    cuts = sorted({0.0, seg.length, *(o.u0 for o in wall.openings), *(o.u1 for o in wall.openings)})
    pieces = []
    for k in range(len(cuts) - 1):
        u0, u1 = cuts[k], cuts[k + 1]
        if u1 - u0 < 1e-6:
            continue
        mid = (u0 + u1) / 2.0
        hole = next((o for o in wall.openings if o.u0 <= mid <= o.u1), None)
        spans = [(0.0, height)] if hole is None else [(0.0, hole.z0), (hole.z1, height)]
        ext0 = -t / 2.0 if math.isclose(u0, 0.0) else 0.0
        ext1 = t / 2.0 if math.isclose(u1, seg.length) else 0.0
        x0, y0, x1, y1 = segment_box(seg, u0 + ext0, u1 + ext1, t)
        for z0, z1 in spans:
            if z1 - z0 > 1e-6:
                pieces.append((x0, y0, z0, x1, y1, z1))
    return pieces


def leaf_rect(door: DoorPlan, interior_thickness: float) -> tuple[float, float, float, float]:
    """World (x0, y0, x1, y1) footprint of a door's leaf.

    An entrance leaf closes its opening; an interior leaf stands open at 90 degrees in
    ``swing_room``, beside its hinge jamb, so it narrows neither the opening nor a wall.
    """
    seg = door.segment
    if len(door.rooms) == 1:
        return segment_box(seg, door.u0 + 0.005, door.u1 - 0.005, LEAF_THICKNESS)
    n = seg.normal_into(door.swing_room)
    u_lo, u_hi = ((door.u0 - LEAF_THICKNESS - 0.005, door.u0 - 0.005) if door.hinge_at_start
                  else (door.u1 + 0.005, door.u1 + LEAF_THICKNESS + 0.005))
    near = interior_thickness / 2.0 + 0.005
    far = near + door.width - 0.01
    a, b = seg.point(u_lo) + n * near, seg.point(u_hi) + n * far
    return (float(min(a[0], b[0])), float(min(a[1], b[1])), float(max(a[0], b[0])), float(max(a[1], b[1])))
