import networkx as nx
import numpy as np
import pytest

from vlnverse.errors import ConfigError
from vlnverse.scene.procgen.floorplan import DOOR_MAX_WIDTH, DOOR_MIN_WIDTH, sample_floorplan
from vlnverse.scene.procgen.program import sample_program


@pytest.mark.parametrize("num_rooms", [3, 5, 8, 12])
def test_plans_connect_every_room_with_rule_following_doors(num_rooms):
    for seed in range(15):
        plan = sample_floorplan(np.random.default_rng(seed), num_rooms)
        assert len(plan.rooms) == num_rooms
        graph = nx.Graph()
        graph.add_nodes_from(range(num_rooms))
        for door in plan.doors:
            if len(door.rooms) == 2:
                graph.add_edge(*door.rooms)
            if not door.open_plan:
                assert DOOR_MIN_WIDTH - 1e-6 <= door.width <= DOOR_MAX_WIDTH + 1e-6
        assert nx.is_connected(graph)
        types = {r.index: r.room_type for r in plan.rooms}
        for room in plan.rooms:
            if room.room_type in ("bedroom", "bathroom"):
                neighbours = {types[n] for n in graph.neighbors(room.index)}
                assert neighbours & {"hallway", "living_room", "dining_room"}, (seed, room.room_id, neighbours)
        assert 0.1 <= plan.interior_thickness <= 0.2 and 0.1 <= plan.exterior_thickness <= 0.2
        assert 2.6 <= plan.wall_height <= 3.0
        assert any(o.kind == "window" for w in plan.walls if w.exterior for o in w.openings)
        if num_rooms >= 6:
            assert "hallway" in types.values()


def test_rooms_tile_the_footprint_and_some_are_l_shaped():
    shapes = set()
    for seed in range(30):
        plan = sample_floorplan(np.random.default_rng(seed), 7)
        assert sum(r.area for r in plan.rooms) == pytest.approx(plan.footprint_area)
        shapes |= {len(r.rects) for r in plan.rooms}
    assert 1 in shapes and 2 in shapes  # rectangles and L-shapes


def test_open_plan_connections_have_no_wall():
    found = False
    for seed in range(40):
        plan = sample_floorplan(np.random.default_rng(seed), 6)
        for door in plan.doors:
            if door.open_plan:
                found = True
                pair = tuple(sorted(door.rooms))
                assert not any(tuple(sorted(w.segment.rooms)) == pair for w in plan.walls)
    assert found


def test_different_seeds_give_different_plans_and_same_seed_same_plan():
    a = sample_floorplan(np.random.default_rng(1), 8)
    b = sample_floorplan(np.random.default_rng(1), 8)
    c = sample_floorplan(np.random.default_rng(2), 8)
    assert np.array_equal(a.labels, b.labels)
    assert not np.array_equal(a.labels, c.labels) or a.doors != c.doors


def test_program_rejects_room_counts_out_of_range():
    with pytest.raises(ConfigError):
        sample_program(np.random.default_rng(0), 2)
    with pytest.raises(ConfigError):
        sample_program(np.random.default_rng(0), 13)
