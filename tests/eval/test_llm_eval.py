"""Evaluation with a model: --llm over a real loopback HTTP server, the cache, the
transcript, budgets, concurrency, per-task envs and the usage reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vlnverse.eval.running.harness import EvalConfig, evaluate
from vlnverse.llm.loopback import LoopbackServer, Reply

AGENT = "tests.eval.llm_agents_for_tests:ChatStepAgent"
KEY_ENV = "VLNVERSE_TEST_EVAL_KEY"
SECRET = "sk-secret-never-in-run-json"


def cycling_answer(body):
    """forward, forward, left, ... by the step number in the prompt; STOP at step 3."""
    text = body["messages"][0]["content"]
    step = int(text.split("Step ")[1].split(".")[0])
    return json.dumps({"action": "stop" if step >= 3 else ("left" if step == 2 else "forward")})


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    with LoopbackServer(cycling_answer) as srv:
        yield srv


def spec(server) -> str:
    return f"openai:gpt-4o?base_url={server.url}&api_key_env={KEY_ENV}&max_retries=0&timeout=10"


def config(dataset, out, server, **kw) -> EvalConfig:
    kw.setdefault("task", "fine")
    kw.setdefault("episodes", 3)
    kw.setdefault("max_steps", 8)
    return EvalConfig(dataset=str(dataset), out=str(out), agent=AGENT, physics=("tel_hop",),
                      plots=0, bootstrap=50, llm=spec(server), **kw)


@pytest.mark.slow
def test_llm_run_usage_cache_and_record(bundled_dataset, tmp_path, server):
    first = evaluate(config(bundled_dataset, tmp_path / "a", server, concurrency=2,
                            llm_cache=str(tmp_path / "cache"), llm_record=str(tmp_path / "calls.jsonl")))
    assert first.evaluated == 3 and first.stopped is None
    calls = server.calls
    assert calls == 3 * 4  # forward, forward, left, stop
    for record in first.records:
        assert record["fail_reason"] == "stop" and record["actions"] == [1, 1, 2, 0]
        usage = record["llm"]
        assert usage["calls"] == 4 and usage["cached_calls"] == 0 and usage["tokens"] > 0
        assert usage["cost_usd"] > 0 and usage["cost_usd"] == usage["list_cost_usd"]
        assert record["metrics"]["tokens"] == usage["tokens"] and record["metrics"]["cost"] == usage["cost_usd"]
        assert record["agent_trace"]["steps"][0]["reply"]
    run_text = (tmp_path / "a" / "run.json").read_text()
    assert SECRET not in run_text and KEY_ENV in run_text  # the variable's name, never its value
    summary = (tmp_path / "a" / "summary.md").read_text()
    assert "### LLM usage" in summary and first.summary["llm"]["calls"] == 12
    assert len((tmp_path / "calls.jsonl").read_text().splitlines()) == 12

    # The same run from the cache, into a new folder: no call reaches the server; tokens
    # are reported as before, the billed cost is 0, the list cost is unchanged.
    again = evaluate(config(bundled_dataset, tmp_path / "b", server, llm_cache=str(tmp_path / "cache")))
    assert server.calls == calls
    for old, new in zip(first.records, again.records, strict=True):
        assert new["actions"] == old["actions"]
        assert new["llm"]["cached_calls"] == 4 and new["llm"]["tokens"] == old["llm"]["tokens"]
        assert new["llm"]["cost_usd"] == 0 and new["llm"]["list_cost_usd"] == old["llm"]["list_cost_usd"]

    # ... and from the transcript, without any server.
    replayed = evaluate(EvalConfig(dataset=str(bundled_dataset), out=str(tmp_path / "c"), agent=AGENT,
                                   task="fine", episodes=3, physics=("tel_hop",), max_steps=8, plots=0,
                                   bootstrap=50, llm=f"replay:{tmp_path / 'calls.jsonl'}"))
    assert [r["actions"] for r in replayed.records] == [r["actions"] for r in first.records]


@pytest.mark.slow
def test_run_budget_stops_cleanly_and_resumes(bundled_dataset, tmp_path, server):
    out = tmp_path / "run"
    first = evaluate(config(bundled_dataset, tmp_path / "probe", server)).records[0]
    budget = first["llm"]["tokens"] + 1  # spent by the second episode's first call
    calls = server.calls
    stopped = evaluate(config(bundled_dataset, out, server, budget_tokens=budget))
    assert stopped.stopped and "token budget" in stopped.stopped
    assert stopped.evaluated == 1  # the interrupted episode is left for later, not recorded
    assert server.calls - calls == 4 + 1  # the third episode made no call
    ledger = json.loads((out / "llm_budget.json").read_text())
    assert ledger["tokens"] >= budget
    resumed = evaluate(config(bundled_dataset, out, server, budget_tokens=10 * budget, workers=2, concurrency=2))
    assert resumed.stopped is None and resumed.resumed == 1 and resumed.evaluated == 2
    ids = [json.loads(line)["episode_id"] for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 3


def test_episode_cap_ends_that_episode(bundled_dataset, tmp_path, server):
    result = evaluate(config(bundled_dataset, tmp_path / "cap", server, episodes=1,
                             agent_config={"max_tokens_per_episode": 1}))
    record = result.records[0]
    assert result.stopped is None
    assert record["fail_reason"] == "llm_budget" and record["llm"]["calls"] == 1


def test_dialogue_and_visual_reference_envs(bundled_dataset, tmp_path, server):
    dialogue = evaluate(config(bundled_dataset, tmp_path / "d", server, task="dialogue", episodes=1))
    record = dialogue.records[0]
    assert record["actions"][0] == {"ask": "Which way should I go?"}
    assert record["agent_trace"]["answers"] and record["agent_trace"]["answers"][0].strip()
    visual = evaluate(config(bundled_dataset, tmp_path / "v", server, task="visual_reference", episodes=1))
    assert visual.records[0]["agent_trace"]["saw_reference"] is True
    fine = evaluate(config(bundled_dataset, tmp_path / "f", server, episodes=1))
    assert fine.records[0]["agent_trace"]["saw_reference"] is False


def test_malformed_trace_fails_the_episode_not_the_run(bundled_dataset, tmp_path, server):
    result = evaluate(config(bundled_dataset, tmp_path / "t", server, episodes=2,
                             agent_config={"broken_trace": True}))
    assert [r["fail_reason"] for r in result.records] == ["error", "error"]
    assert all(r["error_source"] == "trace" for r in result.records)
    good = evaluate(config(bundled_dataset, tmp_path / "w", server, episodes=2, agent_config={"waypoints": True}))
    assert all("AORI" in r["metrics"] for r in good.records)
    assert "### Trace metrics" in (tmp_path / "w" / "summary.md").read_text()


def test_cli_llm_options(bundled_dataset, tmp_path, server, capsys):
    from vlnverse.cli import main

    base = ["eval", "--dataset", str(bundled_dataset), "--task", "fine", "--episodes", "2", "--physics",
            "strict", "--max-steps", "8", "--plots", "0", "--no-progress", "--llm", spec(server)]
    code = main([*base, "--agent", AGENT, "--out", str(tmp_path / "cli"), "--budget-tokens", "5",
                 "--concurrency", "2"])
    out = capsys.readouterr().out
    assert code == 3 and "stopped: the run's token budget is spent" in out
    code = main([*base, "--agent", "forward", "--out", str(tmp_path / "fwd")])
    assert code != 0 and "does not take a model" in capsys.readouterr().err


def test_worker_error_reply_is_an_episode_fallback(bundled_dataset, tmp_path, monkeypatch):
    """Empty and malformed replies are repaired once, then a counted fallback (never STOP)."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    replies = iter(["", "not json at all"] * 20)
    with LoopbackServer(lambda body: Reply(content=next(replies))) as srv:
        result = evaluate(config(bundled_dataset, tmp_path / "bad", srv, episodes=1, max_steps=3))
    trace = result.records[0]["agent_trace"]
    assert trace["fallbacks"] == 3 and trace["repairs"] == 3 and trace["parse_failures"] == 6
    assert result.records[0]["actions"] == [1, 1, 1]
    assert result.summary["llm"]["fallbacks"] == 3


def test_budget_needs_a_model_and_a_price(bundled_dataset, tmp_path, server):
    from vlnverse.errors import ConfigError

    with pytest.raises(ConfigError, match="needs a model"):
        EvalConfig(dataset=str(bundled_dataset), out=str(tmp_path), agent="forward", budget_tokens=5)
    with pytest.raises(ConfigError, match="price"):
        evaluate(EvalConfig(dataset=str(bundled_dataset), out=str(tmp_path / "p"), agent=AGENT, task="fine",
                            episodes=1, physics=("strict",), plots=0,
                            llm=f"openai:no-such-model?base_url={server.url}&api_key_env={KEY_ENV}",
                            budget_usd=1.0))
    assert not Path(tmp_path / "p" / "episodes.jsonl").exists()
