"""The replay agent: recording CSVs (50 ms poses, paper Appendix D) and scoring them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vlnverse.errors import ConfigError, DatasetError
from vlnverse.eval.replay import ReplayConfig, read_trajectory_csv, thin_positions
from vlnverse.eval.running.harness import EvalConfig, evaluate


def test_csv_columns_units_and_order(tmp_path):
    path = tmp_path / "ep_7.csv"
    path.write_text("timestamp_ms,x,y,heading_deg\n100,1.0,2.0,90\n0,0.0,0.0,0\n50,0.5,1.0,45\n")
    (rec,) = read_trajectory_csv(path).values()
    assert rec.episode_id == "ep_7"
    np.testing.assert_allclose(rec.times, [0.0, 0.05, 0.1])
    np.testing.assert_allclose(rec.positions, [[0, 0, 0], [0.5, 1, 0], [1, 2, 0]])
    np.testing.assert_allclose(rec.yaws, [0.0, math.pi / 4, math.pi / 2])
    assert rec.median_period_ms == pytest.approx(50.0)


def test_csv_with_many_episodes_and_no_time(tmp_path):
    path = tmp_path / "all.csv"
    path.write_text("episode_id,x,y,z,yaw\na,0,0,0.1,0\na,1,0,0.1,\nb,5,5,0,1.5\n")
    recs = read_trajectory_csv(path)
    assert sorted(recs) == ["a", "b"]
    np.testing.assert_allclose(recs["a"].times, [0.0, 0.05])  # rows every 50 ms by default
    assert math.isnan(recs["a"].yaws[1]) and recs["b"].positions[0, 2] == 0.0


@pytest.mark.parametrize("text, match", [
    ("t,x\n0,1\n", "missing column"),
    ("t,x,y\n0,1,abc\n", r"bad.csv:2: could not convert"),
    ("t,x,y\n0,1,inf\n", "non-finite"),
    ("t,x,y\n", "no samples"),
])
def test_csv_errors(tmp_path, text, match):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(DatasetError, match=match):
        read_trajectory_csv(path)


def test_thinning_keeps_spaced_samples_and_the_end():
    line = np.stack([np.linspace(0, 1.0, 21), np.zeros(21), np.zeros(21)], axis=1)  # every 5 cm
    kept = thin_positions(line, 0.25)
    np.testing.assert_allclose(kept[:, 0], [0.25, 0.5, 0.75, 1.0])
    np.testing.assert_allclose(thin_positions(np.vstack([line, [[1.1, 0, 0]]]), 0.25)[-1], [1.1, 0, 0])
    assert len(thin_positions(np.zeros((5, 3)), 0.25)) == 0  # standing still: nothing to replay


def test_config_is_validated():
    with pytest.raises(ConfigError, match="trajectories is required"):
        ReplayConfig()
    with pytest.raises(ConfigError, match="'waypoint' or 'discrete'"):
        ReplayConfig(trajectories="x", action_space="velocity")


def write_recording(path, trajectory, headings, speed=1.0):
    """A 50 ms recording of walking ``trajectory`` at ``speed`` m/s."""
    traj = np.asarray(trajectory, dtype=float)
    seg = np.linalg.norm(np.diff(traj[:, :2], axis=0), axis=1)
    arc = np.concatenate([[0.0], np.cumsum(seg)])
    keep = np.concatenate([[True], seg > 1e-9])
    arc, traj, headings = arc[keep], traj[keep], np.asarray(headings)[keep]
    times = np.arange(0.0, arc[-1] / speed + 0.05, 0.05)
    s = np.minimum(times * speed, arc[-1])
    xs, ys = np.interp(s, arc, traj[:, 0]), np.interp(s, arc, traj[:, 1])
    yaw = np.interp(s, arc, np.unwrap(headings))
    lines = ["time_ms,x,y,z,yaw"] + [f"{1000 * t:.0f},{x:.4f},{y:.4f},0.0,{a:.4f}"
                                     for t, x, y, a in zip(times, xs, ys, yaw, strict=True)]
    path.write_text("\n".join(lines) + "\n")
    return len(times)


@pytest.mark.parametrize("action_space", ["waypoint", "discrete"])
def test_replaying_a_recorded_walk_scores_it(oracle_run, bundled_dataset, tmp_path, action_space):
    walks = [r for r in oracle_run.records if r["physics"] == "tel_hop" and r["task"] in ("fine", "coarse")
             and r["split"] == "test"]
    folder = tmp_path / "recordings"
    folder.mkdir()
    for walk in walks:
        assert write_recording(folder / f"{walk['episode_id']}.csv", walk["trajectory"], walk["headings"]) > 20
    result = evaluate(EvalConfig(dataset=str(bundled_dataset), out=str(tmp_path / "out"), agent="replay",
                                 agent_config={"trajectories": str(folder), "action_space": action_space},
                                 split="test", task="all", physics=("tel_hop", "strict"), plots=0))
    by_key = {(r["episode_id"], r["physics"]): r for r in result.records}
    for walk in walks:
        for physics in ("tel_hop", "strict"):
            replay = by_key[(walk["episode_id"], physics)]
            assert replay["fail_reason"] == "stop" and replay["metrics"]["SR"] == 1.0
            assert replay["metrics"]["TL"] == pytest.approx(walk["metrics"]["TL"], rel=0.15, abs=0.3)
            # The replayed path stays on the recorded one.
            recorded = np.asarray(walk["trajectory"])[:, :2]
            mine = np.asarray(replay["trajectory"])[:, :2]
            gap = np.min(np.linalg.norm(mine[:, None] - recorded[None], axis=2), axis=1)
            assert gap.max() < 0.3
    # Episodes without a recording are errors of their own, not a failed run.
    missing = [r for r in result.records if r["episode_id"] not in {w["episode_id"] for w in walks}]
    assert missing
    assert all(r["fail_reason"] == "error" and "trajectory file not found" in r["error"] for r in missing)
