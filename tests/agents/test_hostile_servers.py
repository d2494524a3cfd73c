"""LLM agents against hostile servers on 127.0.0.1, through the eval harness: a server that
never answers ends episodes at their time limit (the calls' deadline, not a killed worker),
and a 5 MB reply is the model's answer cut at the cap: a bad reply (repaired, then the fallback),
never resent, that costs no memory (its worker's peak is that of a run with small replies)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.agents.conftest import SMALL, reply
from tests.bundled import REPO
from vlnverse.eval.running.harness import EvalConfig, evaluate
from vlnverse.llm.loopback import LoopbackServer, Reply

KEY_ENV = "VLNVERSE_TEST_HOSTILE_KEY"
SERVER_DELAY_S = 60
"""How long the silent server waits before its reply: far past the episode's 3 s limit."""


def spec(server, **options):
    query = "&".join(f"{k}={v}" for k, v in {"base_url": server.url, "api_key_env": KEY_ENV, **options}.items())
    return f"openai:gpt-4o?{query}"


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", ["text_history", "discussnav"])
def test_a_server_that_never_answers_ends_episodes_at_their_time_limit(dataset, tmp_path, monkeypatch, name):
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with LoopbackServer(lambda request: Reply(content="late", delay_s=SERVER_DELAY_S)) as server:
        result = evaluate(EvalConfig(dataset=str(dataset), out=str(tmp_path), agent=name, agent_config=SMALL,
                                     task="coarse", episodes=1, physics=("tel_hop",), max_steps=5, plots=0,
                                     bootstrap=10, episode_timeout=3, llm=spec(server, timeout=120)))
        calls = server.calls
    record = result.records[0]
    assert record["fail_reason"] == "timeout" and "killed" not in record["error"]  # ended by the calls' deadline
    episode = json.loads((tmp_path / "timings.jsonl").read_text().splitlines()[0])
    assert episode["total"] < SERVER_DELAY_S / 2 and calls <= 8  # it did not wait for a reply


def _peak_rss_mb(command):
    """Exit status of ``command`` and the peak resident memory (MiB) of the largest process of its tree."""
    probe = ("import resource, subprocess, sys; code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL,"
             " stderr=subprocess.DEVNULL).returncode; print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    done = subprocess.run([sys.executable, "-c", probe, *command], capture_output=True, text=True, cwd=REPO,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    code, peak = done.stdout.split()
    return int(code), int(peak) / 1024


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_5_MB_reply_costs_no_memory(dataset, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-test")
    huge = json.dumps({"id": "x", "object": "chat.completion", "created": 1, "model": "gpt-4o", "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "x" * 5_000_000}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).encode()
    config = tmp_path / "agent.json"
    config.write_text(json.dumps({**SMALL, "min_steps_before_stop": 6}))
    peaks = {}
    for kind, answer in (("small", lambda r: reply("STOP")), ("huge", lambda r: Reply(raw=huge))):
        with LoopbackServer(answer) as server:
            out = tmp_path / kind
            code, peaks[kind] = _peak_rss_mb([
                sys.executable, "-m", "vlnverse", "eval", "--dataset", str(dataset), "--agent", "text_history",
                "--agent-config", str(config), "--task", "coarse",
                "--episodes", "1", "--physics", "tel_hop", "--max-steps", "6", "--plots", "0", "--no-progress",
                "--llm", spec(server, max_retries=0), "--out", str(out)])
            calls = server.calls
        record = json.loads((out / "episodes.jsonl").read_text().splitlines()[0])
        if kind == "small":
            assert code == 0 and record["fail_reason"] == "step_budget" and calls >= 6
        else:  # each reply is cut at the cap, unreadable: repaired once, then the fallback; never resent
            trace = record["agent_trace"]
            assert code == 0 and record["fail_reason"] == "step_budget" and record["error"] is None
            assert calls == 12 and trace["truncations"] == 12 and trace["repairs"] == trace["fallbacks"] == 6
    assert peaks["huge"] < peaks["small"] + 60, peaks
