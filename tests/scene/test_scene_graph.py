"""Scene graph relations, exports and view-dependent relations."""

from __future__ import annotations

import json

import pytest

from tests.scene import builders as b
from vlnverse.scene import build_occupancy, load_scene
from vlnverse.scene.scene_graph import (
    build_scene_graph,
    load_scene_graph,
    relative_direction,
    save_scene_graph,
    scene_graph_summary,
    support_of,
)


@pytest.fixture()
def kitchen(tmp_path):
    scene = load_scene(b.kitchen_with_table(tmp_path / "k.usda"))
    return scene, build_scene_graph(scene, build_occupancy(scene))


def test_cup_on_table_in_kitchen(kitchen):
    _, graph = kitchen
    assert graph.has_edge("cup_0", "table_0", key="on")
    assert graph.has_edge("table_0", "kitchen_0", key="in")
    assert graph.has_edge("cup_0", "kitchen_0", key="in")
    assert support_of(graph, "table_0") is None and support_of(graph, "lamp_0") is None
    node = graph.nodes["cup_0"]
    assert node["category"] == "cup" and node["color"] == "red" and node["room"] == "kitchen_0"
    assert graph.nodes["kitchen_0"]["room_type"] == "kitchen"
    assert graph.nodes["kitchen_0"]["area"] == pytest.approx(20.0)


def test_near_and_next_to_are_symmetric_and_thresholded(kitchen):
    _, graph = kitchen
    assert graph.has_edge("cup_0", "table_0", key="next_to") and graph.has_edge("table_0", "cup_0", key="next_to")
    # the lamp is 0.4 m+ from the table box in xy and 1.45 m above it: farther than near (1 m)
    assert not graph.has_edge("lamp_0", "table_0", key="near")


def test_cup_not_on_table_when_floating(tmp_path):
    stage = b.new_stage(tmp_path / "f.usda")
    b.add_room(stage, "kitchen_0", "kitchen", 0, 0, 4, 4)
    table = b.add_box(stage, "/World/Rooms/kitchen_0/Objects/table_0", (2, 2, 0.375), (1, 1, 0.75))
    b.label(table.GetPrim(), "table")
    cup = b.add_box(stage, "/World/Rooms/kitchen_0/Objects/cup_0", (2, 2, 1.05), (0.1, 0.1, 0.1))
    b.label(cup.GetPrim(), "cup")
    stage.GetRootLayer().Save()
    scene = load_scene(tmp_path / "f.usda")
    graph = build_scene_graph(scene, build_occupancy(scene))
    assert not graph.has_edge("cup_0", "table_0", key="on")


def test_doors_connect_rooms_and_rooms_are_adjacent(tmp_path):
    from pxr import Gf, Sdf, UsdGeom

    stage = b.new_stage(tmp_path / "two.usda")
    b.add_room(stage, "bedroom_0", "bedroom", 0, 0, 4, 4)
    b.add_room(stage, "hallway_1", "hallway", 4.1, 0, 8, 4)
    b.add_walls_around(stage, "/World/Walls", 0, 0, 8, 4)
    b.add_box(stage, "/World/Walls/Mid0", (4.05, 0.75, 1.3), (0.1, 1.5, 2.6))
    b.add_box(stage, "/World/Walls/Mid1", (4.05, 3.25, 1.3), (0.1, 1.5, 2.6))
    b.add_box(stage, "/World/DoorFloor", (4.05, 2.0, -0.05), (0.1, 1.0, 0.1))
    door = UsdGeom.Xform.Define(stage, "/World/Doors/door_0")
    UsdGeom.XformCommonAPI(door).SetTranslate(Gf.Vec3d(4.05, 2.0, 0.0))
    prim = door.GetPrim()
    prim.CreateAttribute("vlnverse:connects", Sdf.ValueTypeNames.StringArray).Set(["bedroom_0", "hallway_1"])
    prim.CreateAttribute("vlnverse:doorWidth", Sdf.ValueTypeNames.Float).Set(1.0)
    stage.GetRootLayer().Save()
    scene = load_scene(tmp_path / "two.usda")
    occ = build_occupancy(scene)
    graph = build_scene_graph(scene, occ)
    assert graph.has_edge("door_0", "bedroom_0", key="connects") and graph.has_edge("door_0", "hallway_1", key="connects")
    assert graph.has_edge("bedroom_0", "hallway_1", key="adjacent")
    assert graph.nodes["door_0"]["width"] == pytest.approx(1.0)
    assert len(occ.component_areas) == 1  # the 1 m doorway lets a 0.3 m agent through
    assert "leads to hallway_1" in scene_graph_summary(graph)


def test_json_round_trip_and_summary(kitchen, tmp_path):
    _, graph = kitchen
    save_scene_graph(graph, tmp_path / "g.json")
    data = json.loads((tmp_path / "g.json").read_text())
    assert {"nodes", "edges"} <= set(data)
    again = load_scene_graph(tmp_path / "g.json")
    assert sorted(again.edges(keys=True)) == sorted(graph.edges(keys=True))
    summary = scene_graph_summary(graph)
    assert summary.startswith("kitchen_0 (kitchen, 20.0 m²):")
    assert "brown wood dining table table_0 (cup_0 on it)" in summary


@pytest.mark.parametrize("target,expected", [((2, 0), "ahead"), ((0, 2), "left"), ((0, -2), "right"), ((-2, 0.1), "behind")])
def test_relative_direction(target, expected):
    assert relative_direction((0.0, 0.0, 0.0), target) == expected


def test_relative_direction_follows_yaw():
    import math

    assert relative_direction((0.0, 0.0, math.pi / 2), (0, 2)) == "ahead"
    assert relative_direction((0.0, 0.0, math.pi / 2), (2, 0)) == "right"
