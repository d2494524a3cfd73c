"""Load any USD stage into a :class:`~vlnverse.scene.types.Scene` (Z-up, meters).

Reads geometry (meshes and implicit prims, instance proxies included; invisible and
``guide`` prims skipped), collision flags, semantic labels (``UsdSemantics.LabelsAPI``
and the legacy Isaac ``SemanticsAPI`` attributes), rooms (``vlnverse:roomType``) and
doors (``vlnverse:connects``), normalizing ``metersPerUnit`` and ``upAxis``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from vlnverse.errors import DependencyNotInstalled, SceneError
from vlnverse.scene import tessellate
from vlnverse.scene.types import Door, OrientedBox, PrimGeometry, Room, Scene, SceneObject
from vlnverse.stdio import c_stderr_to_log

log = logging.getLogger(__name__)

USD_SUFFIXES = (".usd", ".usda", ".usdc", ".usdz")
ROOM_TYPE_ATTR = "vlnverse:roomType"
CONNECTS_ATTR = "vlnverse:connects"
OBJECT_ATTRS = ("color", "material", "state")
DEFAULT_COLOR = (0.7, 0.7, 0.7)


@dataclass
class _Collector:
    vertices: list[np.ndarray] = field(default_factory=list)
    prims: list[PrimGeometry] = field(default_factory=list)
    count: int = 0


def load_scene(path: str | Path) -> Scene:
    """Open a USD file and return its geometry, objects, rooms and doors in Z-up meters.

    Raises:
        SceneError: the file is missing, unreadable, not USD, references missing assets,
            has no geometry or has non-finite points.
        DependencyNotInstalled: no ``pxr`` (install the ``usd`` extra, or run inside Isaac Sim).
    """
    try:
        from pxr import Usd, UsdGeom
    except ImportError as exc:
        raise DependencyNotInstalled("usd-core", extra="usd", purpose="reading USD scenes outside Isaac Sim") from exc

    path = Path(path)
    stage, sources = _open_stage(path)
    correction = _stage_correction(stage)
    xform_cache = UsdGeom.XformCache(Usd.TimeCode.Default())
    has_collision_api = _stage_has_collision_api(stage)

    objects_by_path: dict[str, int] = {}
    object_records: list[dict] = []
    rooms: list[Room] = []
    room_paths: dict[str, int] = {}
    doors: list[Door] = []
    collector = _Collector()

    it = iter(Usd.PrimRange(stage.GetPseudoRoot(), Usd.TraverseInstanceProxies()))
    for prim in it:
        if prim.IsPseudoRoot():
            continue
        if prim.IsA(UsdGeom.Imageable):
            imageable = UsdGeom.Imageable(prim)
            vis = imageable.GetVisibilityAttr().Get()
            purpose = imageable.GetPurposeAttr().Get()
            if vis == UsdGeom.Tokens.invisible or purpose in (UsdGeom.Tokens.guide, UsdGeom.Tokens.proxy):
                it.PruneChildren()
                continue
        prim_path = str(prim.GetPath())
        room_type = prim.GetAttribute(ROOM_TYPE_ATTR)
        if room_type and room_type.HasAuthoredValue():
            room_paths[prim_path] = len(rooms)
            rooms.append(Room(room_id=prim.GetName(), room_type=str(room_type.Get()), prim_path=prim_path))
        if prim.HasAttribute(CONNECTS_ATTR):
            doors.append(_read_door(prim, xform_cache, correction))
        category = _semantic_class(prim)
        if category is not None:
            objects_by_path[prim_path] = len(object_records)
            object_records.append(_object_record(prim, category, xform_cache, correction))
        if prim.IsA(UsdGeom.Gprim):
            _collect_gprim(prim, xform_cache, correction, has_collision_api,
                           objects_by_path, room_paths, collector)

    if not collector.prims:
        raise SceneError(f"{path}: the stage has no renderable geometry")
    triangles = np.concatenate(collector.vertices).reshape(-1, 3, 3)
    triangle_prim = np.repeat(
        np.arange(len(collector.prims), dtype=np.int32),
        [p.triangle_slice.stop - p.triangle_slice.start for p in collector.prims],
    )
    objects = _finish_objects(object_records, collector.prims, triangles)
    rooms = _finish_rooms(rooms, collector.prims, triangles)
    return Scene(
        path=path,
        triangles=triangles,
        triangle_prim=triangle_prim,
        prims=collector.prims,
        objects=objects,
        rooms=rooms,
        doors=doors,
        source_meters_per_unit=float(UsdGeom.GetStageMetersPerUnit(stage)),
        source_up_axis=str(UsdGeom.GetStageUpAxis(stage)),
        sources=sources,
    )


def _open_stage(path: Path) -> tuple[object, tuple[str, ...]]:
    """The stage of ``path`` and the files it is composed from (layers, then assets)."""
    from pxr import Sdf, Usd, UsdUtils

    if not path.exists():
        raise SceneError(f"{path}: no such file")
    if not path.is_file():
        raise SceneError(f"{path}: not a file")
    if path.suffix.lower() not in USD_SUFFIXES:
        raise SceneError(f"{path}: not a USD file (expected one of {', '.join(USD_SUFFIXES)})")
    try:
        with open(path, "rb") as handle:
            handle.read(1)
    except OSError as exc:
        raise SceneError(f"{path}: cannot read file ({exc.strerror})") from exc
    try:
        layer = Sdf.Layer.FindOrOpen(str(path))
    except Exception as exc:  # pxr raises Tf.ErrorException with a multi-line message
        first = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise SceneError(f"{path}: not a valid USD file ({first.strip()})") from exc
    if layer is None:
        raise SceneError(f"{path}: not a valid USD file")
    with c_stderr_to_log(log):  # USD's C++ warnings: shown with --debug
        layers, assets, unresolved = UsdUtils.ComputeAllDependencies(str(path))
    if unresolved:
        missing = ", ".join(sorted(str(p) for p in unresolved))
        raise SceneError(f"{path}: references missing asset file(s): {missing}")
    with c_stderr_to_log(log):
        stage = Usd.Stage.Open(layer, load=Usd.Stage.LoadAll)
    if stage is None:
        raise SceneError(f"{path}: USD could not open the stage")
    files = [layer.realPath.split("[", 1)[0] for layer in layers if layer.realPath] + [str(a) for a in assets]
    return stage, tuple(dict.fromkeys(files))


def _stage_correction(stage) -> np.ndarray:
    """4x4 row-vector matrix taking stage coordinates to Z-up meters."""
    from pxr import UsdGeom

    meters = float(UsdGeom.GetStageMetersPerUnit(stage))
    matrix = np.eye(4) * meters
    matrix[3, 3] = 1.0
    if UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.y:
        # (x, y, z)_Yup -> (x, -z, y)_Zup, a +90° rotation about X
        rot = np.array([[1.0, 0, 0, 0], [0, 0, 1, 0], [0, -1, 0, 0], [0, 0, 0, 1]])
        matrix = matrix @ rot
    return matrix


def _stage_has_collision_api(stage) -> bool:
    from pxr import Usd, UsdPhysics

    for prim in Usd.PrimRange(stage.GetPseudoRoot(), Usd.TraverseInstanceProxies()):
        if prim.HasAPI(UsdPhysics.CollisionAPI):
            return True
    return False


def _world_matrix(prim, xform_cache, correction: np.ndarray) -> np.ndarray:
    return np.array(xform_cache.GetLocalToWorldTransform(prim), dtype=np.float64) @ correction


def _local_geometry(prim) -> tuple[np.ndarray, np.ndarray]:
    from pxr import UsdGeom

    if prim.IsA(UsdGeom.Mesh):
        mesh = UsdGeom.Mesh(prim)
        points = mesh.GetPointsAttr().Get()
        counts = mesh.GetFaceVertexCountsAttr().Get()
        indices = mesh.GetFaceVertexIndicesAttr().Get()
        if points is None or counts is None or indices is None or len(points) == 0:
            return np.zeros((0, 3)), np.zeros((0, 3), dtype=np.int64)
        left = mesh.GetOrientationAttr().Get() == UsdGeom.Tokens.leftHanded
        verts = np.asarray(points, dtype=np.float64)
        tris = tessellate.fan_triangulate(np.asarray(counts), np.asarray(indices), left)
        if tris.size and (tris.max() >= len(verts) or tris.min() < 0):
            raise SceneError(f"{prim.GetPath()}: faceVertexIndices out of range")
        return verts, tris
    if prim.IsA(UsdGeom.Cube):
        return tessellate.cube(float(UsdGeom.Cube(prim).GetSizeAttr().Get()))
    if prim.IsA(UsdGeom.Sphere):
        return tessellate.sphere(float(UsdGeom.Sphere(prim).GetRadiusAttr().Get()))
    if prim.IsA(UsdGeom.Cylinder):
        c = UsdGeom.Cylinder(prim)
        return tessellate.cylinder(float(c.GetRadiusAttr().Get()), float(c.GetHeightAttr().Get()), str(c.GetAxisAttr().Get()))
    if prim.IsA(UsdGeom.Capsule):
        c = UsdGeom.Capsule(prim)
        return tessellate.capsule(float(c.GetRadiusAttr().Get()), float(c.GetHeightAttr().Get()), str(c.GetAxisAttr().Get()))
    if prim.IsA(UsdGeom.Cone):
        c = UsdGeom.Cone(prim)
        return tessellate.cone(float(c.GetRadiusAttr().Get()), float(c.GetHeightAttr().Get()), str(c.GetAxisAttr().Get()))
    if prim.IsA(UsdGeom.Plane):
        p = UsdGeom.Plane(prim)
        return tessellate.plane(float(p.GetWidthAttr().Get()), float(p.GetLengthAttr().Get()), str(p.GetAxisAttr().Get()))
    return np.zeros((0, 3)), np.zeros((0, 3), dtype=np.int64)


def _collect_gprim(prim, xform_cache, correction, has_collision_api, objects_by_path,
                   room_paths, collector: _Collector) -> None:
    from pxr import UsdPhysics

    verts, tris = _local_geometry(prim)
    if len(tris) == 0:
        return
    if not np.all(np.isfinite(verts)):
        raise SceneError(f"{prim.GetStage().GetRootLayer().realPath}: prim {prim.GetPath()} has NaN/inf points")
    matrix = _world_matrix(prim, xform_cache, correction)
    world = verts @ matrix[:3, :3] + matrix[3, :3]
    if np.linalg.det(matrix[:3, :3]) < 0:
        tris = tris[:, ::-1]
    collides, movable = not has_collision_api, False
    object_index = room_index = -1
    ancestor = prim
    while ancestor and ancestor.GetPath() != ancestor.GetPath().absoluteRootPath:
        if has_collision_api and not collides and ancestor.HasAPI(UsdPhysics.CollisionAPI):
            enabled = UsdPhysics.CollisionAPI(ancestor).GetCollisionEnabledAttr().Get()
            collides = enabled is None or bool(enabled)
        if ancestor.HasAPI(UsdPhysics.RigidBodyAPI):
            movable = True
        key = str(ancestor.GetPath())
        if object_index < 0 and key in objects_by_path:
            object_index = objects_by_path[key]
        if room_index < 0 and key in room_paths:
            room_index = room_paths[key]
        ancestor = ancestor.GetParent()
    start = collector.count
    collector.vertices.append(world[tris].reshape(-1, 3))
    collector.count += len(tris)
    collector.prims.append(PrimGeometry(
        path=str(prim.GetPath()),
        color=_display_color(prim),
        collides=collides,
        object_index=object_index,
        room_index=room_index,
        movable=movable,
        triangle_slice=slice(start, collector.count),
        name=prim.GetName(),
        material=_material_name(prim),
    ))


def _material_name(prim) -> str:
    from pxr import UsdShade

    material, _ = UsdShade.MaterialBindingAPI(prim).ComputeBoundMaterial()
    return material.GetPrim().GetName() if material else ""


def _display_color(prim) -> tuple[float, float, float]:
    from pxr import UsdGeom, UsdShade

    material, _ = UsdShade.MaterialBindingAPI(prim).ComputeBoundMaterial()
    if material:
        shader = material.ComputeSurfaceSource()[0]
        if shader:
            value = shader.GetInput("diffuseColor")
            if value and value.Get() is not None:
                return tuple(float(c) for c in value.Get())
    color = UsdGeom.Gprim(prim).GetDisplayColorAttr().Get()
    if color is not None and len(color) > 0:
        return tuple(float(c) for c in color[0])
    return DEFAULT_COLOR


def _semantic_class(prim) -> str | None:
    """The prim's semantic ``class`` label, from ``UsdSemantics`` or legacy Isaac semantics."""
    from pxr import UsdSemantics

    if prim.HasAPI(UsdSemantics.LabelsAPI, "class"):
        labels = UsdSemantics.LabelsAPI(prim, "class").GetLabelsAttr().Get()
        if labels:
            return str(labels[0]).strip().lower()
    for attr in prim.GetAttributes():
        name = attr.GetName()
        if name.startswith("semantic:") and name.endswith(":params:semanticType") and attr.Get() == "class":
            data = prim.GetAttribute(name.replace(":semanticType", ":semanticData")).Get()
            if data:
                return str(data).strip().lower()
    return None


def _object_record(prim, category: str, xform_cache, correction) -> dict:
    attrs = {}
    for key in OBJECT_ATTRS:
        attr = prim.GetAttribute(f"vlnverse:{key}")
        attrs[key] = str(attr.Get()) if attr and attr.HasAuthoredValue() else None
    from pxr import UsdPhysics

    return {
        "prim_path": str(prim.GetPath()),
        "name": prim.GetName(),
        "category": category,
        "matrix": _world_matrix(prim, xform_cache, correction),
        "movable": prim.HasAPI(UsdPhysics.RigidBodyAPI),
        **attrs,
    }


def _read_door(prim, xform_cache, correction) -> Door:
    def get(name, default=None):
        attr = prim.GetAttribute(f"vlnverse:{name}")
        return attr.Get() if attr and attr.HasAuthoredValue() else default

    matrix = _world_matrix(prim, xform_cache, correction)
    connects = get("connects", []) or []
    return Door(
        door_id=prim.GetName(),
        prim_path=str(prim.GetPath()),
        position=matrix[3, :3].copy(),
        width=float(get("doorWidth", 0.0)) * float(np.linalg.norm(matrix[0, :3])),
        connects=tuple(str(c) for c in connects),
        state=get("state"),
        open_plan=bool(get("openPlan", False)),
    )


def _finish_objects(records: list[dict], prims: list[PrimGeometry], triangles: np.ndarray) -> list[SceneObject]:
    owned: dict[int, list[slice]] = {}
    for prim in prims:
        if prim.object_index >= 0:
            owned.setdefault(prim.object_index, []).append(prim.triangle_slice)
    objects, used_ids = [], set()
    for index, record in enumerate(records):
        slices = owned.get(index)
        if not slices:
            log.warning("labelled prim %s has no geometry; skipped", record["prim_path"])
            continue
        tri_idx = np.concatenate([np.arange(s.start, s.stop) for s in slices])
        pts = triangles[tri_idx].reshape(-1, 3)
        object_id = record["name"]
        suffix = 1
        while object_id in used_ids:
            suffix += 1
            object_id = f"{record['name']}_{suffix}"
        used_ids.add(object_id)
        objects.append(SceneObject(
            object_id=object_id,
            prim_path=record["prim_path"],
            category=record["category"],
            aabb_min=pts.min(axis=0),
            aabb_max=pts.max(axis=0),
            obb=_oriented_box(pts, record["matrix"]),
            color=record["color"],
            material=record["material"],
            state=record["state"],
            movable=record["movable"],
            triangle_indices=tri_idx,
        ))
    _reindex_prim_owners(prims, records, objects)
    return objects


def _reindex_prim_owners(prims: list[PrimGeometry], records: list[dict], objects: list[SceneObject]) -> None:
    """Map record indices to indices in the final object list (skipped records drop out)."""
    by_path = {obj.prim_path: i for i, obj in enumerate(objects)}
    remap = {i: by_path.get(r["prim_path"], -1) for i, r in enumerate(records)}
    for k, prim in enumerate(prims):
        if prim.object_index >= 0 and remap[prim.object_index] != prim.object_index:
            prims[k] = PrimGeometry(**{**prim.__dict__, "object_index": remap[prim.object_index]})


def _oriented_box(points: np.ndarray, matrix: np.ndarray) -> OrientedBox:
    """Box aligned with the prim's own axes (scale removed) enclosing ``points``."""
    axes = matrix[:3, :3].copy()
    norms = np.linalg.norm(axes, axis=1, keepdims=True)
    rotation = (axes / np.where(norms > 0, norms, 1.0)).T  # columns = world directions of local axes
    u, _, vt = np.linalg.svd(rotation)
    rotation = u @ vt
    local = points @ rotation
    lo, hi = local.min(axis=0), local.max(axis=0)
    return OrientedBox(center=rotation @ ((lo + hi) / 2), half_extents=(hi - lo) / 2, rotation=rotation)


def _finish_rooms(rooms: list[Room], prims: list[PrimGeometry], triangles: np.ndarray) -> list[Room]:
    """Attach each room's floor triangles: its ``Floor`` prim, else its lowest upward faces."""
    if not rooms:
        return rooms
    normals = np.cross(triangles[:, 1] - triangles[:, 0], triangles[:, 2] - triangles[:, 0])
    lengths = np.linalg.norm(normals, axis=1)
    upward = normals[:, 2] > 0.9 * np.maximum(lengths, 1e-12)
    finished = []
    for index, room in enumerate(rooms):
        floor_prefix = room.prim_path + "/Floor"
        floor_slices = [p.triangle_slice for p in prims if p.room_index == index and p.object_index < 0
                        and (p.path == floor_prefix or p.path.startswith(floor_prefix + "/"))]
        if not floor_slices:
            floor_slices = [p.triangle_slice for p in prims if p.room_index == index and p.object_index < 0]
        tri_idx = (np.concatenate([np.arange(s.start, s.stop) for s in floor_slices])
                   if floor_slices else np.zeros(0, dtype=np.int64))
        tri_idx = tri_idx[upward[tri_idx]]
        if tri_idx.size:
            top = triangles[tri_idx, :, 2].mean(axis=1)
            tri_idx = tri_idx[top <= top.min() + 0.05]
        else:
            log.warning("room %s has no upward-facing floor geometry", room.prim_path)
        finished.append(Room(room.room_id, room.room_type, room.prim_path, tri_idx))
    return finished
