"""USD loading: geometry, semantics, rooms, units/up-axis normalization and bad input."""

from __future__ import annotations

import numpy as np
import pytest
from pxr import Gf, Sdf, Usd, UsdGeom

from tests.scene import builders as b
from vlnverse.errors import SceneError
from vlnverse.scene import load_scene


def test_kitchen_objects_rooms_and_attributes(tmp_path):
    scene = load_scene(b.kitchen_with_table(tmp_path / "k.usda"))
    cats = {o.object_id: o for o in scene.objects}
    assert set(cats) == {"table_0", "cup_0", "lamp_0"}
    table = cats["table_0"]
    assert table.category == "dining table" and table.color == "brown" and table.material == "wood"
    np.testing.assert_allclose(table.aabb_min, [1.9, 1.6, 0.0], atol=1e-6)
    np.testing.assert_allclose(table.aabb_max, [3.1, 2.4, 0.75], atol=1e-6)
    assert cats["lamp_0"].state == "on"
    assert [(r.room_id, r.room_type) for r in scene.rooms] == [("kitchen_0", "kitchen")]
    # the floor box's top face: two triangles at z = 0
    floor = scene.triangles[scene.rooms[0].floor_triangle_indices]
    assert len(floor) == 2 and np.allclose(floor[:, :, 2], 0.0)
    # 12 cubes of 12 triangles each, all colliding
    assert scene.triangles.shape == (12 * 12, 3, 3) and scene.collision_mask.all()
    cup_color = scene.prims[scene.triangle_prim[scene.objects[1].triangle_indices[0]]].color
    np.testing.assert_allclose(cup_color, (0.9, 0.1, 0.1), atol=1e-6)


def test_yup_centimetre_stage_loads_like_its_zup_metre_twin(tmp_path):
    src = b.kitchen_with_table(tmp_path / "k.usda")
    twin = b.yup_centimetre_copy(src, tmp_path / "k_yup_cm.usda")
    a, c = load_scene(src), load_scene(twin)
    assert c.source_up_axis == "Y" and c.source_meters_per_unit == pytest.approx(0.01)
    np.testing.assert_allclose(a.triangles, c.triangles, atol=1e-6)
    assert [o.object_id for o in a.objects] == [o.object_id for o in c.objects]
    np.testing.assert_allclose(a.objects[0].aabb_max, c.objects[0].aabb_max, atol=1e-6)


def test_implicit_prims_mesh_orientation_instances_visibility(tmp_path):
    stage = b.new_stage(tmp_path / "prims.usda")
    for i, kind in enumerate([UsdGeom.Sphere, UsdGeom.Cylinder, UsdGeom.Capsule, UsdGeom.Cone]):
        prim = kind.Define(stage, f"/World/Shape{i}")
        UsdGeom.XformCommonAPI(prim).SetTranslate(Gf.Vec3d(3.0 * i, 0, 1))
    plane = UsdGeom.Plane.Define(stage, "/World/Ground")
    plane.GetWidthAttr().Set(20.0)
    plane.GetLengthAttr().Set(20.0)
    mesh = UsdGeom.Mesh.Define(stage, "/World/Quad")
    mesh.GetPointsAttr().Set([(0, 0, 2), (1, 0, 2), (1, 1, 2), (0, 1, 2)])
    mesh.GetFaceVertexCountsAttr().Set([4])
    mesh.GetFaceVertexIndicesAttr().Set([0, 1, 2, 3])
    mesh.GetOrientationAttr().Set(UsdGeom.Tokens.leftHanded)
    hidden = UsdGeom.Cube.Define(stage, "/World/Hidden")
    hidden.GetVisibilityAttr().Set(UsdGeom.Tokens.invisible)
    guide = UsdGeom.Cube.Define(stage, "/World/Guide")
    guide.GetPurposeAttr().Set(UsdGeom.Tokens.guide)
    # an instanced prototype used twice
    proto = UsdGeom.Xform.Define(stage, "/World/Proto")
    UsdGeom.Cube.Define(stage, "/World/Proto/Box")
    proto.GetPrim().SetActive(True)
    for k in range(2):
        inst = UsdGeom.Xform.Define(stage, f"/World/Inst{k}")
        inst.GetPrim().GetReferences().AddInternalReference("/World/Proto")
        inst.GetPrim().SetInstanceable(True)
        UsdGeom.XformCommonAPI(inst).SetTranslate(Gf.Vec3d(0, 5.0 + 3 * k, 1))
    stage.GetRootLayer().Save()
    scene = load_scene(tmp_path / "prims.usda")
    paths = [p.path for p in scene.prims]
    assert "/World/Hidden" not in paths and "/World/Guide" not in paths
    assert sum(p.startswith("/World/Inst") for p in paths) == 2
    quad = scene.prims[paths.index("/World/Quad")]
    tri = scene.triangles[quad.triangle_slice][0]
    normal = np.cross(tri[1] - tri[0], tri[2] - tri[0])
    assert normal[2] < 0  # left-handed winding flips the face normal
    # implicit shapes are closed with outward normals: divergence theorem gives positive volume
    for path, expected in [("/World/Shape0", 4 / 3 * np.pi), ("/World/Shape1", 2 * np.pi)]:
        tris = scene.triangles[scene.prims[paths.index(path)].triangle_slice]
        volume = np.einsum("ij,ij->i", tris[:, 0], np.cross(tris[:, 1], tris[:, 2])).sum() / 6
        assert volume == pytest.approx(expected, rel=0.1)


def test_legacy_isaac_semantics_and_no_collision_api_means_all_collide(tmp_path):
    stage = b.new_stage(tmp_path / "legacy.usda")
    cube = UsdGeom.Cube.Define(stage, "/World/Chair")
    prim = cube.GetPrim()
    prim.CreateAttribute("semantic:Semantics:params:semanticType", Sdf.ValueTypeNames.String).Set("class")
    prim.CreateAttribute("semantic:Semantics:params:semanticData", Sdf.ValueTypeNames.String).Set("Chair")
    UsdGeom.Cube.Define(stage, "/World/Other")
    stage.GetRootLayer().Save()
    scene = load_scene(tmp_path / "legacy.usda")
    assert [(o.object_id, o.category) for o in scene.objects] == [("Chair", "chair")]
    assert scene.collision_mask.all()


def test_collision_api_restricts_colliding_geometry(tmp_path):
    stage = b.new_stage(tmp_path / "c.usda")
    b.add_box(stage, "/World/Wall", (0, 0, 1), (1, 1, 2), collision=True)
    b.add_box(stage, "/World/Decal", (3, 0, 1), (1, 1, 2), collision=False)
    stage.GetRootLayer().Save()
    scene = load_scene(tmp_path / "c.usda")
    flags = {p.name: p.collides for p in scene.prims}
    assert flags == {"Wall": True, "Decal": False}


@pytest.mark.parametrize("name,content,message", [
    ("missing.usda", None, "no such file"),
    ("notes.txt", "hello", "not a USD file"),
    ("broken.usda", "#usda 1.0\n( this is not usd", "not a valid USD file"),
    ("empty.usda", "#usda 1.0\n", "no renderable geometry"),
])
def test_bad_files_give_scene_errors_naming_the_file(tmp_path, name, content, message):
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    with pytest.raises(SceneError, match=message) as info:
        load_scene(path)
    assert str(path) in str(info.value)


def test_missing_references_are_listed(tmp_path):
    stage = b.new_stage(tmp_path / "refs.usda")
    prim = stage.DefinePrim("/World/Sofa")
    prim.GetReferences().AddReference("./assets/sofa.usd")
    prim2 = stage.DefinePrim("/World/Lamp")
    prim2.GetReferences().AddReference("./assets/lamp.usdc")
    stage.GetRootLayer().Save()
    with pytest.raises(SceneError, match="missing asset") as info:
        load_scene(tmp_path / "refs.usda")
    assert "sofa.usd" in str(info.value) and "lamp.usdc" in str(info.value)


def test_nan_points_are_rejected(tmp_path):
    stage = b.new_stage(tmp_path / "nan.usda")
    mesh = UsdGeom.Mesh.Define(stage, "/World/Bad")
    mesh.GetPointsAttr().Set([(0, 0, 0), (1, 0, float("nan")), (1, 1, 0)])
    mesh.GetFaceVertexCountsAttr().Set([3])
    mesh.GetFaceVertexIndicesAttr().Set([0, 1, 2])
    stage.GetRootLayer().Save()
    with pytest.raises(SceneError, match="NaN/inf points"):
        load_scene(tmp_path / "nan.usda")


def test_unreadable_file(tmp_path, monkeypatch):
    """As a file the user may not read (provoked by patching: root reads mode-000 files)."""
    import builtins

    from vlnverse.scene import usd_loader

    path = b.box_room(tmp_path / "room.usda")

    def denied(file, *args, **kwargs):
        if str(file) == str(path):
            raise PermissionError(13, "Permission denied", str(file))
        return builtins.open(file, *args, **kwargs)

    monkeypatch.setattr(usd_loader, "open", denied, raising=False)
    with pytest.raises(SceneError, match=r"room.usda: cannot read file \(Permission denied\)"):
        load_scene(path)


def test_usdz_and_usdc_load(tmp_path):
    src = b.box_room(tmp_path / "room.usda")
    layer = Sdf.Layer.FindOrOpen(str(src))
    layer.Export(str(tmp_path / "room.usdc"))
    from pxr import UsdUtils

    assert UsdUtils.CreateNewUsdzPackage(str(tmp_path / "room.usdc"), str(tmp_path / "room.usdz"))
    ref = load_scene(src)
    for name in ("room.usdc", "room.usdz"):
        other = load_scene(tmp_path / name)
        np.testing.assert_allclose(other.triangles, ref.triangles)
    assert Usd.Stage.Open(str(tmp_path / "room.usdz")) is not None
