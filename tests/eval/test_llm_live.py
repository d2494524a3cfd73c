"""The eval integration and the client hardening against a real OpenAI-compatible endpoint.

Runs only with ``-m llm_live`` and ``VLNVERSE_LLM_BASE_URL`` set (a vLLM/Ollama server or a
hosted API); ``VLNVERSE_LLM_MODEL`` names the model (default ``qwen3-vl-4b``), the key is
read from ``OPENAI_API_KEY`` when set.
"""

from __future__ import annotations

import json
import os

import pytest

from vlnverse.eval.running.harness import EvalConfig, evaluate
from vlnverse.llm import make_llm

pytestmark = [
    pytest.mark.llm_live,
    pytest.mark.skipif(not os.environ.get("VLNVERSE_LLM_BASE_URL"),
                       reason="needs a real LLM endpoint in VLNVERSE_LLM_BASE_URL"),
]


def spec() -> str:
    model = os.environ.get("VLNVERSE_LLM_MODEL", "qwen3-vl-4b")
    key_env = "OPENAI_API_KEY" if os.environ.get("OPENAI_API_KEY") else "none"
    return f"openai:{model}?api_key_env={key_env}"


def test_eval_with_a_live_model_cache_and_budget(bundled_dataset, tmp_path):
    def run(out, **kw):
        return evaluate(EvalConfig(
            dataset=str(bundled_dataset), out=str(tmp_path / out), agent="map_history", task="fine",
            episodes=2, physics=("tel_hop",), max_steps=6, plots=1, bootstrap=50, concurrency=2,
            agent_config={"perception": "gt"}, llm=spec(), llm_cache=str(tmp_path / "cache"), **kw))

    first = run("live", budget_tokens=200_000)
    assert first.stopped is None and all(r["error"] is None for r in first.records)
    assert all(r["llm"]["calls"] >= 1 and r["llm"]["tokens"] > 0 for r in first.records)
    assert (first.out / "viewer").is_dir() and "### LLM usage" in first.summary_markdown.read_text()
    again = run("again", budget_tokens=1)  # answered from the cache: nothing billed, never stopped
    assert again.stopped is None
    assert json.loads((again.out / "llm_budget.json").read_text())["tokens"] == 0
    assert [r["actions"] for r in again.records] == [r["actions"] for r in first.records]


def test_structured_output_and_tools_on_the_live_endpoint():
    llm = make_llm(spec())
    schema = {"type": "object", "properties": {"colour": {"type": "string", "enum": ["red", "green"]}},
              "required": ["colour"], "additionalProperties": False}
    value, _ = llm.complete_structured("Grass is usually which colour? Answer in JSON.", schema, repairs=2)
    assert value["colour"] == "green"
    tools = [{"name": "stop", "description": "Stop navigating.", "parameters": {"type": "object", "properties": {}}},
             {"name": "move", "description": "Move to a waypoint.",
              "parameters": {"type": "object", "properties": {"waypoint": {"type": "string"}},
                             "required": ["waypoint"]}}]
    response = llm.complete_tools("You are at the goal. Call the right tool.", tools, tool_choice="required",
                                  repairs=2)
    assert [c.name for c in response.tool_calls] == ["stop"]
