"""AORI and the DSCD-Nav debate metrics from agent traces."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vlnverse.errors import ConfigError, MetricsError
from vlnverse.eval.metrics import EpisodeRecord, compute_episode_metrics
from vlnverse.eval.trace_metrics import AORIParams, _disk_overlap_fraction, aori, debate_metrics


def test_disk_overlap_fraction_known_values():
    r = 2.0
    assert _disk_overlap_fraction(np.array(0.0), r) == pytest.approx(1.0)
    assert _disk_overlap_fraction(np.array(2 * r), r) == pytest.approx(0.0)
    assert _disk_overlap_fraction(np.array(10.0), r) == pytest.approx(0.0)
    # Two unit-radius-scaled disks at distance r: (2*pi/3 - sqrt(3)/2) / pi.
    assert _disk_overlap_fraction(np.array(r), r) == pytest.approx(
        (2 * math.pi / 3 - math.sqrt(3) / 2) / math.pi
    )


def test_aori_far_apart_waypoints_are_not_redundant():
    pts = np.array([[0.0, 0.0], [10.0, 0.0], [20.0, 0.0]])
    out = aori(pts, AORIParams(view_radius=3.0))
    assert out["r_overlap"] == 0.0 and out["d_norm"] == 0.0
    assert out["AORI"] == pytest.approx(0.0)


def test_aori_standing_still_is_redundant():
    pts = np.zeros((3, 2))
    # Every view overlaps every earlier one fully: r_overlap = 1. The voxel is visited a
    # third time at t = 3; with a tiny eta, min(1, N_obs / lambda_t) is 1 exactly where
    # N_obs > 0, so d_norm = 1/3 and AORI = 1 - (0.8 * 0 + 0.2 * (1 - 1/3)).
    out = aori(pts, AORIParams(view_radius=1.0, eta=1e-9))
    assert out["r_overlap"] == pytest.approx(1.0)
    assert out["d_norm"] == pytest.approx(1.0 / 3.0)
    assert out["AORI"] == pytest.approx(1.0 - 0.2 * (2.0 / 3.0))


def test_aori_overlap_ratio_counts_earlier_views():
    # Views at 0, 0.5 and 5 m with r = 1: t=2 overlaps t=1 (d=0.5, lens ~0.68 >= 0.5);
    # t=3 overlaps neither. r_overlap = (1/1 + 0/2) / 2 = 0.5.
    pts = np.array([[0.0, 0.0], [0.5, 0.0], [5.0, 0.0]])
    out = aori(pts, AORIParams(view_radius=1.0))
    assert out["r_overlap"] == pytest.approx(0.5)
    assert out["d_norm"] == 0.0
    assert out["AORI"] == pytest.approx(1.0 - (0.8 * 0.25 + 0.2))


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


def test_episode_metrics_read_the_trace():
    trace = {"waypoints": [[0.0, 0.0], [10.0, 0.0]], "debate": DEBATE}
    rec = EpisodeRecord(
        np.array([[0.0, 0, 0], [1.0, 0, 0]]),
        [[1.0, 0, 0]],
        1.0,
        actions=["forward", "stop"],
        stops=(1,),
        goal_distances=[1.0, 0.0],
        agent_trace=trace,
        tokens=900,
        cost=0.01,
    )
    m = compute_episode_metrics(rec)
    assert m.AORI == pytest.approx(0.0)
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
    assert "AORI" not in plain and "DR" not in plain and "tokens" not in plain
