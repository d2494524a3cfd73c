"""A tiny random transformers model through the HF client drives an LLM agent: its
replies are garbage, the agent survives them (repairs and fallbacks counted) and the
episodes complete."""

from __future__ import annotations

import pytest

from tests.llm.tiny_hf import build_tiny_gpt2
from vlnverse.eval.running.harness import EvalConfig, evaluate


@pytest.mark.slow
def test_garbage_replies_are_counted_and_episodes_complete(bundled_dataset, tmp_path):
    model = build_tiny_gpt2(tmp_path / "tiny", n_positions=4096)
    result = evaluate(EvalConfig(
        dataset=str(bundled_dataset), out=str(tmp_path / "run"), agent="text_history", task="fine",
        episodes=2, physics=("tel_hop",), max_steps=3, plots=0, bootstrap=10, concurrency=2,
        agent_config={"perception": "gt", "max_reply_tokens": 8, "panorama": {"views": 4, "image_size": 48},
                      "waypoint_predictor": "depth"},
        llm=f"hf:{model}?name=tiny-random-gpt2"))
    assert result.evaluated == 2 and result.stopped is None
    for record in result.records:
        trace = record["agent_trace"]
        assert record["fail_reason"] != "error", record["error"]
        assert len(record["actions"]) == len(trace["steps"]) == 3  # no STOP out of garbage
        assert trace["fallbacks"] == 3 and trace["repairs"] == 3 and trace["parse_failures"] == 6
        assert all(step["fallback"] for step in trace["steps"])
        assert record["llm"]["calls"] == 6 and record["llm"]["tokens"] > 0 and record["llm"]["cost_usd"] == 0
    assert result.summary["llm"]["fallbacks"] == 6
