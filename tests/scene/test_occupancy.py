"""Occupancy and navigable maps: exact cells on simple stages, thin rotated walls, memory cap."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from tests.scene import builders as b
from vlnverse.errors import ConfigError, NavigationError, SceneError
from vlnverse.scene import build_occupancy, load_scene
from vlnverse.scene.occupancy import floor_levels


def test_box_room_free_and_navigable_are_exact(tmp_path):
    occ = build_occupancy(load_scene(b.box_room(tmp_path / "r.usda", 4.0, 3.0)))
    assert occ.free_area_m2 == pytest.approx(4.0 * 3.0)
    assert occ.navigable_area_m2 == pytest.approx((4.0 - 0.6) * (3.0 - 0.6))
    assert occ.is_navigable((0.31, 1.5)) and not occ.is_navigable((0.29, 1.5))
    assert occ.is_free((0.01, 0.01)) and not occ.is_free((-0.01, 1.0))
    assert len(occ.component_areas) == 1 and occ.floor_height == pytest.approx(0.0, abs=1e-6)


def test_table_blocks_hanging_lamp_does_not(tmp_path):
    occ = build_occupancy(load_scene(b.kitchen_with_table(tmp_path / "k.usda")))
    assert not occ.is_free((2.5, 2.0))  # under the 0.75 m table top
    assert not occ.is_free((1.92, 1.62)) and occ.is_free((1.88, 1.58))
    assert occ.is_free((1.0, 1.0))  # under the lamp hanging at 2.2 m
    assert occ.free_area_m2 == pytest.approx(5 * 4 - 1.2 * 0.8)


def test_taller_agent_is_blocked_by_the_lamp(tmp_path):
    occ = build_occupancy(load_scene(b.kitchen_with_table(tmp_path / "k.usda")), agent_height=2.3)
    assert not occ.is_free((1.0, 1.0))


@pytest.mark.parametrize("yaw", [0.0, 17.0, 30.0, 45.0, 62.5, 89.0])
def test_rotated_thin_wall_is_never_missed(tmp_path, yaw):
    occ = build_occupancy(load_scene(b.rotated_thin_wall(tmp_path / "w.usda", yaw)))
    # the wall seals the room into two halves: one is kept, the other is not reachable floor
    from scipy import ndimage

    _, free_regions = ndimage.label(occ.free)
    assert free_regions == 1 and len(occ.component_areas) == 1
    # the two sides of the wall centre line are never joined: exactly one of them is floor
    normal = np.array([-math.sin(math.radians(yaw)), math.cos(math.radians(yaw))])
    a, c = np.array([3.0, 3.0]) + 1.0 * normal, np.array([3.0, 3.0]) - 1.0 * normal
    assert occ.is_navigable(a) != occ.is_navigable(c)


def test_sealed_boxes_are_not_floor(tmp_path):
    occ = build_occupancy(load_scene(b.room_with_sealed_boxes(tmp_path / "s.usda")))
    for inside in ((2.0, 2.0), (1.7, 1.7), (5.2, 3.25)):  # pillar centre and corner area, fridge
        assert not occ.is_free(inside) and not occ.is_navigable(inside)
    assert occ.free_area_m2 == pytest.approx(6 * 4 - 1.0 - 0.8 * 0.7, abs=0.05)
    assert len(occ.component_areas) == 1
    # a point inside the pillar is no path end: the nearest floor is outside it
    p = occ.nearest_navigable((2.0, 2.0, 0.0))
    assert occ.is_navigable(p) and max(abs(p[0] - 2.0), abs(p[1] - 2.0)) >= 0.5 + 0.3 - 1e-6


def test_a_scene_without_floor_warns_with_the_level_chosen(tmp_path, caplog):
    scene = load_scene(b.table_without_floor(tmp_path / "t.usda"))
    with caplog.at_level("WARNING", logger="vlnverse.scene.occupancy"):
        levels = floor_levels(scene)
    assert levels == [pytest.approx(0.75, abs=1e-3)]
    assert "no floor" in caplog.text and "z = 0.75" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="vlnverse.scene.occupancy"):
        floor_levels(load_scene(b.box_room(tmp_path / "r.usda")))
    assert "no floor" not in caplog.text


def test_nearest_navigable_and_sampling(tmp_path):
    occ = build_occupancy(load_scene(b.box_room(tmp_path / "r.usda")))
    p = occ.nearest_navigable((0.05, 0.05, 0.0))
    assert occ.is_navigable(p) and np.hypot(p[0] - 0.325, p[1] - 0.325) < 0.05
    pts = occ.sample_navigable(np.random.default_rng(0), 50)
    assert occ.is_navigable(pts).all()
    np.testing.assert_array_equal(pts, occ.sample_navigable(np.random.default_rng(0), 50))
    with pytest.raises(NavigationError, match="non-finite point"):
        occ.nearest_navigable((np.nan, 0.0))


def test_room_map_and_segmentation(tmp_path):
    occ = build_occupancy(load_scene(b.box_room(tmp_path / "r.usda")))
    assert occ.room_at((2.0, 1.5)) == 0 and occ.rooms[0].room_type == "bedroom"
    seg = build_occupancy(load_scene(b.two_rooms_with_a_door(tmp_path / "w.usda")))
    assert len(seg.rooms) == 2 and {r.room_type for r in seg.rooms} == {"unknown"}


def test_multi_storey_levels_chosen_by_height(tmp_path):
    stage = b.new_stage(tmp_path / "two.usda")
    b.add_box(stage, "/World/Ground", (2, 2, -0.05), (4, 4, 0.1))
    b.add_box(stage, "/World/Upper", (2, 2, 3.0), (4, 4, 0.1))  # top surface at 3.05 m
    b.add_box(stage, "/World/Table", (1, 1, 0.725), (1, 1, 0.05))
    b.add_box(stage, "/World/Sofa", (3, 3, 3.3), (1, 1, 0.4))  # on the upper floor
    stage.GetRootLayer().Save()
    scene = load_scene(tmp_path / "two.usda")
    assert floor_levels(scene) == pytest.approx([0.0, 3.05], abs=1e-6)
    ground = build_occupancy(scene, level=0)
    upper = build_occupancy(scene, z=3.5)
    assert upper.floor_height == pytest.approx(3.05)
    assert not ground.is_free((1, 1)) and upper.is_free((1, 1))
    assert ground.is_free((3, 3)) and not upper.is_free((3, 3))
    with pytest.raises(SceneError, match="level 5"):
        build_occupancy(scene, level=5)


def test_memory_cap_suggests_coarser_resolution(tmp_path):
    scene = load_scene(b.box_room(tmp_path / "r.usda"))
    with pytest.raises(SceneError, match="coarser resolution") as info:
        build_occupancy(scene, resolution=0.01, max_cells=10_000)
    assert "--resolution" not in str(info.value)  # not every command has that option (sim render)
    assert re.search(r"e\.g\. \d\.\d\d m$", str(info.value))


def test_a_large_grid_is_announced_before_it_is_built(tmp_path, caplog):
    scene = load_scene(b.box_room(tmp_path / "r.usda"))
    with caplog.at_level("WARNING", logger="vlnverse.scene.occupancy"):
        build_occupancy(scene, resolution=0.05)
    assert "takes a while" not in caplog.text
    import vlnverse.scene.occupancy as occupancy

    caplog.clear()
    with caplog.at_level("WARNING", logger="vlnverse.scene.occupancy"), \
            pytest.MonkeyPatch.context() as patch:
        patch.setattr(occupancy, "LARGE_GRID_CELLS", 1000)
        build_occupancy(scene, resolution=0.05)
    assert "occupancy grid" in caplog.text and "takes a while" in caplog.text


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"agent_radius": -0.3}, "agent_radius must be a positive number"),
    ({"resolution": 0.0}, "resolution must be a positive number"),
    ({"agent_height": float("nan")}, "agent_height must be a positive number"),
    ({"step_height": 2.0}, r"step_height must be in \[0, agent_height\)"),
])
def test_invalid_configuration(tmp_path, kwargs, message):
    scene = load_scene(b.box_room(tmp_path / "r.usda"))
    with pytest.raises(ConfigError, match=message):
        build_occupancy(scene, **kwargs)
