"""Geodesic distances and paths against analytic values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.scene import builders as b
from vlnverse.errors import NavigationError
from vlnverse.scene import Navigator, build_occupancy, load_scene


def analytic_l_corridor(start, goal, corner=(1.2, 1.2), radius=0.3) -> float:
    """Shortest path around the inner corner of the L: tangent, arc of ``radius``, tangent."""
    c = np.array(corner)
    d1, d2 = np.linalg.norm(np.array(start) - c), np.linalg.norm(np.array(goal) - c)
    a1 = math.atan2(start[1] - c[1], start[0] - c[0])
    a2 = math.atan2(goal[1] - c[1], goal[0] - c[0])
    wrap = (a1 - a2) % (2 * math.pi)  # clockwise sweep around the south-west side
    arc = wrap - math.acos(radius / d1) - math.acos(radius / d2)
    return math.sqrt(d1**2 - radius**2) + math.sqrt(d2**2 - radius**2) + radius * max(arc, 0.0)


@pytest.fixture(scope="module")
def corridor(tmp_path_factory):
    path = b.l_corridor(tmp_path_factory.mktemp("l") / "l.usda")
    return Navigator(build_occupancy(load_scene(path)))


@pytest.mark.parametrize("start,goal", [((5.5, 0.6), (0.6, 5.5)), ((4.0, 0.45), (0.75, 4.0)), ((5.6, 0.8), (0.4, 2.5))])
def test_l_corridor_path_within_two_percent_of_analytic(corridor, start, goal):
    expected = analytic_l_corridor(start, goal)
    path = corridor.shortest_path(start, goal)
    assert path.reachable
    assert path.length == pytest.approx(expected, rel=0.02)
    np.testing.assert_allclose(path.points[0, :2], start)
    np.testing.assert_allclose(path.points[-1, :2], goal)
    assert corridor.occupancy.is_navigable(path.points).all()
    field = corridor.distance_field(goal)
    assert field.distance_at(start) == pytest.approx(expected, rel=0.02)


def test_straight_line_in_open_room(tmp_path):
    nav = Navigator(build_occupancy(load_scene(b.box_room(tmp_path / "r.usda", 6.0, 4.0))))
    path = nav.shortest_path((0.5, 0.5), (5.5, 3.5))
    assert len(path.points) == 2 and path.length == pytest.approx(math.hypot(5.0, 3.0))
    assert nav.geodesic_distance((0.5, 0.5), (0.5, 0.5)) == pytest.approx(0.0, abs=1e-9)


def test_unreachable_pairs_give_inf_not_exceptions(tmp_path):
    nav = Navigator(build_occupancy(load_scene(b.two_platforms(tmp_path / "p.usda"))))
    a, c = (1.0, 5.0), (6.0, 1.0)
    path = nav.shortest_path(a, c)
    assert not path.reachable and path.length == math.inf and len(path.points) == 0
    assert nav.geodesic_distance(a, c) == math.inf
    assert nav.distance_field(c).distance_at(a) == math.inf


def test_points_without_floor_raise(tmp_path):
    nav = Navigator(build_occupancy(load_scene(b.box_room(tmp_path / "r.usda"))))
    with pytest.raises(NavigationError, match="no floor"):
        nav.shortest_path((10.0, 10.0), (1.0, 1.0))
    with pytest.raises(NavigationError, match="invalid point"):
        nav.shortest_path((float("inf"), 1.0), (1.0, 1.0))


def test_one_point_lookups_equal_the_batched_ones_bit_for_bit(corridor):
    """A single pose takes the float path of ``distance_at`` and ``lookup``; it must give
    exactly what the array path gives, on and off the navigable map and off the grid."""
    occ = corridor.occupancy
    field = corridor.distance_field((0.6, 5.5))
    rng = np.random.default_rng(0)
    low, high = occ.origin - 1.0, occ.origin + np.array(occ.shape[::-1]) * occ.resolution + 1.0
    points = np.concatenate([rng.uniform(low, high, (400, 2)),  # off the grid too
                             occ.cell_to_world(np.argwhere(~occ.navigable)[::97])[:, :2] + 0.01])
    batched = field.distance_at(points)
    rooms = occ.lookup(occ.room_map, points, -1)
    navigable = occ.is_navigable(points)
    assert (~occ.navigable[occ.cell_indices(points)[:2]]).sum() > 20  # snapped points are covered
    for k, point in enumerate(points):
        assert field.distance_at(point) == batched[k]
        assert field.distance_at(np.append(point, 0.0)) == batched[k]  # xyz
        assert occ.lookup(occ.room_map, point, -1) == rooms[k]
        assert occ.is_navigable(point) == navigable[k]
