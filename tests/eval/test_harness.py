"""The evaluation harness end to end on the bundled scenes: sanity figures of the baselines,
records, agent failures, executors and resuming."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

from vlnverse.errors import ConfigError, DependencyNotInstalled
from vlnverse.eval.running.harness import EvalConfig, evaluate
from vlnverse.eval.running.store import ResultStore

from .agents_for_tests import CrashingAgent, InvalidActionAgent, ResetFailsAgent

RECORD_KEYS = {"episode_id", "task", "split", "physics", "metrics", "trajectory", "reference_path", "goals",
               "actions", "collisions", "fail_reason", "agent_trace"}
METRIC_KEYS = {"TL", "NE", "SR", "OSR", "SPL", "nDTW", "SDTW", "CR", "steps"}


def overall(summary, task, physics):
    return next(g for g in summary["overall"] if g["task"] == task and g["physics"] == physics)


def pooled(records, physics, metric):
    values = [r["metrics"][metric] for r in records if r["physics"] == physics]
    return float(np.mean(values)), len(values)


def test_oracle_sanity_figures(oracle_run, bundled_dataset):
    records = oracle_run.records
    assert len(records) == 2 * 27 and oracle_run.evaluated == 54
    for physics, min_sr in (("tel_hop", 1.0), ("strict", 0.99)):
        sr, n = pooled(records, physics, "SR")
        spl, _ = pooled(records, physics, "SPL")
        assert n == 27
        assert sr >= min_sr, f"oracle SR {sr:.3f} under {physics}"
        assert spl >= 0.95, f"oracle SPL {spl:.3f} under {physics}"
    assert all(r["fail_reason"] == "stop" and r["error"] is None for r in records)
    long = [r for r in records if r["task"] == "long_horizon"]
    assert long and all(len(r["stops"]) == len(r["goals"]) for r in long)
    assert all(r["metrics"]["SR_All"] == 1.0 and r["metrics"]["SR_1"] == 1.0 for r in long)
    # Stops of different legs are different places, in order along the trajectory.
    assert all(r["stops"] == sorted(set(r["stops"])) for r in long)


def test_records_hold_the_documented_fields(oracle_run):
    for record in oracle_run.records:
        assert RECORD_KEYS <= set(record)
        assert METRIC_KEYS <= set(record["metrics"])
        traj = np.asarray(record["trajectory"])
        assert traj.shape[1] == 3 and len(record["collisions"]) == len(record["actions"])
        if record["task"] == "long_horizon":  # a leg may add the env's snapped start pose
            assert len(record["actions"]) + 1 <= len(traj) <= len(record["actions"]) + len(record["goals"])
        else:
            assert len(traj) == len(record["actions"]) + 1
        assert record["metrics"]["steps"] == len(record["actions"])
        if record["task"] == "long_horizon":
            n = len(record["goals"])
            assert {f"SR_{k}" for k in range(1, n + 1)} | {"SR_All", "SR_Ordered"} <= set(record["metrics"])
    # The JSONL file holds exactly the returned records.
    lines = (oracle_run.out / "episodes.jsonl").read_text().splitlines()
    assert sorted(lines) == sorted(json.dumps(r, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
                                   for r in oracle_run.records)


def test_summary_has_both_physics_modes_side_by_side(oracle_run):
    summary = json.loads((oracle_run.out / "summary.json").read_text())
    tasks = {g["task"] for g in summary["overall"]}
    assert tasks == {"fine", "coarse", "visual_reference", "long_horizon", "dialogue"}
    for task in tasks:
        for physics in ("strict", "tel_hop"):
            sr = overall(summary, task, physics)["metrics"]["SR"]
            assert sr["ci_low"] <= sr["mean"] <= sr["ci_high"]
    md = (oracle_run.out / "summary.md").read_text()
    assert "Table 5" in md and "Table 6" in md
    assert "| oracle | Tel-Hop |" in md and "| oracle | Strict |" in md
    assert "SR_All" in md and "SR_Ordered" in md
    run = json.loads((oracle_run.out / "run.json").read_text())
    assert run["run"]["instruction_view"] == run["fingerprint"]["instruction_view"] == "full"
    assert run["run"]["physics_hz"] == run["fingerprint"]["physics_hz"] == 60.0  # Isaac Sim's 1/60 s
    plots = sorted((oracle_run.out / "plots").glob("*.png"))
    assert len(plots) == 5 * 2  # 1 per (task, physics)
    assert all(p.stat().st_size > 10_000 for p in plots)


@pytest.mark.slow
def test_random_and_forward_are_weak(bundled_dataset, oracle_run, tmp_path):
    runs = {}
    for agent in ("random", "forward"):
        runs[agent] = evaluate(EvalConfig(dataset=str(bundled_dataset), out=str(tmp_path / agent), agent=agent,
                                          task="fine", max_steps=120, plots=0))
    oracle_spl = {p: pooled([r for r in oracle_run.records if r["task"] == "fine"], p, "SPL")[0]
                  for p in ("strict", "tel_hop")}
    for agent, result in runs.items():
        for physics in ("strict", "tel_hop"):
            spl, n = pooled(result.records, physics, "SPL")
            assert n == 3 and spl < oracle_spl[physics] - 0.3, (agent, physics, spl)
    forward = runs["forward"].records
    # Forward never stops: each episode ends at a wall (strict) or at the step budget.
    assert {r["fail_reason"] for r in forward if r["physics"] == "strict"} == {"collision"}
    assert {r["fail_reason"] for r in forward if r["physics"] == "tel_hop"} == {"step_budget"}
    assert all(r["metrics"]["SR"] == 0.0 for r in forward)
    assert all(r["metrics"]["CR"] > 0 for r in forward if r["physics"] == "strict")
    # Random is reproducible: same seed, same actions.
    again = evaluate(EvalConfig(dataset=str(bundled_dataset), out=str(tmp_path / "random2"), agent="random",
                                task="fine", max_steps=120, plots=0))
    assert [r["actions"] for r in again.records] == [r["actions"] for r in runs["random"].records]


@pytest.mark.parametrize("agent, source, message", [
    (CrashingAgent(), "agent", "boom: the agent crashed"),
    (InvalidActionAgent(), "invalid_action", "discrete action must be an integer 0-3"),
    (ResetFailsAgent(), "agent", "cannot start"),
])
def test_agent_failures_are_recorded_not_fatal(bundled_dataset, tmp_path, agent, source, message):
    result = evaluate(EvalConfig(dataset=str(bundled_dataset), out=str(tmp_path), agent=type(agent).__name__,
                                 split="test", task="coarse", plots=0), agent=agent)
    assert len(result.records) == 4  # every episode was attempted
    for record in result.records:
        assert record["fail_reason"] == "error" and record["error_source"] == source
        assert message in record["error"]
        assert record["metrics"]["SR"] == 0.0
        assert len(record["trajectory"]) == len(record["actions"]) + 1
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["errors"]["count"] == 4
    assert "ended in an error: 4" in (tmp_path / "summary.md").read_text()


def test_pool_workers_give_the_same_records(bundled_dataset, oracle_run, tmp_path):
    result = evaluate(EvalConfig(dataset=str(bundled_dataset), out=str(tmp_path), agent="oracle", split="test",
                                 workers=2, plots=0))
    reference = {(r["episode_id"], r["physics"]): r for r in oracle_run.records}
    assert len(result.records) == 18
    for record in result.records:
        expected = dict(reference[(record["episode_id"], record["physics"])], plot=None)
        assert record == expected


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_ray_executor(bundled_dataset, oracle_run, tmp_path, monkeypatch):
    pytest.importorskip("ray", reason="ray is not installed (dev extra)")
    # As on a 1-CPU machine: the local Ray instance must still run both 1-CPU actors.
    monkeypatch.setenv("RAY_USE_MULTIPROCESSING_CPU_COUNT", "1")
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    result = evaluate(EvalConfig(dataset=str(bundled_dataset), out=str(tmp_path), agent="oracle", split="test",
                                 task="coarse", executor="ray", workers=2, plots=0, concurrency=2))
    # Two episodes at once per actor (threads) give the same records as one at a time.
    reference = {(r["episode_id"], r["physics"]): r for r in oracle_run.records}
    assert len(result.records) == 4
    for record in result.records:
        assert record == dict(reference[(record["episode_id"], record["physics"])], plot=None)


def test_ray_missing_is_a_clear_error(bundled_dataset, tmp_path, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "ray", None)
    with pytest.raises(DependencyNotInstalled, match=r"ray is not installed .*pip install 'vlnverse\[ray\]'"):
        evaluate(EvalConfig(dataset=str(bundled_dataset), out=str(tmp_path), agent="oracle", executor="ray"))
    assert not (tmp_path / "episodes.jsonl").exists()


def test_rerun_skips_finished_and_other_settings_are_refused(bundled_dataset, tmp_path):
    config = EvalConfig(dataset=str(bundled_dataset), out=str(tmp_path), agent="random", split="test",
                        task="fine", max_steps=50, plots=0)
    first = evaluate(config)
    second = evaluate(config)
    assert (first.evaluated, second.evaluated, second.resumed) == (2, 0, 2)
    assert second.summary == first.summary
    assert len(ResultStore(tmp_path / "episodes.jsonl")) == 2
    with pytest.raises(ConfigError, match="different run .*max_steps"):
        evaluate(EvalConfig(dataset=str(bundled_dataset), out=str(tmp_path), agent="random", split="test",
                            task="fine", max_steps=60, plots=0))
    # A wider selection in the same folder adds only the missing episodes.
    wider = evaluate(EvalConfig(dataset=str(bundled_dataset), out=str(tmp_path), agent="random", split="test",
                                max_steps=50, plots=0, physics=("strict", "tel_hop")))
    assert (wider.resumed, wider.evaluated) == (2, 16)


def test_episode_sample_is_seeded(bundled_dataset, tmp_path):
    a = evaluate(EvalConfig(dataset=str(bundled_dataset), out=str(tmp_path / "a"), agent="forward", episodes=5,
                            physics=("tel_hop",), max_steps=5, plots=0))
    b = evaluate(EvalConfig(dataset=str(bundled_dataset), out=str(tmp_path / "b"), agent="forward", episodes=5,
                            physics=("tel_hop",), max_steps=5, plots=0))
    ids = [r["episode_id"] for r in a.records]
    assert len(ids) == 5 and ids == [r["episode_id"] for r in b.records]
    assert math.isclose(a.summary["overall"][0]["metrics"]["TL"]["mean"],
                        b.summary["overall"][0]["metrics"]["TL"]["mean"])


def test_invalid_settings(bundled_dataset, tmp_path):
    with pytest.raises(ConfigError, match="unknown physics mode"):
        EvalConfig(dataset="x", out="y", agent="oracle", physics=("strict", "teleport"))
    with pytest.raises(ConfigError, match="unknown executor"):
        EvalConfig(dataset="x", out="y", agent="oracle", executor="slurm")
    with pytest.raises(ConfigError, match="workers"):
        EvalConfig(dataset="x", out="y", agent="oracle", workers=0)
    with pytest.raises(ConfigError, match="instruction_view"):
        EvalConfig(dataset="x", out="y", agent="oracle", instruction_view="chunks")
    from vlnverse.errors import RegistryError

    with pytest.raises(RegistryError, match="valid names: .*forward, .*oracle, random, .*replay"):
        evaluate(EvalConfig(dataset=str(bundled_dataset), out=str(tmp_path), agent="nobody", split="test",
                            task="fine", plots=0))


def test_run_file_names_privileged_inputs(oracle_run):
    run = json.loads((oracle_run.out / "run.json").read_text())["run"]
    assert run["privileged"] == ["eqa_answer", "oracle_action"]


def test_run_json_records_the_dataset_path_as_given(bundled_dataset, tmp_path, monkeypatch):
    monkeypatch.chdir(bundled_dataset.parent)
    out = tmp_path / "relative"
    evaluate(EvalConfig(dataset=f"./{bundled_dataset.name}", out=str(out), agent="forward", episodes=1,
                        physics=("tel_hop",), max_steps=5, plots=0))
    document = json.loads((out / "run.json").read_text())
    assert document["run"]["dataset"] == document["fingerprint"]["dataset"] == bundled_dataset.name
    assert f"Dataset `{bundled_dataset.name}`" in (out / "summary.md").read_text()
