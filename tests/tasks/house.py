"""A small four-room house (USD, pure pxr) for the task-layer tests.

Layout (metres, floor at z = 0): living room [0,6]x[0,5], kitchen [6,11]x[0,5], bedroom
[0,6]x[5,10], bathroom [6,11]x[5,10]; doorways living↔kitchen, living↔bedroom,
bedroom↔bathroom. Objects carry colours, materials and states; the kitchen has two chairs
(ambiguous without a reference) and a red cup on the dining table.
"""

from __future__ import annotations

from pathlib import Path

from pxr import Gf, Sdf, UsdGeom

from tests.scene.builders import add_box, add_room, label, new_stage

WALL_T, WALL_H = 0.1, 2.6

# (room, object_id, category, centre, size, attrs)
OBJECTS = [
    ("living_room_0", "sofa_0", "sofa", (1.6, 0.6, 0.4), (2.0, 0.9, 0.8), {"color": "gray", "material": "fabric"}),
    ("living_room_0", "tv_0", "tv", (4.6, 4.75, 0.9), (1.2, 0.2, 0.7), {"color": "black", "state": "off"}),
    ("living_room_0", "coffee_table_0", "coffee table", (3.0, 2.2, 0.225), (1.0, 0.6, 0.45), {"color": "brown", "material": "wood"}),
    ("living_room_0", "plant_0", "plant", (5.5, 0.5, 0.5), (0.4, 0.4, 1.0), {"color": "green"}),
    ("kitchen_0", "fridge_0", "fridge", (10.55, 4.5, 0.9), (0.7, 0.7, 1.8), {"color": "white", "material": "metal"}),
    ("kitchen_0", "counter_0", "counter", (8.5, 0.35, 0.45), (3.0, 0.6, 0.9), {"color": "white", "material": "marble"}),
    ("kitchen_0", "dining_table_0", "dining table", (8.5, 2.8, 0.375), (1.4, 0.9, 0.75), {"color": "brown", "material": "wood"}),
    ("kitchen_0", "chair_0", "chair", (7.5, 2.8, 0.45), (0.45, 0.45, 0.9), {"color": "black"}),
    ("kitchen_0", "chair_1", "chair", (9.6, 2.8, 0.45), (0.45, 0.45, 0.9), {"color": "black"}),
    ("kitchen_0", "cup_0", "cup", (8.3, 2.9, 0.8), (0.08, 0.08, 0.1), {"color": "red", "material": "ceramic"}),
    ("bedroom_0", "bed_0", "bed", (1.3, 7.5, 0.3), (2.0, 1.6, 0.6), {"color": "blue", "material": "fabric"}),
    ("bedroom_0", "nightstand_0", "nightstand", (0.35, 9.3, 0.25), (0.5, 0.5, 0.5), {"color": "white", "material": "wood"}),
    ("bedroom_0", "lamp_0", "lamp", (0.35, 9.3, 0.65), (0.25, 0.25, 0.3), {"color": "yellow", "state": "on"}),
    ("bedroom_0", "wardrobe_0", "wardrobe", (5.4, 9.6, 1.0), (1.0, 0.6, 2.0), {"color": "brown", "material": "wood"}),
    ("bathroom_0", "toilet_0", "toilet", (10.6, 9.5, 0.4), (0.5, 0.7, 0.8), {"color": "white", "material": "ceramic"}),
    ("bathroom_0", "sink_0", "sink", (8.0, 9.7, 0.45), (0.6, 0.45, 0.9), {"color": "white"}),
    ("bathroom_0", "bathtub_0", "bathtub", (10.6, 6.2, 0.3), (0.7, 1.6, 0.6), {"color": "white"}),
]

ROOMS = [
    ("living_room_0", "living_room", (0.0, 0.0, 6.0, 5.0)),
    ("kitchen_0", "kitchen", (6.0, 0.0, 11.0, 5.0)),
    ("bedroom_0", "bedroom", (0.0, 5.0, 6.0, 10.0)),
    ("bathroom_0", "bathroom", (6.0, 5.0, 11.0, 10.0)),
]

# (door_id, centre, connects, vertical wall?)
DOORS = [
    ("door_0", (6.0, 2.5), ("living_room_0", "kitchen_0"), True),
    ("door_1", (2.5, 5.0), ("living_room_0", "bedroom_0"), False),
    ("door_2", (6.0, 7.5), ("bedroom_0", "bathroom_0"), True),
]
DOOR_W = 1.0


def _wall_x(stage, path, x, y0, y1, gaps):
    """A wall along x = const from y0 to y1 with openings at the given y centres."""
    cuts = sorted(gaps)
    start = y0
    for i, g in enumerate(cuts + [None]):
        end = y1 if g is None else g - DOOR_W / 2
        if end - start > 1e-6:
            add_box(stage, f"{path}_{i}", (x, (start + end) / 2, WALL_H / 2), (WALL_T, end - start, WALL_H))
        if g is not None:
            start = g + DOOR_W / 2


def _wall_y(stage, path, y, x0, x1, gaps):
    cuts = sorted(gaps)
    start = x0
    for i, g in enumerate(cuts + [None]):
        end = x1 if g is None else g - DOOR_W / 2
        if end - start > 1e-6:
            add_box(stage, f"{path}_{i}", ((start + end) / 2, y, WALL_H / 2), (end - start, WALL_T, WALL_H))
        if g is not None:
            start = g + DOOR_W / 2


def build_house(path: Path, *, skip_objects: tuple[str, ...] = ()) -> Path:
    """Write the house to ``path`` (a .usda file) and return it."""
    stage = new_stage(path)
    for room_id, room_type, (x0, y0, x1, y1) in ROOMS:
        add_room(stage, room_id, room_type, x0, y0, x1, y1)
    t = WALL_T
    add_box(stage, "/World/Walls/S", (5.5, -t / 2, WALL_H / 2), (11 + 2 * t, t, WALL_H))
    add_box(stage, "/World/Walls/N", (5.5, 10 + t / 2, WALL_H / 2), (11 + 2 * t, t, WALL_H))
    add_box(stage, "/World/Walls/W", (-t / 2, 5.0, WALL_H / 2), (t, 10.0, WALL_H))
    add_box(stage, "/World/Walls/E", (11 + t / 2, 5.0, WALL_H / 2), (t, 10.0, WALL_H))
    _wall_x(stage, "/World/Walls/MidX", 6.0, 0.0, 10.0, [2.5, 7.5])
    _wall_y(stage, "/World/Walls/MidYW", 5.0, 0.0, 6.0, [2.5])
    _wall_y(stage, "/World/Walls/MidYE", 5.0, 6.0, 11.0, [])
    for room_id, object_id, category, center, size, attrs in OBJECTS:
        if object_id in skip_objects:
            continue
        prim_path = f"/World/Rooms/{room_id}/Objects/{object_id}"
        xform = UsdGeom.Xform.Define(stage, prim_path).GetPrim()
        label(xform, category, **attrs)
        add_box(stage, f"{prim_path}/Body", center, size)
    for door_id, (x, y), connects, _vertical in DOORS:
        door = UsdGeom.Xform.Define(stage, f"/World/Doors/{door_id}")
        UsdGeom.XformCommonAPI(door).SetTranslate(Gf.Vec3d(x, y, 1.0))
        prim = door.GetPrim()
        prim.CreateAttribute("vlnverse:connects", Sdf.ValueTypeNames.StringArray).Set(list(connects))
        prim.CreateAttribute("vlnverse:doorWidth", Sdf.ValueTypeNames.Float).Set(DOOR_W)
        prim.CreateAttribute("vlnverse:openPlan", Sdf.ValueTypeNames.Bool).Set(False)
    stage.GetRootLayer().Save()
    return path


def build_scene_dir(root: Path, n: int = 3, corrupt: tuple[str, ...] = ()) -> Path:
    """``n`` copies of the house as ``root/house_<k>/scene.usda`` (object subsets vary),
    plus corrupt files named in ``corrupt`` (``root/<name>/scene.usda`` holding garbage)."""
    root.mkdir(parents=True, exist_ok=True)
    variants = [(), ("plant_0",), ("tv_0", "wardrobe_0"), ("chair_1",)]
    for k in range(n):
        folder = root / f"house_{k}"
        folder.mkdir(exist_ok=True)
        build_house(folder / "scene.usda", skip_objects=variants[k % len(variants)])
    for name in corrupt:
        folder = root / name
        folder.mkdir(exist_ok=True)
        (folder / "scene.usda").write_text("#usda 1.0\nthis is not a stage {{{\n")
    return root
