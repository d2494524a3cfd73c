"""Occupancy and navigable maps: exact cells on simple stages, thin rotated walls, memory cap."""

from __future__ import annotations

import math

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
    # the wall splits the room: two navigable components and two free regions
    assert len(occ.component_areas) == 2
    from scipy import ndimage

    _, free_regions = ndimage.label(occ.free)
    assert free_regions == 2
    # a point on either side of the wall centre line is in a different component
    normal = np.array([-math.sin(math.radians(yaw)), math.cos(math.radians(yaw))])
    a, c = np.array([3.0, 3.0]) + 1.0 * normal, np.array([3.0, 3.0]) - 1.0 * normal
    assert occ.component_of(a) != occ.component_of(c) and min(occ.component_of(a), occ.component_of(c)) >= 0


def test_nearest_navigable_and_sampling(tmp_path):
    occ = build_occupancy(load_scene(b.box_room(tmp_path / "r.usda")))
    p = occ.nearest_navigable((0.05, 0.05, 0.0))
    assert occ.is_navigable(p) and np.hypot(p[0] - 0.325, p[1] - 0.325) < 0.05
    pts = occ.sample_navigable(np.random.default_rng(0), 50)
    assert occ.is_navigable(pts).all()
    np.testing.assert_array_equal(pts, occ.sample_navigable(np.random.default_rng(0), 50))
    with pytest.raises(NavigationError):
        occ.nearest_navigable((np.nan, 0.0))


def test_room_map_and_segmentation(tmp_path):
    occ = build_occupancy(load_scene(b.box_room(tmp_path / "r.usda")))
    assert occ.room_at((2.0, 1.5)) == 0 and occ.rooms[0].room_type == "bedroom"
    seg = build_occupancy(load_scene(b.rotated_thin_wall(tmp_path / "w.usda", 30.0)))
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
    assert "--resolution" in str(info.value)


@pytest.mark.parametrize("kwargs", [{"agent_radius": -0.3}, {"resolution": 0.0}, {"agent_height": float("nan")},
                                    {"step_height": 2.0}])
def test_invalid_configuration(tmp_path, kwargs):
    scene = load_scene(b.box_room(tmp_path / "r.usda"))
    with pytest.raises(ConfigError):
        build_occupancy(scene, **kwargs)
