"""Writing a :class:`~vlnverse.scene.procgen.house.House` as a USD stage (pure ``pxr``).

Authoring goes straight to ``Sdf`` specs inside one ``Sdf.ChangeBlock`` (no composed
stage, no notices), which is what keeps a corpus fast. The layout follows the project's
USD authoring contract (see the team brief): ``/World/Rooms/<room_id>`` with
``vlnverse:roomType`` and ``Floor``/``Walls``/``Ceiling``/``Objects``; labelled objects;
``/World/Doors/<door_id>``; ``UsdShade`` looks with physics materials; ``UsdPhysics``
colliders and rigid bodies; ``UsdLux`` lights. The output is byte-identical for the same
house.
"""

from __future__ import annotations

import contextlib
import math
import os
import tempfile
from pathlib import Path

import numpy as np
from pxr import Sdf, Vt

from vlnverse.errors import ConfigError, SceneError
from vlnverse.scene.procgen.appearance import COLORS, MATERIALS, material_key
from vlnverse.scene.procgen.catalog import CATEGORIES
from vlnverse.scene.procgen.floorplan import DOOR_HEIGHT, leaf_rect, segment_box, wall_pieces
from vlnverse.scene.procgen.geometry import MeshData, box_from_bounds, merge, slab_rects
from vlnverse.scene.procgen.house import House
from vlnverse.scene.procgen.placement import PlacedObject

FORMATS = ("usdc", "usda")
_T = Sdf.ValueTypeNames
FLOOR_THICKNESS = 0.05
CEILING_THICKNESS = 0.05


class _Writer:
    """Small helpers over an ``Sdf.Layer``."""

    def __init__(self, layer: Sdf.Layer) -> None:
        self.layer = layer
        self.looks: set[str] = set()

    def prim(self, path: str, type_name: str, api: tuple[str, ...] = ()) -> Sdf.PrimSpec:
        spec = Sdf.CreatePrimInLayer(self.layer, path)
        spec.specifier = Sdf.SpecifierDef
        spec.typeName = type_name
        if api:
            spec.SetInfo("apiSchemas", Sdf.TokenListOp.Create(prependedItems=list(api)))
        return spec

    @staticmethod
    def attr(spec: Sdf.PrimSpec, name: str, type_name, value, *, uniform: bool = False,
             custom: bool = False, interpolation: str | None = None) -> Sdf.AttributeSpec:
        variability = Sdf.VariabilityUniform if uniform else Sdf.VariabilityVarying
        attr = Sdf.AttributeSpec(spec, name, type_name, variability, custom)
        if value is not None:
            attr.default = value
        if interpolation:
            attr.SetInfo("interpolation", interpolation)
        return attr

    def xform(self, spec: Sdf.PrimSpec, translate=None, yaw_deg: float | None = None) -> None:
        order = []
        if translate is not None:
            self.attr(spec, "xformOp:translate", _T.Double3, tuple(float(round(v, 6)) for v in translate))
            order.append("xformOp:translate")
        if yaw_deg is not None:
            self.attr(spec, "xformOp:rotateZ", _T.Float, float(round(yaw_deg, 4)))
            order.append("xformOp:rotateZ")
        if order:
            self.attr(spec, "xformOpOrder", _T.TokenArray, order, uniform=True)

    def look(self, color: str, material: str) -> str:
        """Path of the (shared) material for a look, authoring it on first use."""
        key = material_key(color, material)
        path = f"/World/Looks/{key}"
        if key in self.looks:
            return path
        self.looks.add(key)
        spec_m = MATERIALS[material]
        mat = self.prim(path, "Material", ("PhysicsMaterialAPI",))
        self.attr(mat, "physics:staticFriction", _T.Float, spec_m.static_friction)
        self.attr(mat, "physics:dynamicFriction", _T.Float, spec_m.dynamic_friction)
        self.attr(mat, "physics:restitution", _T.Float, spec_m.restitution)
        out = self.attr(mat, "outputs:surface", _T.Token, None)
        out.connectionPathList.explicitItems = [Sdf.Path(f"{path}/Shader.outputs:surface")]
        shader = self.prim(f"{path}/Shader", "Shader")
        self.attr(shader, "info:id", _T.Token, "UsdPreviewSurface", uniform=True)
        self.attr(shader, "inputs:diffuseColor", _T.Color3f, COLORS[color])
        self.attr(shader, "inputs:roughness", _T.Float, spec_m.roughness)
        self.attr(shader, "inputs:metallic", _T.Float, spec_m.metallic)
        self.attr(shader, "inputs:opacity", _T.Float, spec_m.opacity)
        self.attr(shader, "outputs:surface", _T.Token, None)
        return path

    def mesh(self, path: str, mesh: MeshData, color: str, material: str, *, approximation: str | None) -> None:
        """A polygonal mesh (normals, extent, no subdivision) bound to a look; a collider
        unless ``approximation`` is None."""
        api = ("MaterialBindingAPI",)
        if approximation is not None:
            api = ("PhysicsCollisionAPI", "PhysicsMeshCollisionAPI", "MaterialBindingAPI")
        spec = self.prim(path, "Mesh", api)
        points = np.round(mesh.points, 5).astype(np.float32)
        self.attr(spec, "points", _T.Point3fArray, Vt.Vec3fArray.FromNumpy(points))
        self.attr(spec, "faceVertexCounts", _T.IntArray, Vt.IntArray.FromNumpy(mesh.counts.astype(np.int32)))
        self.attr(spec, "faceVertexIndices", _T.IntArray, Vt.IntArray.FromNumpy(mesh.indices.astype(np.int32)))
        normals = np.round(mesh.normals(), 6).astype(np.float32)
        self.attr(spec, "normals", _T.Normal3fArray, Vt.Vec3fArray.FromNumpy(normals), interpolation="faceVarying")
        self.attr(spec, "subdivisionScheme", _T.Token, "none", uniform=True)
        extent = np.stack([points.min(axis=0), points.max(axis=0)])
        self.attr(spec, "extent", _T.Float3Array, Vt.Vec3fArray.FromNumpy(extent))
        self.attr(spec, "primvars:displayColor", _T.Color3fArray, [COLORS[color]], interpolation="constant")
        if approximation is not None:
            self.attr(spec, "physics:approximation", _T.Token, approximation, uniform=True)
        rel = Sdf.RelationshipSpec(spec, "material:binding", False)
        rel.targetPathList.explicitItems = [Sdf.Path(self.look(color, material))]

    def labels(self, spec: Sdf.PrimSpec, category: str, color: str, material: str, state: str | None) -> None:
        self.attr(spec, "semantics:labels:class", _T.TokenArray, [category])
        self.attr(spec, "vlnverse:color", _T.String, color, custom=True)
        self.attr(spec, "vlnverse:material", _T.String, material, custom=True)
        if state is not None:
            self.attr(spec, "vlnverse:state", _T.String, state, custom=True)


def _slot_look(obj: PlacedObject, slot: str) -> tuple[str, str]:
    if slot == "main":
        return obj.color, obj.material
    return dict(CATEGORIES[obj.category].slots).get(slot, (obj.color, obj.material))


def _write_object(w: _Writer, room_path: str, obj: PlacedObject) -> None:
    api = ("SemanticsLabelsAPI:class",)
    if obj.movable:
        api += ("PhysicsRigidBodyAPI", "PhysicsMassAPI")
    path = f"{room_path}/Objects/{obj.object_id}"
    spec = w.prim(path, "Xform", api)
    w.labels(spec, obj.category, obj.color, obj.material, obj.state)
    if obj.movable:
        w.attr(spec, "physics:mass", _T.Float, float(obj.mass))
    w.xform(spec, obj.position, math.degrees(obj.yaw))
    approximation = "convexHull" if obj.movable else "none"
    for slot in sorted(obj.built.parts):
        color, material = _slot_look(obj, slot)
        w.mesh(f"{path}/{slot.capitalize()}", obj.built.parts[slot], color, material,
               approximation=approximation)


def _write_rooms(w: _Writer, house: House) -> None:
    plan = house.plan
    w.prim("/World/Rooms", "Xform")
    walls_by_owner: dict[int, list] = {}
    for wall in plan.walls:
        walls_by_owner.setdefault(wall.owner, []).append(wall)
    objects_by_room: dict[int, list[PlacedObject]] = {}
    for obj in house.objects:
        objects_by_room.setdefault(obj.room, []).append(obj)
    for room in plan.rooms:
        path = f"/World/Rooms/{room.room_id}"
        spec = w.prim(path, "Xform")
        w.attr(spec, "vlnverse:roomType", _T.String, room.room_type, custom=True)
        floor_color, floor_mat = house.floor_looks[room.index]
        w.mesh(f"{path}/Floor", slab_rects(room.rects, 0.0, FLOOR_THICKNESS), floor_color, floor_mat,
               approximation="none")
        ceiling = slab_rects(room.rects, plan.wall_height + CEILING_THICKNESS, CEILING_THICKNESS)
        w.mesh(f"{path}/Ceiling", ceiling, "white", "plaster", approximation="none")
        w.prim(f"{path}/Walls", "Xform")
        wall_color, wall_mat = house.wall_looks[room.index]
        for k, wall in enumerate(walls_by_owner.get(room.index, [])):
            pieces = [box_from_bounds(p[:3], p[3:]) for p in wall_pieces(wall, plan.wall_height)]
            w.mesh(f"{path}/Walls/Wall_{k}", merge(pieces), wall_color, wall_mat, approximation="none")
            panes = [o for o in wall.openings if o.kind == "window"]
            for j, pane in enumerate(panes):
                x0, y0, x1, y1 = segment_box(wall.segment, pane.u0, pane.u1, 0.02)
                w.mesh(f"{path}/Walls/Window_{k}_{j}", box_from_bounds((x0, y0, pane.z0), (x1, y1, pane.z1)),
                       "glass", "glass", approximation="none")
        w.prim(f"{path}/Objects", "Xform")
        for obj in objects_by_room.get(room.index, []):
            _write_object(w, path, obj)
        x0, y0, x1, y1 = max(room.rects, key=lambda r: ((r[2] - r[0]) * (r[3] - r[1]), r))
        light = w.prim(f"{path}/Light", "SphereLight")
        w.attr(light, "inputs:intensity", _T.Float, float(round(2500.0 * min(room.area, 30.0), 1)))
        w.attr(light, "inputs:radius", _T.Float, 0.1)
        w.xform(light, ((x0 + x1) / 2, (y0 + y1) / 2, plan.wall_height - 0.3))


def _write_doors(w: _Writer, house: House, rng_looks: list[tuple[str, str]]) -> None:
    w.prim("/World/Doors", "Xform")
    plan = house.plan
    for door, look in zip(house.doors, rng_looks, strict=True):
        centre = door.center
        path = f"/World/Doors/{door.door_id}"
        spec = w.prim(path, "Xform")
        w.xform(spec, (centre[0], centre[1], 0.0))
        w.attr(spec, "vlnverse:connects", _T.StringArray, [plan.rooms[r].room_id for r in door.rooms], custom=True)
        w.attr(spec, "vlnverse:doorWidth", _T.Float, float(door.width), custom=True)
        w.attr(spec, "vlnverse:openPlan", _T.Bool, bool(door.open_plan), custom=True)
        if not door.leaf:
            continue
        w.attr(spec, "vlnverse:state", _T.String, door.state, custom=True)
        leaf = w.prim(f"{path}/Leaf", "Xform", ("SemanticsLabelsAPI:class",))
        w.labels(leaf, "door", look[0], look[1], door.state)
        rect = leaf_rect(door, plan.interior_thickness)
        mesh = box_from_bounds((rect[0] - centre[0], rect[1] - centre[1], 0.0),
                               (rect[2] - centre[0], rect[3] - centre[1], DOOR_HEIGHT - 0.05))
        w.mesh(f"{path}/Leaf/Geom", mesh, look[0], look[1], approximation="none")


def build_layer(house: House) -> Sdf.Layer:
    """Author ``house`` into a new anonymous ``Sdf.Layer``."""
    layer = Sdf.Layer.CreateAnonymous("procgen.usda")
    w = _Writer(layer)
    door_cat = CATEGORIES["door"]
    rng = np.random.default_rng([house.seed, house.attempt, 7])
    door_looks = [(door_cat.colors[int(rng.integers(len(door_cat.colors)))], "wood") for _ in house.doors]
    with Sdf.ChangeBlock():
        root = layer.pseudoRoot
        root.SetInfo("defaultPrim", "World")
        root.SetInfo("upAxis", "Z")
        root.SetInfo("metersPerUnit", 1.0)
        root.SetInfo("kilogramsPerUnit", 1.0)
        world = w.prim("/World", "Xform")
        world.SetInfo("kind", "assembly")
        w.prim("/World/Looks", "Scope")
        scene = w.prim("/World/PhysicsScene", "PhysicsScene")
        w.attr(scene, "physics:gravityDirection", _T.Vector3f, (0.0, 0.0, -1.0))
        w.attr(scene, "physics:gravityMagnitude", _T.Float, 9.81)
        sky = w.prim("/World/Sky", "DomeLight")
        w.attr(sky, "inputs:intensity", _T.Float, 400.0)
        _write_rooms(w, house)
        _write_doors(w, house, door_looks)
    return layer


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_house(house: House, path: str | os.PathLike, file_format: str = "usdc") -> Path:
    """Write ``house`` to ``path`` atomically (temp file + rename) in ``file_format``."""
    if file_format not in FORMATS:
        raise ConfigError(f"format must be one of {', '.join(FORMATS)}, got {file_format!r}")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    layer = build_layer(house)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=f".tmp.{file_format}", dir=target.parent)
    os.close(fd)
    try:
        if not layer.Export(tmp, args={"format": file_format}):
            raise SceneError(f"cannot write {target}")
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp files are private; scenes are shared assets
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return target
