"""An LLM agent against a real OpenAI-compatible endpoint (``VLNVERSE_LLM_BASE_URL``).

``VLNVERSE_LLM_MODEL`` names the model (default ``qwen3-vl-4b``); the API key is read from
``OPENAI_API_KEY`` when set (local vLLM/Ollama servers need none).
"""

from __future__ import annotations

import os

import pytest

from tests.agents.test_agents_episodes import run
from vlnverse.llm import make_llm


@pytest.mark.llm_live
@pytest.mark.parametrize("name, perception", [("map_history", "gt"), ("text_history_cot", "vlm")])
def test_agent_against_a_live_endpoint(dataset, name, perception):
    model = os.environ.get("VLNVERSE_LLM_MODEL", "qwen3-vl-4b")
    key_env = "OPENAI_API_KEY" if os.environ.get("OPENAI_API_KEY") else "none"
    llm = make_llm(f"openai:{model}?api_key_env={key_env}")
    record, _ = run(dataset, name, llm, config={"perception": perception}, max_steps=6)
    trace = record["agent_trace"]
    assert record["error"] is None, record["error"]
    assert trace["calls"] >= len(trace["steps"]) >= 1 and trace["tokens"]["prompt"] > 0
    assert trace["parse_failures"] >= trace["repairs"] >= trace["fallbacks"]
