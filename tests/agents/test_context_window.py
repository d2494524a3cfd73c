"""Issue 45: every LLM agent keeps each request within the model's context window.

A loopback server with a small window and a verbose model (:class:`tests.llm.servers.SmallContext`:
every reply about as long as ``max_tokens`` allows; requests over the window refused as vLLM or
llama.cpp's server refuse them) runs each agent through the eval harness. With the window in
the spec (``context=N``) no request the server sees exceeds it, the agents' traces and
``summary.md`` say what was cut, and no episode ends in ``error``. Without it, the first
request that does not fit is refused once, the window is learned from the answer, that step
falls back, and the later requests fit.
"""

from __future__ import annotations

import json

import pytest

from tests.agents.conftest import SMALL
from tests.llm.servers import MAX_REQUESTS, SmallContext
from vlnverse.eval.running.harness import EvalConfig, evaluate
from vlnverse.llm.loopback import LoopbackServer

#: Whole-episode histories and no STOP, so the prompts grow for the whole step budget.
CONFIG = {**SMALL, "perception": "gt", "max_tokens_per_episode": 10**7, "history_window": 0,
          "min_steps_before_stop": 50}
#: Windows small enough that each agent's prompts must be cut within 6 steps (its reply
#: budget is 600 tokens, 1500 for DiscussNav and ARNA).
WINDOWS = {"text_history": 1600, "text_history_cot": 1600, "map_history": 1600, "map_history_cot": 1600,
           "dscd_nav": 2048, "discussnav": 3584, "arna": 3584}
STEPS = 6


def run(dataset, out, name: str, model: SmallContext, *, context: bool, record=None, **settings):
    with LoopbackServer(model) as server:
        spec = (f"openai:local-model?base_url={server.url}&api_key_env=none&max_retries=1&timeout=10"
                + (f"&context={model.window}" if context else ""))
        result = evaluate(config(dataset, out, name, spec, llm_record=record, **settings))
    assert len(model.seen) < MAX_REQUESTS
    return result.records[0]


def config(dataset, out, name: str, spec: str, llm_record=None, **settings) -> EvalConfig:
    return EvalConfig(dataset=str(dataset), out=str(out), agent=name, agent_config={**CONFIG, **settings},
                      task="coarse", episodes=1, physics=("tel_hop",), max_steps=STEPS, plots=0, bootstrap=10,
                      llm=spec, llm_record=llm_record)


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", list(WINDOWS))
def test_every_request_fits_the_window_the_spec_gives(dataset, tmp_path, name):
    model = SmallContext(WINDOWS[name])
    record = run(dataset, tmp_path, name, model, context=True)
    assert record["error"] is None and record["fail_reason"] == "step_budget", record["error"]
    assert model.seen and not model.rejected
    assert all(prompt + completion <= model.window for prompt, completion, _ in model.seen)
    trace = record["agent_trace"]
    fitting = trace["fitting"]
    assert fitting["answers_capped"] > 0 and fitting["requests_cut"] > 0 and fitting["tokens_cut"] > 0, fitting
    assert "too_long" not in trace["failures"] and trace["fallbacks"] == 0
    fits = [fit for step in trace["steps"] for fit in step.get("fits", ())]
    assert fits and all(fit["fits"] and fit["after"] <= fit["budget"] < fit["before"] for fit in fits)
    summary = (tmp_path / "summary.md").read_text()
    assert f"Prompts were cut to fit the model's context window in {fitting['requests_cut']} request(s)" in summary
    assert json.loads((tmp_path / "summary.json").read_text())["llm"]["requests_cut"] == fitting["requests_cut"]
    features = json.loads((tmp_path / "run.json").read_text())["run"]["llm_features"]
    assert features["context_window"] == [f"{model.window} (spec)"]


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize(("name", "style", "window", "settings"), [
    ("map_history", "vllm", 1500, {}),
    ("discussnav", "llama.cpp", 2200, {"max_reply_tokens": 300}),  # llama.cpp counts the prompt alone
])
def test_a_window_learned_from_the_server_is_kept_and_the_step_falls_back(dataset, tmp_path, name, style, window,
                                                                          settings):
    model = SmallContext(window, style=style)
    transcript = tmp_path / "calls.jsonl"
    record = run(dataset, tmp_path / "run", name, model, context=False, record=str(transcript), **settings)
    assert record["error"] is None and record["fail_reason"] == "step_budget", record["error"]
    assert len(model.rejected) == 1  # refused once: never resent, not as n single samples either
    first = next(i for i, (_, _, rejected) in enumerate(model.seen) if rejected)
    assert all(prompt + completion <= model.window for prompt, completion, _ in model.seen[first + 1:])
    trace = record["agent_trace"]
    assert trace["failures"]["too_long"] >= 1 and trace["fitting"]["requests_cut"] > 0
    assert record["llm"]["failed_calls"] >= 1
    assert "did not fit the context window even so" in (tmp_path / "run" / "summary.md").read_text()
    features = json.loads((tmp_path / "run" / "run.json").read_text())["run"]["llm_features"]
    assert features["context_window"] == [f"{window} (server error)"]
    # the refusal is in the transcript: the replay learns the window at the same request and cuts alike
    replayed = evaluate(config(dataset, tmp_path / "replay", name, f"replay:{transcript}", **settings)).records[0]
    assert replayed["error"] is None
    assert [s["action"] for s in replayed["agent_trace"]["steps"]] == [s["action"] for s in trace["steps"]]
    assert replayed["agent_trace"]["fitting"] == trace["fitting"]
    assert replayed["agent_trace"]["failures"] == trace["failures"]
