"""The LLM budget belongs to the output folder: it holds across re-runs, an episode it
interrupted resumes from the cache, replies without usage are estimated and count, and
negative usage is never billed (``vlnverse eval`` as a user runs it, on a loopback server)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.bundled import REPO
from tests.eval.test_llm_eval import cycling_answer
from vlnverse.cli.eval import BUDGET_STOP_EXIT
from vlnverse.eval.running.harness import EvalConfig, evaluate
from vlnverse.llm.loopback import LoopbackServer, Reply, completion_body

AGENT = "tests.eval.llm_agents_for_tests:ChatStepAgent"


def spec(server) -> str:
    return f"openai:gpt-4o?base_url={server.url}&api_key_env=none&max_retries=0&timeout=10"


def run(dataset, out, server, *extra):
    args = ["eval", "--dataset", dataset, "--task", "fine", "--episodes", "3", "--physics", "tel_hop",
            "--max-steps", "8", "--plots", "0", "--no-progress", "--agent", AGENT, "--llm", spec(server),
            "--out", out, *extra]
    return subprocess.run([sys.executable, "-m", "vlnverse", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, timeout=300, env=dict(os.environ))


def ledger(out) -> dict:
    return json.loads((out / "llm_budget.json").read_text())


@pytest.mark.slow
def test_the_budget_holds_across_re_runs_and_the_interrupted_episode_resumes_from_the_cache(bundled_dataset,
                                                                                            tmp_path):
    with LoopbackServer(cycling_answer) as server:
        reference = evaluate(EvalConfig(dataset=str(bundled_dataset), out=str(tmp_path / "ref"), agent=AGENT,
                                        task="fine", episodes=3, physics=("tel_hop",), max_steps=8, plots=0,
                                        bootstrap=10, llm=spec(server)))
        calls = server.calls  # 3 episodes x 4 calls
        total = sum(r["llm"]["tokens"] for r in reference.records)
        budget = reference.records[0]["llm"]["tokens"] + 1  # spent by the second episode's first call
        out = tmp_path / "run"

        first = run(bundled_dataset, out, server, "--budget-tokens", budget)
        assert first.returncode == BUDGET_STOP_EXIT, first.stderr
        assert "1 evaluated" in first.stdout and server.calls - calls == 4 + 1
        spent = ledger(out)
        assert spent["tokens"] >= budget

        again = run(bundled_dataset, out, server, "--budget-tokens", budget)  # the same budget: no new call
        assert again.returncode == BUDGET_STOP_EXIT and "stopped: the run's token budget is spent" in again.stdout
        assert server.calls - calls == 5 and ledger(out) == spent

        more = run(bundled_dataset, out, server, "--budget-tokens", 10 * budget)
        assert more.returncode == 0, more.stderr
        assert "2 evaluated, 1 resumed" in more.stdout
    # every call was sent once: the interrupted episode's first call came from the cache
    assert server.calls - calls == calls
    assert ledger(out)["tokens"] == total and ledger(out)["calls"] == calls
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert sorted(r["actions"] for r in records) == sorted(r["actions"] for r in reference.records)
    summary = (out / "summary.md").read_text()
    assert f"Billed {total} tokens of {10 * budget}" in summary
    assert json.loads((out / "summary.json").read_text())["budget"]["max_tokens"] == 10 * budget


def no_usage(body):
    completion = completion_body(body, Reply(content=cycling_answer(body)))
    del completion["usage"]
    return Reply(raw=json.dumps(completion).encode())


def negative_usage(body):
    completion = completion_body(body, Reply(content=cycling_answer(body)))
    completion["usage"] = {"prompt_tokens": -414_000_000, "completion_tokens": 3}
    return Reply(raw=json.dumps(completion).encode())


@pytest.mark.slow
def test_replies_without_usage_are_estimated_and_stop_the_run(bundled_dataset, tmp_path):
    out = tmp_path / "run"
    with LoopbackServer(no_usage) as server:
        result = run(bundled_dataset, out, server, "--budget-tokens", 400)  # ~80 per call
    assert result.returncode == BUDGET_STOP_EXIT, result.stderr
    spent = ledger(out)
    assert spent["tokens"] >= 400 and spent["estimated_tokens"] == spent["tokens"]
    assert any("came without token usage; their tokens were estimated" in line
               for line in result.stderr.splitlines() if line.startswith("warning: "))
    assert "of those tokens are estimates" in (out / "summary.md").read_text()


@pytest.mark.slow
def test_negative_usage_is_a_bad_reply_never_billed(bundled_dataset, tmp_path):
    out = tmp_path / "run"
    with LoopbackServer(negative_usage) as server:
        result = run(bundled_dataset, out, server, "--budget-tokens", 1000)
    assert result.returncode == 0, result.stderr  # the test agent falls back when a call fails
    assert ledger(out)["tokens"] == 0 and ledger(out)["calls"] == 0
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert all(r["llm"]["failed_calls"] == 8 and r["llm"]["tokens"] == 0 for r in records)
