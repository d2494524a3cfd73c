"""AORI and the DSCD-Nav debate metrics from agent traces."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vlnverse.errors import ConfigError, MetricsError
from vlnverse.eval.scoring.episode_record import EpisodeRecord
from vlnverse.eval.scoring.metrics import compute_episode_metrics
from vlnverse.eval.scoring.trace_metrics import (
    AORIParams,
    _disk_overlap_fraction,
    aori,
    debate_metrics,
)


def test_disk_overlap_fraction_known_values():
    r = 2.0
    assert _disk_overlap_fraction(np.array(0.0), r) == pytest.approx(1.0)
    assert _disk_overlap_fraction(np.array(2 * r), r) == pytest.approx(0.0)
    assert _disk_overlap_fraction(np.array(10.0), r) == pytest.approx(0.0)
    # Two unit-radius-scaled disks at distance r: (2*pi/3 - sqrt(3)/2) / pi.
    assert _disk_overlap_fraction(np.array(r), r) == pytest.approx(
        (2 * math.pi / 3 - math.sqrt(3) / 2) / math.pi
    )


def test_aori_far_apart_locations_are_not_redundant():
    path = np.array([[0.0, 0.0], [10.0, 0.0], [20.0, 0.0]])
    out = aori(path, AORIParams(view_radius=3.0, sample_spacing=10.0))
    assert out["T"] == 3 and out["r_overlap"] == 0.0 and out["d_norm"] == 0.0
    assert out["AORI"] == pytest.approx(0.0)


def test_aori_turning_or_idling_in_place_is_not_exploration_nor_redundancy():
    assert aori(np.zeros((6, 2)), AORIParams()) == aori(np.zeros((1, 2)), AORIParams())
    assert aori(np.zeros((6, 2)), AORIParams())["T"] == 1


def test_aori_is_the_same_for_short_steps_and_long_hops_along_one_path():
    corners = np.array([[0.0, 0.0], [3.0, 0.0], [3.0, 3.0], [0.0, 3.0], [0.0, 0.5]])
    steps = [corners[0]]
    for a, b in zip(corners[:-1], corners[1:], strict=True):
        n = int(round(np.linalg.norm(b - a) / 0.25))
        steps += [a + (b - a) * k / n for k in range(1, n + 1)]
        steps += [b, b]                                   # turns in place: the pose repeats
    hops = aori(corners, AORIParams(view_radius=1.0))
    assert aori(np.array(steps), AORIParams(view_radius=1.0)) == pytest.approx(hops)
    assert hops["T"] == 13 and 0.0 < hops["AORI"] < 1.0         # 0, 1, ..., 11 m and the end at 11.5 m


def test_aori_a_corridor_driven_three_times_is_revisited():
    # 0 -> 4 -> 0 -> 4 m: locations every metre (T = 13). With r = 1 only coinciding
    # locations overlap by >= 50 %; the first voxel entered a third time is entered at
    # 8.25 m (the pass back re-enters the start voxel only twice), so with a tiny eta
    # min(1, N_obs / lambda_t) is 1 at the four locations from 9 m on: d_norm = 4/13.
    path = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 0.0], [4.0, 0.0]])
    out = aori(path, AORIParams(view_radius=1.0, eta=1e-9))
    r_overlap = (1 / 5 + 1 / 6 + 1 / 7 + 1 / 8 + 2 / 9 + 2 / 10 + 2 / 11 + 1 / 12) / 12
    assert out["T"] == 13 and out["r_overlap"] == pytest.approx(r_overlap)
    assert out["d_norm"] == pytest.approx(4 / 13)
    assert out["AORI"] == pytest.approx(1.0 - (0.8 * (1 - r_overlap) ** 2 + 0.2 * (1 - 4 / 13)))
    once = aori(path[:2], AORIParams(view_radius=1.0, eta=1e-9))
    assert once["d_norm"] == 0.0 and once["r_overlap"] == 0.0


def test_aori_single_waypoint_and_bad_input():
    assert aori(np.array([[1.0, 2.0, 0.0]]), AORIParams())["r_overlap"] == 0.0
    with pytest.raises(MetricsError):
        aori(np.zeros((0, 2)), AORIParams())
    with pytest.raises(MetricsError):
        aori(np.array([[0.0, np.nan]]), AORIParams())
    with pytest.raises(ConfigError):
        AORIParams(voxel_size=0.0)


DEBATE = [
    # 3 rounds, final round disagrees, judge sides with SIB -> override; micro-probe.
    {"rounds": [[1, 2], [1, 2], [1, 2]], "judge": 2, "micro_probe": True},
    # consensus in one round
    {"rounds": [[1, 1]]},
    # 3 rounds, final disagrees, judge keeps TSU's choice
    {"rounds": [{"tsu": 3, "sib": 4}, {"tsu": 3, "sib": 3}, {"tsu": 5, "sib": 6}], "judge": 5},
    # 3 rounds disagreeing but no judge decision: not in the arbitration set
    {"rounds": [[7, 8], [7, 8], [7, 8]], "judge": None, "micro_probe": True},
]


def test_debate_metrics_hand_values():
    out = debate_metrics(DEBATE, max_rounds=3)
    assert out["debate_rounds"] == 10 and out["debate_disagreements"] == 8
    assert out["DR"] == pytest.approx(8 / 10)
    assert out["arbitrations"] == 2
    assert out["JOR"] == pytest.approx(1 / 2)
    assert out["MPTR"] == pytest.approx(1 / 2)
    empty = debate_metrics([], max_rounds=3)
    assert empty["DR"] is None and empty["JOR"] is None and empty["MPTR"] is None
    with pytest.raises(MetricsError):
        debate_metrics([{"rounds": [[1, 2, 3]]}], max_rounds=3)


def test_episode_metrics_read_the_path_and_the_debate():
    positions = np.array([[0.0, 0, 0], [1.0, 0, 0]])

    def metrics(trace):
        return compute_episode_metrics(EpisodeRecord(
            positions, [[1.0, 0, 0]], 1.0, actions=["forward", "stop"], stops=(1,),
            goal_distances=[1.0, 0.0], agent_trace=trace, tokens=900, cost=0.01))

    m = metrics({"waypoints": [[0.0, 0.0], [10.0, 0.0]], "debate": DEBATE})
    # AORI is the recorded path's, whatever locations the agent reports
    assert m.AORI == pytest.approx(aori(positions, AORIParams())["AORI"]) and m.AORI > 0.5
    assert metrics({"waypoints": [[5.0, 5.0]]}).AORI == m.AORI == metrics(None).AORI
    assert m.DR == pytest.approx(0.8) and m.JOR == 0.5 and m.MPTR == 0.5
    d = m.to_dict()
    assert (
        d["debate_rounds"] == 10
        and d["arbitrations"] == 2
        and d["tokens"] == 900
        and d["cost"] == 0.01
    )
    plain = compute_episode_metrics(
        EpisodeRecord(np.zeros((1, 3)), [[1.0, 0, 0]], 1.0, goal_distances=[1.0])
    ).to_dict()
    assert plain["AORI"] == 0.0 and "DR" not in plain and "tokens" not in plain
