"""Aggregation of per-episode metrics with bootstrap confidence intervals."""

from __future__ import annotations

import json

import numpy as np
import pytest

from vlnverse.errors import ConfigError
from vlnverse.eval.scoring.aggregate import aggregate_metrics, bootstrap_ratio_ci
from vlnverse.eval.scoring.episode_record import EpisodeRecord
from vlnverse.eval.scoring.metrics import compute_metrics_batch


def episodes(n, physics, seed):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        ok = bool(rng.random() < 0.6)
        tl = float(rng.uniform(2, 12))
        out.append(
            {
                "episode_id": str(i),
                "task": "fine",
                "split": "val_unseen",
                "physics": physics,
                "TL": tl,
                "SR": float(ok),
                "SPL": float(ok) * 2.0 / max(tl, 2.0),
                "nDTW": None if i % 4 == 0 else float(rng.uniform(0, 1)),
                "collision_count": float(rng.integers(0, 5)),
                "nav_steps": int(rng.integers(1, 50)),
                "CR": 0.0,
                "steps": 10,
                "fail_reason": "stop" if ok else "step_budget",
            }
        )
    return out


def test_means_cis_groups_and_determinism():
    rows = episodes(200, "strict", 1) + episodes(150, "tel_hop", 2)
    summaries = aggregate_metrics(rows, n_boot=500, seed=3)
    assert [s.key["physics"] for s in summaries] == ["strict", "tel_hop"]
    strict = summaries[0]
    assert strict.n_episodes == 200
    sr = strict.metrics["SR"]
    expected_sr = np.mean([r["SR"] for r in rows[:200]])
    assert sr.mean == pytest.approx(expected_sr)
    assert sr.ci_low <= sr.mean <= sr.ci_high
    assert 0.0 < sr.ci_high - sr.ci_low < 0.2
    # nDTW is averaged over the episodes that have it.
    nd = strict.metrics["nDTW"]
    have = [r["nDTW"] for r in rows[:200] if r["nDTW"] is not None]
    assert nd.n == len(have) and nd.mean == pytest.approx(np.mean(have))
    # CR pooled: total collisions / total navigation actions (not the per-episode CR field).
    cr = strict.metrics["CR"]
    assert cr.mean == pytest.approx(
        sum(r["collision_count"] for r in rows[:200]) / sum(r["nav_steps"] for r in rows[:200])
    )
    assert cr.ci_low <= cr.mean <= cr.ci_high
    assert strict.fail_reasons["stop"] + strict.fail_reasons["step_budget"] == 200
    for m in strict.metrics.values():
        assert m.ci_low <= m.mean + 1e-12 and m.mean <= m.ci_high + 1e-12
    # Same seed -> identical; other seed -> different intervals; JSON-ready.
    again = aggregate_metrics(rows, n_boot=500, seed=3)
    assert [s.to_dict() for s in again] == [s.to_dict() for s in summaries]
    other = aggregate_metrics(rows, n_boot=500, seed=4)
    assert other[0].metrics["TL"].ci_low != strict.metrics["TL"].ci_low
    json.dumps([s.to_dict() for s in summaries])
    # A group's result does not depend on the other groups present.
    alone = aggregate_metrics(rows[:200], n_boot=500, seed=3)
    assert alone[0].to_dict() == strict.to_dict()


def test_single_episode_and_constant_values():
    s = aggregate_metrics([{"task": "t", "SR": 1.0, "TL": 4.0}], n_boot=100)[0]
    assert (
        s.metrics["SR"].mean == 1.0
        and s.metrics["SR"].ci_low == 1.0
        and s.metrics["SR"].ci_high == 1.0
    )
    assert s.metrics["TL"].n == 1


def test_sr_n_aggregates_conditionally():
    goals = np.array([[10.0, 0, 0], [20.0, 0, 0]])

    def ep(pattern):
        pos = [[0.0, 0, 0]]
        stops = []
        for k, ok in enumerate(pattern):
            pos.append([goals[k, 0], 0.0 if ok else 10.0, 0.0])
            stops.append(len(pos) - 1)
        pos = np.array(pos)
        return EpisodeRecord(
            pos,
            goals,
            20.0,
            actions=["forward", "stop"] * len(stops),
            stops=tuple(stops),
            goal_distances=np.linalg.norm(pos[None] - goals[:, None], axis=2),
            task="long_horizon",
        )

    # 4 episodes: goal 1 reached in 3; of those, goal 2 reached in 1.
    metrics = compute_metrics_batch(
        [ep([True, True]), ep([True, False]), ep([True, False]), ep([False, True])]
    )
    s = aggregate_metrics(metrics, n_boot=200, group_by=("task",))[0]
    assert s.metrics["SR_1"].mean == pytest.approx(3 / 4) and s.metrics["SR_1"].n == 4
    assert s.metrics["SR_2"].mean == pytest.approx(1 / 3) and s.metrics["SR_2"].n == 3
    # SR_All = final goal reached (episodes 1 and 4); SR_Ordered = both in order (episode 1).
    assert s.metrics["SR_All"].mean == pytest.approx(2 / 4)
    assert s.metrics["SR"].mean == pytest.approx(2 / 4)
    assert s.metrics["SR_Ordered"].mean == pytest.approx(1 / 4)


def test_episodes_jsonl_records_are_accepted():
    rec = {
        "episode_id": "1",
        "task": "coarse",
        "physics": "strict",
        "metrics": {"SR": 1.0, "SPL": 0.5},
    }
    s = aggregate_metrics([rec, {**rec, "metrics": {"SR": 0.0, "SPL": 0.0}}], n_boot=50)[0]
    assert s.key["task"] == "coarse" and s.metrics["SPL"].mean == pytest.approx(0.25)


def test_bootstrap_ratio_ci_matches_plain_percentile_bootstrap():
    rng = np.random.default_rng(0)
    x = rng.normal(5, 2, size=80)
    est, lo, hi = bootstrap_ratio_ci(
        x[:, None], np.ones((80, 1)), np.random.default_rng(11), n_boot=400
    )
    idx = np.random.default_rng(11).integers(0, 80, size=(400, 80))
    means = x[idx].mean(axis=1)
    assert est[0] == pytest.approx(x.mean())
    assert lo[0] == pytest.approx(np.quantile(means, 0.025))
    assert hi[0] == pytest.approx(np.quantile(means, 0.975))
    # Drawing the resamples in small memory blocks still gives an interval around the estimate.
    est2, lo2, hi2 = bootstrap_ratio_ci(
        x[:, None], np.ones((80, 1)), np.random.default_rng(11), n_boot=400, max_block=800
    )
    assert lo2[0] <= est2[0] <= hi2[0]


def test_bad_aggregation_settings():
    with pytest.raises(ConfigError):
        aggregate_metrics([], n_boot=0)
    with pytest.raises(ConfigError):
        aggregate_metrics([], confidence=1.5)
    assert aggregate_metrics([]) == []
