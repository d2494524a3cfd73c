"""Small USD stages built in code for the environment-layer tests (pure pxr)."""

from __future__ import annotations

import math
from pathlib import Path

from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdSemantics


def new_stage(path: Path, up_axis: str = "Z", meters_per_unit: float = 1.0) -> Usd.Stage:
    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z if up_axis == "Z" else UsdGeom.Tokens.y)
    UsdGeom.SetStageMetersPerUnit(stage, meters_per_unit)
    world = UsdGeom.Xform.Define(stage, "/World")
    stage.SetDefaultPrim(world.GetPrim())
    return stage


def add_box(stage: Usd.Stage, path: str, center, size, yaw_deg: float = 0.0, color=(0.6, 0.6, 0.6),
            collision: bool = True) -> UsdGeom.Cube:
    """An axis-scaled cube centred at ``center`` with full extents ``size``, rotated by yaw."""
    cube = UsdGeom.Cube.Define(stage, path)
    cube.GetSizeAttr().Set(1.0)
    xf = UsdGeom.XformCommonAPI(cube)
    xf.SetTranslate(Gf.Vec3d(*center))
    xf.SetRotate(Gf.Vec3f(0.0, 0.0, yaw_deg))
    xf.SetScale(Gf.Vec3f(*size))
    cube.GetDisplayColorAttr().Set([Gf.Vec3f(*color)])
    if collision:
        UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
    return cube


def label(prim: Usd.Prim, category: str, **attrs: str) -> None:
    labels = UsdSemantics.LabelsAPI.Apply(prim, "class")
    labels.CreateLabelsAttr().Set([category])
    for key, value in attrs.items():
        prim.CreateAttribute(f"vlnverse:{key}", Sdf.ValueTypeNames.String).Set(value)


def add_room(stage: Usd.Stage, room_id: str, room_type: str, x0: float, y0: float, x1: float, y1: float) -> str:
    path = f"/World/Rooms/{room_id}"
    room = UsdGeom.Xform.Define(stage, path).GetPrim()
    room.CreateAttribute("vlnverse:roomType", Sdf.ValueTypeNames.String).Set(room_type)
    add_box(stage, f"{path}/Floor", ((x0 + x1) / 2, (y0 + y1) / 2, -0.05), (x1 - x0, y1 - y0, 0.1))
    return path


def add_walls_around(stage: Usd.Stage, prefix: str, x0, y0, x1, y1, thickness=0.1, height=2.6) -> None:
    """Four walls whose inner faces are the rectangle's edges."""
    t, h = thickness, height
    add_box(stage, f"{prefix}/WallS", ((x0 + x1) / 2, y0 - t / 2, h / 2), (x1 - x0 + 2 * t, t, h))
    add_box(stage, f"{prefix}/WallN", ((x0 + x1) / 2, y1 + t / 2, h / 2), (x1 - x0 + 2 * t, t, h))
    add_box(stage, f"{prefix}/WallW", (x0 - t / 2, (y0 + y1) / 2, h / 2), (t, y1 - y0, h))
    add_box(stage, f"{prefix}/WallE", (x1 + t / 2, (y0 + y1) / 2, h / 2), (t, y1 - y0, h))


def box_room(path: Path, width: float = 4.0, depth: float = 3.0) -> Path:
    """An empty ``width`` x ``depth`` room (floor at z=0) with 10 cm walls, labelled a bedroom."""
    stage = new_stage(path)
    add_room(stage, "bedroom_0", "bedroom", 0.0, 0.0, width, depth)
    add_walls_around(stage, "/World/Walls", 0.0, 0.0, width, depth)
    stage.GetRootLayer().Save()
    return path


def kitchen_with_table(path: Path) -> Path:
    """A 5x4 m kitchen with a table (top at 0.75 m), a cup on it, and a lamp hanging at 2.2 m."""
    stage = new_stage(path)
    room = add_room(stage, "kitchen_0", "kitchen", 0.0, 0.0, 5.0, 4.0)
    add_walls_around(stage, "/World/Walls", 0.0, 0.0, 5.0, 4.0)
    table = UsdGeom.Xform.Define(stage, f"{room}/Objects/table_0").GetPrim()
    label(table, "dining table", color="brown", material="wood")
    add_box(stage, f"{room}/Objects/table_0/Top", (2.5, 2.0, 0.725), (1.2, 0.8, 0.05), color=(0.5, 0.3, 0.1))
    for i, (dx, dy) in enumerate([(-0.55, -0.35), (0.55, -0.35), (-0.55, 0.35), (0.55, 0.35)]):
        add_box(stage, f"{room}/Objects/table_0/Leg{i}", (2.5 + dx, 2.0 + dy, 0.35), (0.05, 0.05, 0.7))
    cup = add_box(stage, f"{room}/Objects/cup_0", (2.4, 2.1, 0.80), (0.08, 0.08, 0.1), color=(0.9, 0.1, 0.1))
    label(cup.GetPrim(), "cup", color="red", material="ceramic")
    lamp = add_box(stage, f"{room}/Objects/lamp_0", (1.0, 1.0, 2.3), (0.4, 0.4, 0.2), color=(1, 1, 0.8))
    label(lamp.GetPrim(), "ceiling lamp", state="on")
    stage.GetRootLayer().Save()
    return path


def l_corridor(path: Path, width: float = 1.2, arm: float = 6.0) -> Path:
    """An L-shaped corridor: a horizontal arm [0,arm]x[0,width] and a vertical arm [0,width]x[0,arm]."""
    stage = new_stage(path)
    add_box(stage, "/World/FloorX", (arm / 2, width / 2, -0.05), (arm, width, 0.1))
    add_box(stage, "/World/FloorY", (width / 2, (arm + width) / 2, -0.05), (width, arm - width, 0.1))
    t, h = 0.1, 2.5
    # outer walls
    add_box(stage, "/World/Walls/S", (arm / 2, -t / 2, h / 2), (arm + 2 * t, t, h))
    add_box(stage, "/World/Walls/W", (-t / 2, arm / 2, h / 2), (t, arm + 2 * t, h))
    add_box(stage, "/World/Walls/E", (arm + t / 2, width / 2, h / 2), (t, width, h))
    add_box(stage, "/World/Walls/N", (width / 2, arm + t / 2, h / 2), (width, t, h))
    # the inner corner block fills [width, arm] x [width, arm]
    add_box(stage, "/World/Walls/Inner", ((width + arm) / 2, (width + arm) / 2, h / 2), (arm - width, arm - width, h))
    stage.GetRootLayer().Save()
    return path


def rotated_thin_wall(path: Path, yaw_deg: float = 30.0) -> Path:
    """A 6x6 m room split by a 10 cm wall rotated by ``yaw_deg`` through its centre, 8 m long."""
    stage = new_stage(path)
    add_box(stage, "/World/Floor", (3.0, 3.0, -0.05), (6.0, 6.0, 0.1))
    add_walls_around(stage, "/World/Walls", 0.0, 0.0, 6.0, 6.0)
    add_box(stage, "/World/Walls/Diagonal", (3.0, 3.0, 1.25), (9.0, 0.1, 2.5), yaw_deg=yaw_deg)
    stage.GetRootLayer().Save()
    return path


def two_platforms(path: Path) -> Path:
    """Two open 3x6 m floors (no walls) 1 m apart: both reachable floor, not joined."""
    stage = new_stage(path)
    add_box(stage, "/World/FloorWest", (1.5, 3.0, -0.05), (3.0, 6.0, 0.1))
    add_box(stage, "/World/FloorEast", (5.5, 3.0, -0.05), (3.0, 6.0, 0.1))
    stage.GetRootLayer().Save()
    return path


def two_rooms_with_a_door(path: Path) -> Path:
    """A 6x6 m space split at x = 3 by a wall with a 0.9 m doorway at its north end (no room prims)."""
    stage = new_stage(path)
    add_box(stage, "/World/Floor", (3.0, 3.0, -0.05), (6.0, 6.0, 0.1))
    add_walls_around(stage, "/World/Walls", 0.0, 0.0, 6.0, 6.0)
    add_box(stage, "/World/Walls/Middle", (3.0, 2.55, 1.25), (0.1, 5.1, 2.5))
    stage.GetRootLayer().Save()
    return path


def room_with_sealed_boxes(path: Path) -> Path:
    """A 6x4 m living room with a sealed 1 m pillar up to the ceiling and a closed fridge
    (0.8 x 0.7 x 1.8 m): both are closed boxes whose insides have floor under them."""
    stage = new_stage(path)
    room = add_room(stage, "living_room_0", "living_room", 0.0, 0.0, 6.0, 4.0)
    add_walls_around(stage, "/World/Walls", 0.0, 0.0, 6.0, 4.0)
    add_box(stage, f"{room}/Pillar", (2.0, 2.0, 1.3), (1.0, 1.0, 2.6))
    label(add_box(stage, f"{room}/Fridge", (5.2, 3.25, 0.9), (0.8, 0.7, 1.8)).GetPrim(), "refrigerator")
    stage.GetRootLayer().Save()
    return path


def table_without_floor(path: Path) -> Path:
    """Only a 1.5 x 1.0 m table (top at 0.75 m on four legs): no floor anywhere."""
    stage = new_stage(path)
    label(add_box(stage, "/World/Table/Top", (0.0, 0.0, 0.725), (1.5, 1.0, 0.05)).GetPrim(), "table")
    for i, (x, y) in enumerate(((-0.7, -0.45), (0.7, -0.45), (-0.7, 0.45), (0.7, 0.45))):
        add_box(stage, f"/World/Table/Leg{i}", (x, y, 0.35), (0.05, 0.05, 0.7))
    stage.GetRootLayer().Save()
    return path


def yup_centimetre_copy(src: Path, dst: Path) -> Path:
    """The stage of ``src`` (Z-up metres) re-expressed as a Y-up centimetre stage."""
    stage = new_stage(dst, up_axis="Y", meters_per_unit=0.01)
    world = stage.GetPrimAtPath("/World")
    world.GetReferences().AddReference(str(src), "/World")
    xf = UsdGeom.Xform(world)
    # Z-up metres -> Y-up centimetres: rotate -90° about X, scale 100
    xf.AddRotateXOp().Set(-90.0)
    xf.AddScaleOp().Set(Gf.Vec3f(100.0, 100.0, 100.0))
    stage.GetRootLayer().Save()
    return dst


__all__ = ["add_box", "add_room", "add_walls_around", "box_room", "kitchen_with_table", "l_corridor",
           "label", "new_stage", "rotated_thin_wall", "yup_centimetre_copy", "math"]
