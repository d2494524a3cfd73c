"""Turning a sampled path into navigational facts: legs, turns, rooms, landmarks, end point.

The smoothed path is cut into *legs* at heading changes of at least
:data:`TURN_THRESHOLD_DEG`; each leg records the turn before it, the rooms it enters and
a landmark passed on the left or right, each with how far along the leg it happens (so
the text can mention them in path order), and what passage it crosses: a ``door`` or an
open-plan ``opening`` (which is not a door). The end point is described by an object
near the goal relative to the final heading, and always by a distance: how far the goal
lies past the entrance of the end room (or past the last turn). This is the factual
skeleton that the prior templates and the LLM Verifier ground the instruction in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from vlnverse.scene.scene_graph import relative_direction
from vlnverse.tasks.context import SceneContext

TURN_THRESHOLD_DEG = 30.0
AROUND_DEG = 150.0
MIN_LEG = 0.3  # legs shorter than this merge into the next one (m)
SIMPLIFY_EPSILON = 0.3  # path simplification tolerance (m)
SAMPLE_STEP = 0.2  # path sampling for room changes (m)
MIN_ROOM_STAY = 0.6  # path length inside a room for it to count as entered (m)
LANDMARK_LATERAL = 1.8  # max distance of a landmark from the leg (m)
END_OBJECT_DISTANCE = 1.5  # max gap between the goal and the end-point object (m)
DOOR_DISTANCE = 0.8  # a leg within this distance of a doorway centre goes through it (m)


def turn_word(delta_rad: float) -> str:
    """``straight`` / ``left`` / ``right`` / ``around`` for a heading change (CCW positive)."""
    deg = math.degrees((delta_rad + math.pi) % (2 * math.pi) - math.pi)
    if abs(deg) < TURN_THRESHOLD_DEG:
        return "straight"
    if abs(deg) >= AROUND_DEG:
        return "around"
    return "left" if deg > 0 else "right"


@dataclass(frozen=True)
class Leg:
    """A straight run of the path.

    Attributes:
        turn: Turn made before the leg (``straight``/``left``/``right``/``around``).
        length: Leg length (m).
        rooms_entered: Room ids first entered during the leg.
        landmark: ``(object_id, side)`` passed during the leg, side ``left``/``right``.
        passage: ``"door"`` when the leg crosses a doorway, ``"opening"`` for an
            open-plan opening between rooms, else ``None``.
        rooms_along: Distance along the leg (m) at which each of ``rooms_entered`` starts.
        landmark_along: Distance along the leg (m) at which the landmark is passed.
    """

    turn: str
    length: float
    rooms_entered: tuple[str, ...] = ()
    landmark: tuple[str, str] | None = None
    passage: str | None = None
    rooms_along: tuple[float, ...] = ()
    landmark_along: float = 0.0

    def events(self) -> list[tuple[str, str]]:
        """``("landmark", object_id)`` and ``("room", room_id)`` in the order walked."""
        items = [(along, "room", room) for along, room in zip(self.rooms_along, self.rooms_entered, strict=True)]
        if self.landmark:
            items.append((self.landmark_along, "landmark", self.landmark[0]))
        return [(kind, ident) for _, kind, ident in sorted(items, key=lambda e: e[0])]


@dataclass(frozen=True)
class PathFacts:
    """The facts of one path.

    Attributes:
        legs: The legs, in order (the first leg's ``turn`` is the initial turn from the
            start heading).
        start_room, end_room: Room ids.
        end_object: ``(object_id, where)`` near the goal; ``where`` is ``ahead``, ``left``,
            ``right`` or ``behind`` relative to the final heading.
        rooms: Every room the path visits, in order (start room first).
        length: Total length (m).
        end_distance: Path length (m) from where the path enters the end room to the
            goal; from the start of the last leg when the end room is the start room.
        end_entered: Whether the path enters the end room (else it starts there).
    """

    legs: tuple[Leg, ...]
    start_room: str | None
    end_room: str | None
    end_object: tuple[str, str] | None
    rooms: tuple[str, ...]
    length: float
    end_distance: float = 0.0
    end_entered: bool = False

    @property
    def landmarks(self) -> tuple[str, ...]:
        ids = [leg.landmark[0] for leg in self.legs if leg.landmark]
        if self.end_object:
            ids.append(self.end_object[0])
        return tuple(dict.fromkeys(ids))


def simplify(points: np.ndarray, epsilon: float = SIMPLIFY_EPSILON) -> np.ndarray:
    """Ramer–Douglas–Peucker simplification in xy (removes the small wiggles of a
    smoothed grid path around door frames and corners)."""
    if len(points) <= 2:
        return points
    keep = np.zeros(len(points), dtype=bool)
    keep[[0, -1]] = True
    stack = [(0, len(points) - 1)]
    while stack:
        i, j = stack.pop()
        if j <= i + 1:
            continue
        d = _point_segment_distance(points[i + 1:j, :2], points[i, :2], points[j, :2])
        k = int(np.argmax(d))
        if d[k] > epsilon:
            keep[i + 1 + k] = True
            stack += [(i, i + 1 + k), (i + 1 + k, j)]
    return points[keep]


def _segments(points: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Straight runs of the simplified path; bends under the turn threshold and very short
    runs merge into their neighbours."""
    pts = [p for i, p in enumerate(points) if i == 0 or np.linalg.norm(p[:2] - points[i - 1][:2]) > 1e-6]
    pts = list(simplify(np.asarray(pts)))
    segments: list[list[np.ndarray]] = []
    for a, b in zip(pts[:-1], pts[1:], strict=False):
        if segments:
            prev_a, prev_b = segments[-1][0], segments[-1][-1]
            h_prev = math.atan2(prev_b[1] - prev_a[1], prev_b[0] - prev_a[0])
            h_new = math.atan2(b[1] - a[1], b[0] - a[0])
            if turn_word(h_new - h_prev) == "straight" or np.linalg.norm(prev_b[:2] - prev_a[:2]) < MIN_LEG:
                segments[-1].append(b)
                continue
        segments.append([a, b])
    return [(s[0], s[-1]) for s in segments]


def describe_path(context: SceneContext, points: np.ndarray, start_yaw: float) -> PathFacts:
    """The :class:`PathFacts` of a path walked from heading ``start_yaw``."""
    points = np.asarray(points, dtype=np.float64)
    segments = _segments(points)
    # rooms along the path, debounced
    dense, owner, offset = _densify(segments)
    room_idx = context.rooms_along(dense)
    visits = _room_visits(room_idx)
    start_room = context.room_at(points[0])
    if start_room is None and visits:  # starting in a doorway: the first room reached is the start room
        start_room = context.room_ids[visits[0][0]]
    visited = [start_room] if start_room else []
    entered_by_leg: dict[int, list[tuple[float, str]]] = {}
    entered_at: dict[str, int] = {}  # dense index of the last entry into each room
    for room, sample in visits:
        room_id = context.room_ids[room]
        if not visited or visited[-1] != room_id:
            visited.append(room_id)
            if room_id != start_room or len(visited) > 1:
                entered_by_leg.setdefault(int(owner[sample]), []).append((float(offset[sample]), room_id))
                entered_at[room_id] = sample
    legs: list[Leg] = []
    heading = start_yaw
    used: set[str] = set()
    for index, (a, b) in enumerate(segments):
        new_heading = math.atan2(b[1] - a[1], b[0] - a[0])
        turn = turn_word(new_heading - heading)
        heading = new_heading
        landmark = _landmark(context, a, b, used)
        if landmark:
            used.add(landmark[0])
        entries = entered_by_leg.get(index, [])
        legs.append(Leg(turn=turn, length=float(np.linalg.norm(b[:2] - a[:2])),
                        rooms_entered=tuple(r for _, r in entries), landmark=landmark[:2] if landmark else None,
                        passage=_passage(context, a, b), rooms_along=tuple(s for s, _ in entries),
                        landmark_along=landmark[2] if landmark else 0.0))
    end_room = context.room_at(points[-1])
    end_object = _end_object(context, points[-1], heading, end_room)
    total = float(np.linalg.norm(np.diff(points[:, :2], axis=0), axis=1).sum())
    entered = end_room in entered_at and end_room != start_room
    if entered:
        travelled = float(np.linalg.norm(np.diff(dense[: entered_at[end_room] + 1, :2], axis=0), axis=1).sum())
        end_distance = max(total - travelled, 0.0)
    else:
        end_distance = legs[-1].length if legs else 0.0
    return PathFacts(legs=tuple(legs), start_room=start_room, end_room=end_room, end_object=end_object,
                     rooms=tuple(visited), length=total, end_distance=end_distance, end_entered=entered)


def _passage(context: SceneContext, a: np.ndarray, b: np.ndarray) -> str | None:
    """``door``, ``opening`` (open plan) or ``None``: what the leg from ``a`` to ``b`` goes through."""
    near = [d for d in context.scene.doors
            if _point_segment_distance(np.asarray([d.position[:2]]), a[:2], b[:2])[0] <= DOOR_DISTANCE]
    if not near:
        return None
    return "opening" if all(d.open_plan for d in near) else "door"


def _densify(segments) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Points every ``SAMPLE_STEP`` along the segments, the segment of each, and its
    distance from that segment's start."""
    pts, owner, offset = [], [], []
    for index, (a, b) in enumerate(segments):
        length = float(np.linalg.norm(b[:2] - a[:2]))
        n = max(int(length / SAMPLE_STEP), 1)
        t = np.linspace(0.0, 1.0, n, endpoint=False)
        pts.append(a[None, :] + (b - a)[None, :] * t[:, None])
        owner.extend([index] * n)
        offset.extend((t * length).tolist())
    pts.append(segments[-1][1][None, :])
    owner.append(len(segments) - 1)
    offset.append(float(np.linalg.norm(segments[-1][1][:2] - segments[-1][0][:2])))
    return np.concatenate(pts), np.asarray(owner), np.asarray(offset)


def _room_visits(room_idx: np.ndarray) -> list[tuple[int, int]]:
    """``(room index, dense sample index where it starts)`` for stays of at least
    MIN_ROOM_STAY (or the last one)."""
    visits = []
    n = len(room_idx)
    i = 0
    while i < n:
        j = i
        while j + 1 < n and room_idx[j + 1] == room_idx[i]:
            j += 1
        stay = (j - i + 1) * SAMPLE_STEP
        if room_idx[i] >= 0 and (stay >= MIN_ROOM_STAY or j == n - 1):
            visits.append((int(room_idx[i]), i))
        i = j + 1
    return visits


def _point_segment_distance(points: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ab = b - a
    denom = float(ab @ ab) or 1e-12
    t = np.clip(((points - a) @ ab) / denom, 0.0, 1.0)
    return np.linalg.norm(points - (a + t[:, None] * ab), axis=1)


def _landmark(context: SceneContext, a: np.ndarray, b: np.ndarray, used: set[str]) -> tuple[str, str, float] | None:
    """The closest large object beside the leg (not behind its start or past its end):
    ``(object_id, side, distance along the leg)``."""
    ab = b[:2] - a[:2]
    length = float(np.linalg.norm(ab))
    if length < 1.0:
        return None
    direction = ab / length
    best = None
    for info in context.objects.values():
        if not info.landmark or info.object_id in used:
            continue
        rel = info.center[:2] - a[:2]
        along = float(rel @ direction)
        lateral = float(direction[0] * rel[1] - direction[1] * rel[0])  # > 0: left
        half = 0.5 * float(np.max(info.aabb_max[:2] - info.aabb_min[:2]))
        if not (0.3 <= along <= length - 0.3) or abs(lateral) - half > LANDMARK_LATERAL or abs(lateral) < 0.2:
            continue
        if context.room_at(a + (b - a) * (along / length)) != info.room_id:
            continue
        score = abs(lateral) - half
        if best is None or (score, info.object_id) < (best[0], best[1]):
            best = (score, info.object_id, "left" if lateral > 0 else "right", along)
    return (best[1], best[2], best[3]) if best else None


def _end_object(context: SceneContext, goal: np.ndarray, heading: float, room: str | None) -> tuple[str, str] | None:
    best = None
    for info in context.objects.values():
        if not info.landmark or info.room_id != room:
            continue
        gap = np.maximum(0.0, np.maximum(info.aabb_min[:2] - goal[:2], goal[:2] - info.aabb_max[:2]))
        distance = float(np.hypot(*gap))
        if distance <= END_OBJECT_DISTANCE and (best is None or (distance, info.object_id) < best[:2]):
            best = (distance, info.object_id)
    if best is None:
        return None
    where = relative_direction((float(goal[0]), float(goal[1]), heading), context.objects[best[1]].center, 45.0)
    return best[1], where
