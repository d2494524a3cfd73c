"""ARNA reads every unambiguous plan-line reference of ``next_step``, counts a failed
``vlm`` perception reply apart from function-call errors (its own counter and ending), and
refuses before the run a model it cannot budget (no price, no token cap)."""

from __future__ import annotations

import json

import pytest

from tests.agents.arna_script import ARNAScript
from tests.agents.test_arna import answer_at_the_answer_step, run
from vlnverse.agents.arna.failures import FailureCounter
from vlnverse.agents.arna.lineref import line_reference
from vlnverse.agents.arna.preflight import check_priced, unpriced_models
from vlnverse.errors import ConfigError
from vlnverse.eval.running.harness import EvalConfig, evaluate
from vlnverse.llm.types import LLMResponse, Usage

#: The issue's forms and others a model writes for "run line 3 next".
LINE_3 = ["3", "Step 3", "#3", "(3)", "3 (ObjectInterface -> target)", "line 3 (ObjectInterface -> target)",
          "**3**", "Line 3: look for the target", "step #3", "3. because the target is not found yet", "[3]"]
NOT_ONE_LINE = ["3 or 4", "3, 4", "3/4", "3. Actually, 4", "step 3, then step 4", "the object step", "three", ""]


@pytest.mark.parametrize("text", LINE_3)
def test_every_unambiguous_line_reference_is_read(text):
    assert line_reference(text) == 3


@pytest.mark.parametrize("text", NOT_ONE_LINE)
def test_two_lines_or_none_are_refused(text):
    assert line_reference(text) is None


@pytest.mark.slow
@pytest.mark.parametrize("text", ["Step 3", "#3", "(3)", "3 (ObjectInterface -> target)",
                                  "line 3 (ObjectInterface -> target)"])
def test_a_line_reference_in_any_of_the_issues_forms_jumps_without_a_function_call_error(dataset, text):
    """LOOP_PLAN's line 3 is the ObjectInterface step; the model asks for it before line 2."""
    jumped = []

    def next_step(request):
        reply = answer_at_the_answer_step(request)
        if "Next plan step:\nline 2:" in request.messages[-1].text and not jumped:
            jumped.append(True)
            return {**reply, "next_step": text}
        return reply

    record = run(dataset, ARNAScript({"NextStep": next_step}), max_steps=8)
    arna, steps = record["agent_trace"]["arna"], record["agent_trace"]["steps"]
    assert arna["function_call_errors"] == [] and steps[0]["jumps"] == [{"from": 2, "to": 3}]
    assert [c["tool"] for c in steps[0]["tool_calls"]][0] == "ObjectInterface"


def test_failed_perception_is_counted_apart_and_ends_the_run_after_its_limit(dataset):
    model = ARNAScript({"Perception": lambda r: "the room looks nice"})  # never the Perception structure
    record = run(dataset, model, {"perception": "vlm", "max_perception_failures": 2}, max_steps=10)
    arna, trace = record["agent_trace"]["arna"], record["agent_trace"]
    assert record["fail_reason"] == "inconclusive" and arna["outcome_reason"] == "perception_error"
    assert arna["function_call_errors"] == [] and len(arna["perception_failures"]) == 2
    assert trace["failures"]["perception"] == 2 and "function_call" not in trace["failures"]
    assert model.kinds["Perception"] == 4                                # each failure had its repair turn
    assert trace["steps"][-1]["action"] == {"inconclusive": "perception_error"}


def test_only_failures_in_a_row_reach_the_limit():
    counter = FailureCounter("perception_error", 2)
    assert not counter.fail("a")
    counter.succeed()
    assert not counter.fail("b") and counter.fail("c") and counter.details == ["a", "b", "c"]
    assert not any(FailureCounter("perception_error", 0).fail(str(i)) for i in range(5))   # 0: never


def test_with_no_perception_limit_the_run_goes_on_counting_the_failures(dataset):
    model = ARNAScript({"Perception": lambda r: "[]"})
    record = run(dataset, model, {"perception": "vlm", "max_perception_failures": 0}, max_steps=4)
    arna = record["agent_trace"]["arna"]
    assert record["fail_reason"] == "step_budget" and arna["outcome_reason"] is None
    assert len(arna["perception_failures"]) >= 1 and arna["function_call_errors"] == []


def test_an_unpriced_model_without_a_token_cap_is_refused_before_the_run(dataset, tmp_path):
    spec = "openai:my-local-qwen?base_url=http://127.0.0.1:9/v1&api_key_env=none"
    with pytest.raises(ConfigError, match="model my-local-qwen has no price.*max_tokens_per_episode"):
        evaluate(EvalConfig(dataset=str(dataset), out=str(tmp_path / "run"), agent="arna",
                            agent_config={"perception": "gt"}, task="coarse", episodes=1,
                            physics=("tel_hop",), plots=0, llm=spec))
    assert not (tmp_path / "run" / "episodes.jsonl").exists()              # not one episode recorded
    check_priced(spec, max_tokens_per_episode=100_000)                      # a token cap is the budget
    check_priced("openai:gpt-4o-2024-08-06", max_tokens_per_episode=0)      # a priced model needs none


def test_a_replayed_transcript_is_judged_by_its_recorded_prices(tmp_path):
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "params": {}}
    lines = []
    for cost in (0.001, None):
        response = LLMResponse(text="ok", model="local-vlm" if cost is None else "gpt-4o", usage=Usage(1, 1),
                               cost_usd=cost).to_dict()
        lines.append(json.dumps({"request": request, "response": response}))
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("\n".join(lines) + "\n")
    assert unpriced_models(f"replay:{transcript}") == ["local-vlm"]
    assert unpriced_models("openai:gpt-4o") == [] and unpriced_models("none") == []
