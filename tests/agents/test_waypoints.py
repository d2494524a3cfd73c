"""Candidate waypoints, the local map and gt perception on synthetic panoramas."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vlnverse.agents.config import PanoramaConfig, WaypointConfig
from vlnverse.agents.gt_perception import visible_objects
from vlnverse.agents.localmap import OBSTACLE, build_local_map
from vlnverse.agents.panorama import Panorama, direction_phrase, free_distances
from vlnverse.agents.waypoints.depth import DepthWaypoints
from vlnverse.errors import ConfigError

RIG = PanoramaConfig(views=4, image_size=32, depth_stride=1)


def box_room(front: float, left: float, back: float, right: float) -> Panorama:
    """Four 90-degree views of a room whose walls are perpendicular to the view axes (a wall
    plane at distance d reads depth d in every pixel)."""
    depth = tuple(np.full((32, 32), d, dtype=np.float32) for d in (front, left, back, right))
    return Panorama(RIG, depth)


def test_free_distance_stops_the_body_at_the_first_obstacle():
    wall = np.array([[2.0, y] for y in np.linspace(-1, 1, 41)])
    reach = free_distances(wall, np.array([0.0, math.pi / 2, math.pi]), body_radius=0.3, horizon=5.0)
    assert reach[0] == pytest.approx(1.7, abs=0.01)   # the disc touches the wall
    assert reach[1] == reach[2] == 5.0                 # nothing to the left or behind


def test_candidates_follow_free_space_with_margin_caps_and_stable_ids():
    cfg = WaypointConfig(spacing_deg=90.0, safety_margin=0.25, max_distance=3.0, merge_distance=0.5)
    candidates = DepthWaypoints(cfg).predict(box_room(front=2.0, left=8.0, back=0.5, right=2.5))
    by_id = {c.id: c for c in candidates}
    assert set(by_id) == {"A", "B", "D"}               # behind (0.5 m wall) is too close
    assert by_id["A"].distance == pytest.approx(2.0 - 0.3 - 0.25, abs=0.05)
    assert by_id["B"].distance == 3.0 and by_id["B"].phrase == "left, 3.0 m"
    assert by_id["D"].heading == pytest.approx(-math.pi / 2) and by_id["D"].view == 3
    again = DepthWaypoints(cfg).predict(box_room(front=2.0, left=8.0, back=0.5, right=2.5))
    assert [c.to_dict() for c in again] == [c.to_dict() for c in candidates]


def test_near_duplicates_merge_and_the_count_is_capped():
    panorama = box_room(9.0, 9.0, 9.0, 9.0)
    merged = DepthWaypoints(WaypointConfig(spacing_deg=15.0, merge_distance=1.0)).predict(panorama)
    ends = np.array([c.offset for c in merged])
    gaps = np.linalg.norm(ends[:, None] - ends[None], axis=2) + np.eye(len(ends)) * 9
    assert gaps.min() >= 1.0 and len(merged) <= 8
    capped = DepthWaypoints(WaypointConfig(spacing_deg=15.0, max_candidates=3)).predict(panorama)
    assert len(capped) == 3


def test_direction_phrases():
    assert [direction_phrase(math.radians(d)) for d in (0, 40, 90, 130, 180, -40, -100)] == [
        "forward", "forward-left", "left", "back-left", "behind", "forward-right", "right"]


def test_local_map_marks_walls_free_space_and_candidates():
    panorama = box_room(2.0, 2.0, 2.0, 2.0)
    candidates = DepthWaypoints(WaypointConfig(spacing_deg=90.0)).predict(panorama)
    local = build_local_map(panorama, WaypointConfig())
    assert local.grid[local.cell_of(np.array([2.0, 0.0]))] == OBSTACLE
    text = local.ascii(candidates)
    assert "@" in text and all(c.id in text for c in candidates)
    assert local.image(candidates).shape[2] == 3


def test_gt_perception_lists_landmarks_with_rough_distances():
    panorama = box_room(2.0, 3.0, 4.0, 5.0)
    ids = [np.zeros((32, 32), np.int32) for _ in range(4)]
    ids[0][:, :16] = 1   # a sofa fills half of the front view
    ids[1][:] = 2        # the left view sees only wall
    panorama = Panorama(RIG, panorama.depth, semantic=tuple(ids))
    seen = visible_objects(panorama, ("nothing", "sofa", "wall"))
    assert seen[0].objects == (("sofa", 2.0),) and seen[1].objects == ()
    assert seen[0].describe() == "view 0 (forward): sofa 2.0 m"


def test_waypoint_config_is_validated():
    with pytest.raises(ConfigError):
        WaypointConfig(spacing_deg=5.0)
    with pytest.raises(ConfigError):
        WaypointConfig(min_distance=4.0)
    with pytest.raises(ConfigError):
        PanoramaConfig(views=2, hfov_deg=90.0)
