"""Hard limits of ``vlnverse eval``: an agent blocked in native code is stopped by killing
its worker process, and a record that cannot be stored is that episode's error; with one
worker, a pool and concurrent episodes alike, and the run goes on."""

from __future__ import annotations

import json
import time

import pytest

from vlnverse.cli import main

ONE_SCENE = ("--split", "test", "--task", "coarse", "--physics", "tel_hop", "--plots", "0", "--no-progress")


def records(out):
    return [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("parallel", [("--workers", "1"), ("--workers", "2"), ("--concurrency", "2")])
def test_an_agent_asleep_in_native_code_times_out_and_the_run_goes_on(bundled_dataset, tmp_path, capsys, parallel):
    started = time.monotonic()
    code = main(["eval", "--dataset", str(bundled_dataset), "--agent", "tests.eval.agents_for_tests:SleepingAgent",
                 *ONE_SCENE, *parallel, "--episode-timeout", "1", "--out", str(tmp_path)])
    took = time.monotonic() - started
    assert code == 0, capsys.readouterr().err
    found = records(tmp_path)
    assert len(found) == 2
    for record in found:
        assert record["fail_reason"] == "timeout" and record["error_source"] == "timeout"
        assert "its worker process was killed" in record["error"]
        assert record["metrics"]["SR"] == 0.0 and len(record["trajectory"]) == 1
    assert took < 60  # hard limit 1 + 2 s per episode, plus the replacement workers' start


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_ray_actor_asleep_in_native_code_is_replaced(bundled_dataset, tmp_path, capsys):
    pytest.importorskip("ray", reason="ray is not installed (dev extra)")
    code = main(["eval", "--dataset", str(bundled_dataset), "--agent", "tests.eval.agents_for_tests:SleepingAgent",
                 *ONE_SCENE, "--executor", "ray", "--workers", "1", "--concurrency", "2", "--episode-timeout", "1",
                 "--out", str(tmp_path)])
    assert code == 0, capsys.readouterr().err
    found = records(tmp_path)
    assert len(found) == 2
    assert all(r["fail_reason"] == "timeout" and "worker process was killed" in r["error"] for r in found)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_trace_too_deep_or_long_is_cut_and_one_that_cannot_be_stored_is_that_episodes_error(
        bundled_dataset, tmp_path, capsys, workers):
    for agent in ("DeepTraceAgent", "LockedTraceAgent"):
        out = tmp_path / agent
        code = main(["eval", "--dataset", str(bundled_dataset), "--agent", f"tests.eval.agents_for_tests:{agent}",
                     *ONE_SCENE, "--workers", workers, "--out", str(out)])
        assert code == (0 if agent == "DeepTraceAgent" else 4), capsys.readouterr().err  # 4: every episode errored
        found = records(out)
        assert len(found) == 2
        for record in found:
            if agent == "DeepTraceAgent":
                trace = record["agent_trace"]
                assert record["fail_reason"] == "stop" and trace["truncated"] == 2
                assert len(trace["reply"]) < 17_000 and "100000 characters in all, sha256 " in trace["reply"]
                assert json.dumps(trace).count("[") < 60
            else:
                assert record["fail_reason"] == "error" and record["error_source"] == "trace"
                assert "cannot be stored: TypeError" in record["error"] and record["agent_trace"] is None
