"""Furnishing a floor plan: room-type rules, collision-free placement, supports.

Furniture goes against walls (beds with nightstands beside them, counters along kitchen
walls, toilets and sinks in bathrooms), or in the room (dining table with chairs around
it, a sofa facing the TV across a coffee table); small objects stand **on** support
surfaces. Door swings, doorways and open-plan connections are kept clear, and every
blocking object is kept only if all doorways of its room stay connected for the agent.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from vlnverse.scene.procgen.catalog import CATEGORIES, Built, Surface
from vlnverse.scene.procgen.floorplan import DOOR_HEIGHT, DoorPlan, FloorPlan, leaf_rect
from vlnverse.scene.procgen.navgrid import RES, NavGrid

#: Objects must clear the agent's body band (m above the floor) to not block it.
BODY_BAND = (0.10, 1.50)
WALL_GAP = 0.02


@dataclass(frozen=True)
class PlacedObject:
    """One furnished object instance (world frame).

    Attributes:
        object_id: Unique id ``<category>_<k>``.
        category: Catalog category.
        room: Room index.
        color, material, state: Annotations (state ``None`` where not applicable).
        position: World position of the footprint centre at the object's bottom.
        yaw: Rotation about +Z (radians) of the object's front (+X local).
        size: (depth, width, height) in the object's frame.
        built: Geometry parts and support surfaces (object frame).
        mass: kg.
        movable: Rigid body or static collider.
        support: Object id it stands on, or None for the floor/wall.
    """

    object_id: str
    category: str
    room: int
    color: str
    material: str
    state: str | None
    position: tuple[float, float, float]
    yaw: float
    size: tuple[float, float, float]
    built: Built
    mass: float
    movable: bool
    support: str | None = None

    @property
    def footprint(self) -> tuple[float, float, float, float]:
        return _footprint(self.position[:2], self.size, self.yaw)

    @property
    def z_range(self) -> tuple[float, float]:
        return (self.position[2], self.position[2] + self.size[2])

    def world_surfaces(self) -> list[tuple[float, tuple[float, float, float, float]]]:
        """Support surfaces as (world z, world rect)."""
        out = []
        for s in self.built.surfaces:
            corners = np.array([[s.x0, s.y0], [s.x1, s.y1]])
            c, si = math.cos(self.yaw), math.sin(self.yaw)
            rot = corners @ np.array([[c, si], [-si, c]]) + np.array(self.position[:2])
            out.append((self.position[2] + s.z, (float(rot[:, 0].min()), float(rot[:, 1].min()),
                                                 float(rot[:, 0].max()), float(rot[:, 1].max()))))
        return out


def _footprint(center, size, yaw) -> tuple[float, float, float, float]:
    quarter = int(round(yaw / (math.pi / 2))) % 2
    dx, dy = (size[0], size[1]) if quarter == 0 else (size[1], size[0])
    return (center[0] - dx / 2, center[1] - dy / 2, center[0] + dx / 2, center[1] + dy / 2)


@dataclass(frozen=True)
class _Face:
    """A wall face inside a room: a line offset from a segment, with an inward normal."""

    origin: np.ndarray  # world xy of u = 0
    direction: np.ndarray  # unit xy along u
    normal: np.ndarray  # unit xy into the room
    length: float
    windows: tuple[tuple[float, float, float], ...]  # (u0, u1, sill)


class Furnisher:
    """Places the objects of one house.

    Args:
        plan: The floor plan.
        rng: Randomness for this house.
        agent_radius: Radius kept navigable between doorways.
    """

    def __init__(self, plan: FloorPlan, rng: np.random.Generator, agent_radius: float = 0.3) -> None:
        self.plan = plan
        self.rng = rng
        self.radius = agent_radius + 0.05
        self.grid = NavGrid(plan.labels)
        self.objects: list[PlacedObject] = []
        self._counters: dict[str, int] = {}
        self._surface_items: dict[str, list[tuple[float, float, float, float]]] = {}
        self.doors: list[DoorPlan] = []
        self.faces: dict[int, list[_Face]] = {i: [] for i in range(len(plan.rooms))}
        self.approach: dict[int, list[tuple[float, float]]] = {i: [] for i in range(len(plan.rooms))}
        self._rasterize_walls()
        self._resolve_doors()

    # ----------------------------------------------------------------- structure

    def _rasterize_walls(self) -> None:
        from vlnverse.scene.procgen.floorplan import wall_pieces

        for wall in self.plan.walls:
            for x0, y0, z0, x1, y1, z1 in wall_pieces(wall, self.plan.wall_height):
                if z0 < BODY_BAND[1] and z1 > BODY_BAND[0]:
                    self.grid.block((x0, y0, x1, y1))
            seg, h = wall.segment, wall.thickness / 2.0
            for room in seg.rooms:
                if room < 0:
                    continue
                normal = seg.normal_into(room)
                direction = np.array([0.0, 1.0]) if seg.vertical else np.array([1.0, 0.0])
                origin = seg.point(0.0) + normal * h
                windows = tuple((o.u0, o.u1, o.z0) for o in wall.openings if o.kind == "window")
                doors = tuple((o.u0, o.u1, 0.0) for o in wall.openings if o.kind == "door")
                self.faces[room].append(_Face(origin, direction, normal, seg.length, windows + doors))

    def _thickness(self, door: DoorPlan) -> float:
        return self.plan.exterior_thickness if len(door.rooms) == 1 else self.plan.interior_thickness

    def _resolve_doors(self) -> None:
        """Reserve door zones, drop leaves that would hit something, note approach points."""
        for door in self.plan.doors:
            seg = door.segment
            t = self._thickness(door)
            if door.leaf:
                rect = leaf_rect(door, self.plan.interior_thickness)
                if len(door.rooms) == 2 and not self.grid.is_free(rect, door.swing_room, allow_keepout=False):
                    door = dataclasses.replace(door, leaf=False, state=None, swing_room=-1)
                else:
                    self.grid.block(rect)
            self.doors.append(door)
            for room in door.rooms:
                n = seg.normal_into(room)
                if door.open_plan:
                    mid = door.width / 2.0
                    u0, u1 = max(0.0, mid - 0.8), min(door.width, mid + 0.8)
                    depth = 1.0
                else:
                    u0, u1 = door.u0 - 0.15, door.u1 + 0.15
                    depth = max(1.0, door.width + 0.3) if room == door.swing_room else 1.0
                a, b = seg.point(u0) + n * (t / 2.0), seg.point(u1) + n * (t / 2.0 + depth)
                self.grid.reserve((min(a[0], b[0]), min(a[1], b[1]), max(a[0], b[0]), max(a[1], b[1])))
                centre = seg.point((door.u0 + door.u1) / 2.0) + n * (t / 2.0 + 0.45)
                self.approach[room].append((float(centre[0]), float(centre[1])))

    # ----------------------------------------------------------------- primitives

    def _new(self, category: str, room: int, position, yaw: float, size, *, support: str | None = None,
             look: tuple[str, str] | None = None) -> PlacedObject:
        cat = CATEGORIES[category]
        k = self._counters.get(category, 0)
        color, material = look or (
            cat.colors[int(self.rng.integers(len(cat.colors)))],
            cat.materials[int(self.rng.integers(len(cat.materials)))],
        )
        state = cat.states[int(self.rng.integers(len(cat.states)))] if cat.states else None
        mass = round(float(self.rng.uniform(*cat.mass)), 2)
        obj = PlacedObject(f"{category}_{k}", category, room, color, material, state,
                           tuple(round(float(v), 4) for v in position), round(float(yaw), 6),
                           tuple(float(v) for v in size), cat.build(np.asarray(size)), mass, cat.movable, support)
        return obj

    def _commit(self, obj: PlacedObject, *, check_paths: bool = True) -> bool:
        """Add ``obj`` if its footprint is free and the room's doorways stay connected."""
        blocks = obj.z_range[0] < BODY_BAND[1] and obj.z_range[1] > BODY_BAND[0] and obj.support is None
        if blocks or obj.support is None:
            if not self.grid.is_free(obj.footprint, obj.room):
                return False
        if blocks:
            sl = self.grid.cells(obj.footprint)
            saved = self.grid.blocked[sl].copy()
            self.grid.blocked[sl] = True
            if check_paths and not self._room_connected(obj.room):
                self.grid.blocked[sl] = saved
                return False
        self._counters[obj.category] = self._counters.get(obj.category, 0) + 1
        self.objects.append(obj)
        return True

    def _room_connected(self, room: int) -> bool:
        points = self.approach[room]
        if not points:
            return True
        rects = [r for r in self.plan.rooms[room].rects]
        bbox = (min(r[0] for r in rects), min(r[1] for r in rects), max(r[2] for r in rects),
                max(r[3] for r in rects))
        window = self.grid.window_around(bbox, 1.0)
        return self.grid.connected(points, self.radius, window)

    def against_wall(self, category: str, room: int, *, tries: int = 40, size=None,
                     look=None) -> PlacedObject | None:
        """Place with the back against a wall face of ``room``, front facing in."""
        cat = CATEGORIES[category]
        size = size if size is not None else cat.sample_size(self.rng)
        faces = self.faces[room]
        if not faces:
            return None
        for _ in range(tries):
            face = faces[int(self.rng.integers(len(faces)))]
            if face.length < size[1] + 0.1:
                continue
            u = float(self.rng.uniform(size[1] / 2 + 0.05, face.length - size[1] / 2 - 0.05))
            u = round(u / RES) * RES
            if any(u + size[1] / 2 > w0 and u - size[1] / 2 < w1 and size[2] > sill - 0.05
                   for w0, w1, sill in face.windows):
                continue
            centre = face.origin + face.direction * u + face.normal * (size[0] / 2 + WALL_GAP + RES)
            yaw = math.atan2(face.normal[1], face.normal[0])
            obj = self._new(category, room, (centre[0], centre[1], 0.0), yaw, size, look=look)
            if self._commit(obj):
                return obj
        return None

    def wall_mounted(self, category: str, room: int, z: float, *, near: PlacedObject | None = None,
                     tries: int = 30) -> PlacedObject | None:
        """Hang a flat object on a wall at height ``z`` (above ``near`` when given)."""
        cat = CATEGORIES[category]
        size = cat.sample_size(self.rng)
        candidates = self.faces[room]
        for _ in range(tries):
            if near is not None:
                back = np.array(near.position[:2]) - np.array([math.cos(near.yaw), math.sin(near.yaw)]) * (
                    near.size[0] / 2 + WALL_GAP + RES)
                face = min(candidates, key=lambda f: abs(float(np.dot(back - f.origin, f.normal))) + (
                    0.0 if np.dot(f.normal, [math.cos(near.yaw), math.sin(near.yaw)]) > 0.9 else 99.0))
                u = float(np.dot(back - face.origin, face.direction))
                size = np.array([size[0], min(size[1], near.size[1]), size[2]])
            else:
                face = candidates[int(self.rng.integers(len(candidates)))]
                if face.length < size[1] + 0.4:
                    continue
                u = float(self.rng.uniform(size[1] / 2 + 0.2, face.length - size[1] / 2 - 0.2))
            if any(u + size[1] / 2 > w0 - 0.05 and u - size[1] / 2 < w1 + 0.05 for w0, w1, _ in face.windows):
                if near is not None:
                    return None
                continue
            centre = face.origin + face.direction * u + face.normal * (size[0] / 2 + 0.005)
            yaw = math.atan2(face.normal[1], face.normal[0])
            obj = self._new(category, room, (centre[0], centre[1], z), yaw, size)
            if obj.z_range[1] > self.plan.wall_height - 0.05:
                continue
            if self.grid.is_free(obj.footprint, room, allow_keepout=True) or near is not None:
                self._counters[category] = self._counters.get(category, 0) + 1
                self.objects.append(obj)
                if obj.z_range[0] < BODY_BAND[1]:
                    self.grid.block(obj.footprint)
                return obj
            if near is not None:
                return None
        return None

    def free_standing(self, category: str, room: int, *, clearance: float = 0.8, tries: int = 40,
                      centre=None, yaw=None, size=None, z: float = 0.0) -> PlacedObject | None:
        """Place inside the room, at least ``clearance`` from blocked cells."""
        cat = CATEGORIES[category]
        size = size if size is not None else cat.sample_size(self.rng)
        rects = self.plan.rooms[room].rects
        for _ in range(tries):
            if centre is None:
                x0, y0, x1, y1 = rects[int(self.rng.integers(len(rects)))]
                pos = (self.rng.uniform(x0, x1), self.rng.uniform(y0, y1))
            else:
                pos = centre
            heading = yaw if yaw is not None else float(self.rng.integers(4)) * math.pi / 2
            probe = _footprint(pos, (size[0] + 2 * clearance, size[1] + 2 * clearance, 0), heading)
            if clearance > 0 and not self.grid.is_free(probe, room, allow_keepout=True):
                if centre is not None:
                    return None
                continue
            obj = self._new(category, room, (pos[0], pos[1], z), heading, size)
            if self._commit(obj):
                return obj
            if centre is not None:
                return None
        return None

    def beside(self, anchor: PlacedObject, category: str, side: float) -> PlacedObject | None:
        """Place next to ``anchor`` on its left (+1) or right (-1), same heading, back aligned."""
        size = CATEGORIES[category].sample_size(self.rng)
        fwd = np.array([math.cos(anchor.yaw), math.sin(anchor.yaw)])
        left = np.array([-fwd[1], fwd[0]])
        back = np.array(anchor.position[:2]) - fwd * anchor.size[0] / 2
        centre = back + fwd * size[0] / 2 + left * side * (anchor.size[1] / 2 + size[1] / 2 + 0.05)
        obj = self._new(category, anchor.room, (centre[0], centre[1], 0.0), anchor.yaw, size)
        return obj if self._commit(obj) else None

    def facing(self, anchor: PlacedObject, category: str, distance: float, *, offset: float = 0.0,
               yaw_towards: bool = True, size=None) -> PlacedObject | None:
        """Place in front of ``anchor`` at ``distance`` (centre to centre), turned to face it."""
        size = size if size is not None else CATEGORIES[category].sample_size(self.rng)
        fwd = np.array([math.cos(anchor.yaw), math.sin(anchor.yaw)])
        left = np.array([-fwd[1], fwd[0]])
        centre = np.array(anchor.position[:2]) + fwd * distance + left * offset
        yaw = anchor.yaw + math.pi if yaw_towards else anchor.yaw
        obj = self._new(category, anchor.room, (centre[0], centre[1], 0.0), _wrap(yaw), size)
        return obj if self._commit(obj) else None

    def on(self, support: PlacedObject, category: str, *, tries: int = 12) -> PlacedObject | None:
        """Stand a small object on one of ``support``'s surfaces without overlaps."""
        surfaces = support.world_surfaces()
        if not surfaces:
            return None
        cat = CATEGORIES[category]
        for _ in range(tries):
            z, (x0, y0, x1, y1) = surfaces[int(self.rng.integers(len(surfaces)))]
            size = cat.sample_size(self.rng)
            yaw = _wrap(support.yaw + float(self.rng.integers(4)) * math.pi / 2)
            fx, fy = (size[0], size[1]) if int(round(yaw / (math.pi / 2))) % 2 == 0 else (size[1], size[0])
            if fx > x1 - x0 - 0.04 or fy > y1 - y0 - 0.04:
                continue
            headroom = self._headroom(support, z)
            if size[2] > headroom - 0.02:
                continue
            x_range = (x0 + fx / 2 + 0.02, x1 - fx / 2 - 0.02)
            y_range = (y0 + fy / 2 + 0.02, y1 - fy / 2 - 0.02)
            if x_range[1] < x_range[0] or y_range[1] < y_range[0]:
                continue  # the size check above let a rounding error through: no room at all
            cx = self.rng.uniform(*x_range)
            cy = self.rng.uniform(*y_range)
            rect = (cx - fx / 2, cy - fy / 2, cx + fx / 2, cy + fy / 2)
            key = f"{support.object_id}@{z:.3f}"
            taken = self._surface_items.setdefault(key, [])
            if any(_overlap(rect, r, 0.02) for r in taken):
                continue
            obj = self._new(category, support.room, (cx, cy, z + 0.001), yaw, size, support=support.object_id)
            taken.append(rect)
            self._counters[category] = self._counters.get(category, 0) + 1
            self.objects.append(obj)
            return obj
        return None

    def _headroom(self, support: PlacedObject, z: float) -> float:
        levels = sorted(s_z for s_z, _ in support.world_surfaces())
        above = [lv for lv in levels if lv > z + 0.05]
        if above:
            return above[0] - 0.02 - z
        return min(1.0, self.plan.wall_height - z - 0.3)

    def remove(self, obj: PlacedObject) -> None:
        """Take back a floor-standing object (and whatever stands on it)."""
        dependants = [o for o in self.objects if o.support == obj.object_id]
        for dep in dependants:
            self.objects.remove(dep)
        self.objects.remove(obj)
        if obj.support is None:
            self.grid.blocked[self.grid.cells(obj.footprint)] = False
        self._surface_items = {k: v for k, v in self._surface_items.items()
                               if not k.startswith(f"{obj.object_id}@")}


def _wrap(angle: float) -> float:
    return math.atan2(math.sin(angle), math.cos(angle))


def _overlap(a, b, margin: float = 0.0) -> bool:
    return a[0] < b[2] + margin and b[0] < a[2] + margin and a[1] < b[3] + margin and b[1] < a[3] + margin


__all__ = ["BODY_BAND", "DOOR_HEIGHT", "Furnisher", "PlacedObject", "Surface"]
