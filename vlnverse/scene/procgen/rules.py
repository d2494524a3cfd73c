"""Room-type furnishing rules: what goes in each kind of room, and where.

Each rule uses the :class:`~vlnverse.scene.procgen.placement.Furnisher` primitives, so
every placement is collision-checked and keeps the room's doorways connected. Rules try
the important pieces first (a bedroom's bed, a kitchen's counters) so a small room still
gets what defines it.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from vlnverse.scene.procgen.catalog import CATEGORIES
from vlnverse.scene.procgen.placement import Furnisher, PlacedObject

_SMALL_ON = {
    "nightstand": ("table_lamp", "book", "cup", "remote"),
    "dresser": ("vase", "box", "book", "table_lamp"),
    "desk": ("laptop", "book", "cup", "table_lamp"),
    "coffee_table": ("remote", "cup", "bowl", "book", "vase"),
    "side_table": ("table_lamp", "vase", "cup"),
    "dining_table": ("bowl", "cup", "vase", "bottle"),
    "kitchen_counter": ("bowl", "bottle", "cup", "box"),
    "kitchen_island": ("bowl", "bottle", "vase"),
    "sink": ("bottle", "cup"),
    "bookshelf": ("book", "book", "box", "vase"),
    "shelf": ("box", "bottle", "book", "towel"),
    "tv_stand": ("remote", "box", "vase"),
    "bathroom_sink": ("bottle", "towel", "cup"),
    "washing_machine": ("towel", "box"),
    "sofa": ("pillow", "remote"),
    "bed": ("pillow", "book"),
    "cabinet": ("vase", "box"),
    "fridge": ("box",),
}


def decorate(f: Furnisher, support: PlacedObject | None, count: tuple[int, int]) -> None:
    """Stand ``count`` (min, max) small objects on ``support``."""
    if support is None or support.category not in _SMALL_ON:
        return
    choices = _SMALL_ON[support.category]
    for _ in range(int(f.rng.integers(count[0], count[1] + 1))):
        f.on(support, choices[int(f.rng.integers(len(choices)))])


def _maybe(f: Furnisher, p: float) -> bool:
    return bool(f.rng.random() < p)


def _bedroom(f: Furnisher, room: int) -> None:
    bed = f.against_wall("bed", room, tries=80)
    if bed is not None:
        for side in (1.0, -1.0):
            decorate(f, f.beside(bed, "nightstand", side), (1, 2))
        decorate(f, bed, (0, 2))
        if _maybe(f, 0.5):
            f.wall_mounted("picture", room, 1.3, near=bed)
    decorate(f, f.against_wall("wardrobe", room), (0, 0))
    decorate(f, f.against_wall("dresser", room), (1, 3))
    if _maybe(f, 0.4):
        desk = f.against_wall("desk", room)
        if desk is not None:
            decorate(f, desk, (1, 2))
            f.facing(desk, "office_chair", desk.size[0] / 2 + 0.25)
    if _maybe(f, 0.5):
        f.against_wall("plant", room)
    if _maybe(f, 0.5):
        f.wall_mounted("picture", room, 1.4)


def _media_corner(f: Furnisher, room: int) -> PlacedObject | None:
    """A TV stand with a TV, a sofa facing it across a rug and coffee table; returns the sofa."""
    for _ in range(3):
        stand = f.against_wall("tv_stand", room, tries=40)
        if stand is None:
            return None
        sofa = None
        for dist in (2.6, 2.3, 3.0, 2.0):
            sofa = f.facing(stand, "sofa", dist)
            if sofa is not None:
                break
        if sofa is None:
            f.remove(stand)
            continue
        f.on(stand, "tv")
        decorate(f, stand, (0, 2))
        gap = float(np.linalg.norm(np.array(sofa.position[:2]) - np.array(stand.position[:2])))
        clear = gap - sofa.size[0] / 2 - stand.size[0] / 2
        mid = (np.array(sofa.position[:2]) + np.array(stand.position[:2])) / 2
        rug_depth = round(min(clear - 0.3, 2.0), 3)
        rug = None
        if rug_depth > 0.9:
            rug = f.free_standing("rug", room, clearance=0.0, centre=tuple(mid), yaw=stand.yaw,
                                  size=np.array([rug_depth, min(2.6, sofa.size[1] + 0.4), 0.01]))
        table_depth = round(min(0.6, clear - 1.1), 3)
        if table_depth >= 0.45:
            table = f.free_standing("coffee_table", room, clearance=0.0, centre=tuple(mid), yaw=stand.yaw,
                                    size=np.array([table_depth, min(1.2, sofa.size[1] * 0.6), 0.42]),
                                    z=rug.size[2] if rug is not None else 0.0)
            decorate(f, table, (1, 3))
        return sofa
    return None


def _living(f: Furnisher, room: int) -> None:
    sofa = _media_corner(f, room) or f.against_wall("sofa", room)
    if sofa is not None:
        decorate(f, sofa, (0, 2))
        for side in (1.0, -1.0):
            if _maybe(f, 0.5):
                decorate(f, f.beside(sofa, "side_table", side), (0, 1))
    if _maybe(f, 0.6):
        f.against_wall("armchair", room)
    if not any(r.room_type == "dining_room" for r in f.plan.rooms) and _maybe(f, 0.6):
        _dining_set(f, room)
    decorate(f, f.against_wall("bookshelf", room), (2, 5))
    if _maybe(f, 0.6):
        f.against_wall("plant", room)
    if _maybe(f, 0.5):
        f.against_wall("floor_lamp", room)
    f.wall_mounted("picture", room, 1.4)
    if not any(r.room_type == "kitchen" for r in f.plan.rooms):
        _kitchenette(f, room)


def _kitchen_run(f: Furnisher, room: int, modules: int) -> None:
    """Counters, sink and stove along walls, fridge at one end."""
    fridge = f.against_wall("fridge", room, tries=60)
    decorate(f, fridge, (0, 1))
    for kind in ("sink", "stove"):
        decorate(f, f.against_wall(kind, room, tries=60), (0, 2))
    for _ in range(modules):
        decorate(f, f.against_wall("kitchen_counter", room, tries=30), (0, 2))


def _kitchenette(f: Furnisher, room: int) -> None:
    _kitchen_run(f, room, 1)


def _kitchen(f: Furnisher, room: int) -> None:
    _kitchen_run(f, room, int(f.rng.integers(2, 5)))
    if f.plan.rooms[room].area > 11 and _maybe(f, 0.6):
        island = f.free_standing("kitchen_island", room, clearance=0.95)
        decorate(f, island, (1, 2))
        if island is not None:
            for side in (1.0, -1.0):
                f.facing(island, "stool", island.size[0] / 2 + 0.3, offset=side * 0.35)
    f.against_wall("trash_can", room)


def _dining_set(f: Furnisher, room: int) -> None:
    table = None
    for clearance in (0.8, 0.65):
        table = table or f.free_standing("dining_table", room, clearance=clearance, tries=50)
    if table is None:
        return
    decorate(f, table, (1, 3))
    per_side = max(1, int(table.size[1] // 0.6))
    for side in (1.0, -1.0):  # chairs along the long sides face the table
        for k in range(per_side):
            offset = (k - (per_side - 1) / 2) * (table.size[1] / per_side)
            _place_chair(f, table, side, offset)


def _place_chair(f: Furnisher, table: PlacedObject, side: float, offset: float) -> None:
    """A dining chair on ``side`` (+1 front, -1 back) of ``table``, facing it."""
    fwd = np.array([math.cos(table.yaw), math.sin(table.yaw)])
    left = np.array([-fwd[1], fwd[0]])
    size = CATEGORIES["dining_chair"].sample_size(f.rng)
    centre = np.array(table.position[:2]) + fwd * side * (table.size[0] / 2 + size[0] / 2 + 0.03) + left * offset
    yaw = math.atan2(-side * fwd[1], -side * fwd[0])
    obj = f._new("dining_chair", table.room, (centre[0], centre[1], 0.0), yaw, size)
    f._commit(obj)


def _dining(f: Furnisher, room: int) -> None:
    _dining_set(f, room)
    decorate(f, f.against_wall("cabinet", room), (1, 2))
    if _maybe(f, 0.5):
        f.against_wall("plant", room)
    f.wall_mounted("picture", room, 1.4)


def _bathroom(f: Furnisher, room: int) -> None:
    sink = f.against_wall("bathroom_sink", room, tries=60)
    if sink is not None:
        decorate(f, sink, (1, 2))
        f.wall_mounted("mirror", room, sink.size[2] + 0.35, near=sink)
    f.against_wall("toilet", room, tries=60)
    if f.plan.rooms[room].area > 5.0 and _maybe(f, 0.6):
        f.against_wall("bathtub", room, tries=60) or f.against_wall("shower", room, tries=60)
    else:
        f.against_wall("shower", room, tries=60)
    if _maybe(f, 0.5):
        decorate(f, f.against_wall("shelf", room), (1, 2))


def _study(f: Furnisher, room: int) -> None:
    desk = f.against_wall("desk", room, tries=60)
    if desk is not None:
        decorate(f, desk, (1, 3))
        f.facing(desk, "office_chair", desk.size[0] / 2 + 0.25)
    decorate(f, f.against_wall("bookshelf", room), (3, 6))
    if _maybe(f, 0.5):
        f.against_wall("armchair", room)
    if _maybe(f, 0.6):
        f.against_wall("floor_lamp", room)
    if _maybe(f, 0.5):
        f.against_wall("plant", room)
    f.wall_mounted("picture", room, 1.4)


def _laundry(f: Furnisher, room: int) -> None:
    for _ in range(int(f.rng.integers(1, 3))):
        decorate(f, f.against_wall("washing_machine", room, tries=60), (0, 2))
    decorate(f, f.against_wall("shelf", room), (1, 3))
    f.against_wall("trash_can", room)


def _storage(f: Furnisher, room: int) -> None:
    for _ in range(int(f.rng.integers(1, 4))):
        decorate(f, f.against_wall("shelf", room), (1, 4))
    decorate(f, f.against_wall("cabinet", room), (0, 2))


def _hallway(f: Furnisher, room: int) -> None:
    for _ in range(int(f.rng.integers(1, 3))):
        f.wall_mounted("picture", room, 1.4)
    if _maybe(f, 0.4):
        f.against_wall("plant", room, tries=20)


RULES: dict[str, Callable[[Furnisher, int], None]] = {
    "bedroom": _bedroom,
    "living_room": _living,
    "kitchen": _kitchen,
    "dining_room": _dining,
    "bathroom": _bathroom,
    "study": _study,
    "laundry": _laundry,
    "storage": _storage,
    "hallway": _hallway,
}


def furnish(f: Furnisher) -> None:
    """Furnish every room of ``f.plan`` (kitchens first so a kitchenette is only added when none exists)."""
    order = sorted(range(len(f.plan.rooms)), key=lambda i: (f.plan.rooms[i].room_type != "kitchen", i))
    for room in order:
        RULES[f.plan.rooms[room].room_type](f, room)
