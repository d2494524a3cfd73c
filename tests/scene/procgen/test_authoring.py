import networkx as nx
from pxr import Usd, UsdGeom, UsdPhysics, UsdSemantics

from vlnverse.scene import load_scene
from vlnverse.scene.occupancy import build_occupancy
from vlnverse.scene.procgen.authoring import write_house
from vlnverse.scene.procgen.house import HouseOptions, generate_house
from vlnverse.scene.procgen.validation import asset_validator_findings, validate_scene
from vlnverse.scene.scene_graph import build_scene_graph


def test_same_house_gives_byte_identical_files(small_house, tmp_path):
    for fmt in ("usdc", "usda"):
        a = write_house(small_house, tmp_path / "a" / f"scene.{fmt}", fmt)
        b = write_house(generate_house(11, HouseOptions(min_rooms=6, max_rooms=7)), tmp_path / "b" / f"scene.{fmt}", fmt)
        assert a.read_bytes() == b.read_bytes()
    c = write_house(generate_house(99, HouseOptions(min_rooms=6, max_rooms=7)), tmp_path / "c" / "scene.usdc")
    assert c.read_bytes() != (tmp_path / "a" / "scene.usdc").read_bytes()


def test_stage_follows_the_authoring_contract(small_scene_file, small_house):
    stage = Usd.Stage.Open(str(small_scene_file))
    assert UsdGeom.GetStageUpAxis(stage) == "Z" and UsdGeom.GetStageMetersPerUnit(stage) == 1.0
    assert stage.GetDefaultPrim().GetPath() == "/World"
    assert stage.GetPrimAtPath("/World/Looks").GetTypeName() == "Scope"
    assert stage.GetPrimAtPath("/World/PhysicsScene").IsA(UsdPhysics.Scene)
    for room in small_house.plan.rooms:
        prim = stage.GetPrimAtPath(f"/World/Rooms/{room.room_id}")
        assert prim.GetAttribute("vlnverse:roomType").Get() == room.room_type
        floor = prim.GetChild("Floor")
        assert floor.IsA(UsdGeom.Mesh) and floor.HasAPI(UsdPhysics.CollisionAPI)
        assert prim.GetChild("Ceiling").IsValid() and prim.GetChild("Walls").IsValid()
    for obj in small_house.objects:
        prim = stage.GetPrimAtPath(f"/World/Rooms/{small_house.plan.rooms[obj.room].room_id}/Objects/{obj.object_id}")
        labels = UsdSemantics.LabelsAPI(prim, "class").GetLabelsAttr().Get()
        assert list(labels) == [obj.category]
        assert prim.GetAttribute("vlnverse:color").Get() == obj.color
        assert prim.GetAttribute("vlnverse:material").Get() == obj.material
        assert prim.HasAPI(UsdPhysics.RigidBodyAPI) == obj.movable
        for child in prim.GetChildren():
            assert child.GetAttribute("subdivisionScheme").Get() == "none"
            assert child.HasAPI(UsdPhysics.CollisionAPI)
    doors = stage.GetPrimAtPath("/World/Doors").GetChildren()
    assert len(doors) == len(small_house.doors)
    for prim in doors:
        assert len(prim.GetAttribute("vlnverse:connects").Get()) in (1, 2)
        assert prim.GetAttribute("vlnverse:doorWidth").Get() > 0
        assert prim.GetAttribute("vlnverse:openPlan").Get() in (True, False)


def test_environment_layer_loads_it_with_reachable_rooms_and_on_relations(small_scene_file, small_house):
    scene = load_scene(small_scene_file)
    assert len(scene.rooms) == len(small_house.plan.rooms)
    leaves = sum(1 for d in small_house.doors if d.leaf)
    assert len(scene.objects) == len(small_house.objects) + leaves
    occ = build_occupancy(scene, agent_radius=0.30)
    graph = build_scene_graph(scene, occ)
    on_edges = [(u, v) for u, v, d in graph.edges(data=True) if d.get("relation") == "on"]
    assert len(on_edges) >= sum(1 for o in small_house.objects if o.support is not None) * 0.9
    assert nx.number_of_nodes(graph) > 0


def test_passes_asset_validator_and_our_checks(small_scene_file):
    assert [f for f in asset_validator_findings(small_scene_file) if f.severity == "error"] == []
    report = validate_scene(small_scene_file, asset_validator=False)
    assert report.ok, [f.message for f in report.errors]
    assert report.facts["navigable_area_m2"] > 5


def test_our_checks_catch_an_unreachable_room(small_house, tmp_path):
    from pxr import Sdf

    path = write_house(small_house, tmp_path / "scene.usda", "usda")
    layer = Sdf.Layer.FindOrOpen(str(path))
    # wall off the first interior doorway with a box object across it
    door = next(d for d in small_house.doors if len(d.rooms) == 2 and not d.open_plan)
    stage = Usd.Stage.Open(layer)
    room = small_house.plan.rooms[door.rooms[0]].room_id
    blocker = UsdGeom.Cube.Define(stage, f"/World/Rooms/{room}/Objects/blocker/Geom")
    blocker.CreateSizeAttr(1.0)
    xf = UsdGeom.Xformable(blocker)
    c = door.center
    xf.AddTranslateOp().Set((float(c[0]), float(c[1]), 0.7))
    xf.AddScaleOp().Set((2.2, 2.2, 1.2))
    UsdSemantics.LabelsAPI.Apply(stage.GetPrimAtPath(f"/World/Rooms/{room}/Objects/blocker"), "class").CreateLabelsAttr(["box"])
    stage.Save()
    report = validate_scene(path, asset_validator=False)
    assert not report.ok
    assert {f.rule for f in report.errors} & {"reachable", "navigable_area", "wall_penetration"}
