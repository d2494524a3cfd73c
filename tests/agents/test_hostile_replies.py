"""Every LLM agent against a real loopback server that answers as badly as real models do:
empty replies, prose around JSON, unknown candidate ids, echoes of the prompt. Episodes
finish, the bad replies are counted in the trace, and a cached re-run calls nobody."""

from __future__ import annotations

import hashlib
import json

import pytest

from tests.agents.conftest import SMALL
from vlnverse.eval.running.harness import EvalConfig, evaluate
from vlnverse.llm.loopback import LoopbackServer, Reply

KEY_ENV = "VLNVERSE_TEST_HOSTILE_KEY"
LLM_AGENTS = ("text_history", "text_history_cot", "map_history", "map_history_cot", "dscd_nav", "discussnav", "arna")


def hostile(body: dict) -> Reply:
    """A bad reply chosen by the request's hash, so a cached re-run asks the same things."""
    prompt = body["messages"][-1]["content"]
    prompt = prompt if isinstance(prompt, str) else " ".join(p.get("text", "") for p in prompt)
    kind = hashlib.sha256(prompt.encode()).digest()[0] % 4
    return Reply(content=[
        "",
        'Sure! Here is my answer: {"thought": "the door", "action": "Z9"} Hope this helps.',
        prompt,
        'I think we should go ahead.\n```json\n{"thought": "go on", "action": "Q"}\n```',
    ][kind])


@pytest.mark.slow
@pytest.mark.parametrize("name", LLM_AGENTS)
def test_agent_survives_hostile_replies_and_reruns_from_the_cache(dataset, tmp_path, monkeypatch, name):
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with LoopbackServer(hostile) as server:
        def run(out):
            return evaluate(EvalConfig(
                dataset=str(dataset), out=str(tmp_path / out), agent=name, agent_config=SMALL, task="coarse",
                episodes=1, physics=("tel_hop",), max_steps=3, plots=0, bootstrap=10,
                llm=f"openai:gpt-4o?base_url={server.url}&api_key_env={KEY_ENV}&max_retries=0&timeout=10",
                llm_cache=str(tmp_path / "cache")))

        first = run("a")
        calls = server.calls
        again = run("b")
    assert calls > 0 and server.calls == calls   # the cached re-run makes zero calls
    for result in (first, again):
        assert result.evaluated == 1
        record = result.records[0]
        assert record["fail_reason"] in ("stop", "step_budget", "inconclusive"), record.get("error")
        trace = record["agent_trace"]
        assert trace["parse_failures"] > 0
        if name == "arna":   # the paper's ending: the first failed function call ends the run
            assert trace["arna"]["outcome_reason"] == "function_call_error" and record["fail_reason"] == "inconclusive"
        else:
            assert trace["fallbacks"] > 0
        assert json.dumps(trace)   # JSON-ready
    assert again.records[0]["actions"] == first.records[0]["actions"]
