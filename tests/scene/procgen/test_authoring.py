import networkx as nx
from pxr import Usd, UsdGeom, UsdPhysics, UsdSemantics

from tests.scene.builders import add_box, add_walls_around, label, new_stage
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


def _house_with(small_house, path, edit):
    """The small house written as USDA, then changed by ``edit(stage)``."""
    write_house(small_house, path, "usda")
    stage = Usd.Stage.Open(str(path))
    edit(stage)
    stage.Save()
    return validate_scene(path, asset_validator=False)


def _object(stage, room_id, name, center, size, category="box"):
    """A labelled box object (``category=None``: unlabelled) in a room's Objects."""
    prim = UsdGeom.Xform.Define(stage, f"/World/Rooms/{room_id}/Objects/{name}").GetPrim()
    add_box(stage, f"{prim.GetPath()}/Geom", center, size)
    if category:
        label(prim, category)


def _rules(report):
    return {f.rule for f in report.errors}


def test_a_blocked_doorway_cuts_off_the_room_behind_it(small_house, tmp_path):
    plan = small_house.plan
    alone = [k for k in range(len(plan.rooms)) if sum(k in d.rooms for d in small_house.doors) == 1]
    door = next(d for d in small_house.doors if len(d.rooms) == 2 and set(d.rooms) & set(alone))
    room = next(k for k in door.rooms if k in alone)
    behind = plan.rooms[room].room_id
    # A box across the opening on the room's side, 1 cm clear of the wall's bounds (the wall is
    # 15 cm thick): nothing touches a wall, but no agent gets through.
    along, across = door.width + 0.2, 0.4
    size = (across, along, 1.0) if door.segment.vertical else (along, across, 1.0)
    cx, cy = door.center + door.segment.normal_into(room) * (0.075 + 0.01 + across / 2)
    report = _house_with(small_house, tmp_path / "scene.usda",
                         lambda stage: _object(stage, behind, "blocker", (float(cx), float(cy), 0.5), size))
    reachable = [f for f in report.errors if f.rule == "reachable"]
    assert len(reachable) == 1 and reachable[0].message.endswith(f": {behind}")
    # A sealed room has no free space at all (only reachable floor counts), so its area fails too.
    assert _rules(report) <= {"reachable", "navigable_area"}
    assert all(behind in f.message for f in report.errors)


def test_a_filled_room_has_too_little_navigable_area(small_house, tmp_path):
    room = next(r for r in small_house.plan.rooms if len(r.rects) == 1)
    x0, y0, x1, y1 = room.rects[0]
    inset = 0.35  # leaves a 0.3 m strip between box and wall: too narrow for the agent
    size = (x1 - x0 - 2 * inset, y1 - y0 - 2 * inset, 1.0)
    report = _house_with(small_house, tmp_path / "scene.usda", lambda stage: _object(
        stage, room.room_id, "filler", ((x0 + x1) / 2, (y0 + y1) / 2, 0.5), size))
    assert "navigable_area" in _rules(report) and "wall_penetration" not in _rules(report)
    assert any(room.room_id in f.message for f in report.errors if f.rule == "navigable_area")


def test_an_unlabelled_object_and_a_wall_penetration_are_named(small_house, tmp_path):
    room = small_house.plan.rooms[0]
    x0, y0, x1, y1 = room.rects[0]

    def edit(stage):
        _object(stage, room.room_id, "mystery", ((x0 + x1) / 2, (y0 + y1) / 2, 0.2), (0.2, 0.2, 0.2), category=None)
        _object(stage, room.room_id, "through_wall", (x0, (y0 + y1) / 2, 0.5), (0.4, 0.4, 0.4))

    report = _house_with(small_house, tmp_path / "scene.usda", edit)
    assert _rules(report) == {"labelled", "wall_penetration"}
    by_rule = {f.rule: f for f in report.errors}
    assert by_rule["labelled"].at == f"/World/Rooms/{room.room_id}/Objects/mystery"
    assert "through_wall" in by_rule["wall_penetration"].message


def test_a_scene_without_rooms_is_reported(tmp_path):
    path = new_stage(tmp_path / "bare.usda")
    add_box(path, "/World/Floor", (2.0, 2.0, -0.05), (4.0, 4.0, 0.1))
    add_walls_around(path, "/World/Walls", 0.0, 0.0, 4.0, 4.0)
    path.GetRootLayer().Save()
    report = validate_scene(tmp_path / "bare.usda", asset_validator=False)
    assert _rules(report) == {"rooms"}
