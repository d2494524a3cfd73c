"""The Describer/Verifier/Synthesizer pipeline through the real OpenAI client (over an
in-process HTTP transport), its fusion/fallback rules, and exact record → replay."""

from __future__ import annotations

import json

import httpx
import numpy as np
import pytest

from tests.llm.endpoint import API_KEY_ENV, ChatEndpoint
from vlnverse.errors import ConfigError
from vlnverse.llm import RecordingClient, ReplayClient
from vlnverse.llm.openai_client import OpenAIClient
from vlnverse.tasks.dvs import UNCLEAR, InstructionPipeline, PipelineConfig
from vlnverse.tasks.pathdesc import describe_path
from vlnverse.tasks.prior import coarse_instruction, coarse_variants, fine_instruction
from vlnverse.tasks.promptset import PromptSet
from vlnverse.tasks.targets import describe_target

GOOD_STYLES = {"formal": "Proceed to the kitchen and locate the red cup on the wooden dining table.",
               "natural": "Could you go to the kitchen and find the red cup on the dining table?",
               "casual": "Kitchen. Red cup, on the table."}
IMAGE = np.full((16, 16, 3), 90, np.uint8)


def _stage(body) -> str:
    text = body["messages"][0]["content"]
    text = text if isinstance(text, str) else " ".join(p.get("text", "") for p in text)
    if "Analyze the provided image" in text or "sequence of images" in text:
        return "describer"
    if "Fusion Rule" in text:
        return "verifier"
    return "synthesizer"


class Script:
    """Answers per stage, in order (the last one repeats)."""

    def __init__(self, **answers):
        self.answers = {k: list(v) for k, v in answers.items()}

    def __call__(self, body) -> str:
        queue = self.answers[_stage(body)]
        return queue.pop(0) if len(queue) > 1 else queue[0]


@pytest.fixture
def client_for(monkeypatch):
    monkeypatch.setenv(API_KEY_ENV, "sk-test")

    def build(script: Script, record=None):
        endpoint = ChatEndpoint(answer=script)
        client = OpenAIClient("gpt-4o", base_url="http://llm.test/v1", api_key_env=API_KEY_ENV,
                              http_client=httpx.Client(transport=endpoint.transport()), sleep=lambda s: None)
        return (RecordingClient(client, record) if record else client), endpoint
    return build


@pytest.fixture
def cup(context):
    target = describe_target(context, "cup_0")
    prior = coarse_instruction(target, np.random.default_rng(0), "formal")
    return target, prior, coarse_variants(target, 10)


def run_coarse(context, client, cup, attempts=2):
    target, prior, variants = cup
    pipeline = InstructionPipeline(client, PipelineConfig(max_attempts=attempts))
    return pipeline.coarse(context, target, prior, variants, IMAGE)


def test_valid_answers_are_used(context, client_for, cup):
    script = Script(describer=["The red cup is on the brown wooden dining table; it is empty."],
                    verifier=[json.dumps({"instruction": "Go to the kitchen and find the red cup on the dining table.",
                                          "source": "caption"})],
                    synthesizer=[json.dumps(GOOD_STYLES)])
    client, endpoint = client_for(script)
    result = run_coarse(context, client, cup)
    assert result.fallback is None and result.source == "llm:gpt-4o"
    assert result.stages == ("prior", "describer", "verifier", "synthesizer")
    assert result.instruction.styles == GOOD_STYLES and result.instruction.text == GOOD_STYLES["formal"]
    assert result.instruction.landmarks == cup[1].landmarks
    # the describer saw the image as a data URL, the verifier got 10 prior texts and the caption
    first = endpoint.requests[0]["messages"][0]["content"]
    assert any(p["type"] == "image_url" and p["image_url"]["url"].startswith("data:image/png;base64,") for p in first)
    verifier = endpoint.requests[1]["messages"][0]["content"]
    verifier_text = verifier if isinstance(verifier, str) else verifier[0]["text"]
    assert "10. " in verifier_text and "it is empty" in verifier_text


def test_invalid_json_is_retried_with_the_reason(context, client_for, cup):
    script = Script(describer=["A red cup on a table."],
                    verifier=[json.dumps({"instruction": "Find the red cup in the kitchen."})],
                    synthesizer=["Sure! Formal: go to the kitchen.", json.dumps(GOOD_STYLES)])
    client, endpoint = client_for(script)
    result = run_coarse(context, client, cup)
    assert result.fallback is None and result.instruction.styles == GOOD_STYLES
    retry = endpoint.requests[-1]["messages"]
    assert retry[1]["role"] == "assistant" and "invalid JSON" in retry[2]["content"]


def test_hallucinated_object_falls_back_to_the_prior(context, client_for, cup):
    bad = dict(GOOD_STYLES, casual="Kitchen. Red cup next to the piano.")
    script = Script(describer=["A red cup."], verifier=[json.dumps({"instruction": "Find the red cup."})],
                    synthesizer=[json.dumps(bad)])
    client, endpoint = client_for(script)
    result = run_coarse(context, client, cup, attempts=2)
    assert result.source == "prior" and "piano" in result.fallback and result.fallback.startswith("synthesizer")
    assert result.instruction == cup[1]
    assert len(endpoint.requests) == 1 + 1 + 2  # describer, verifier, two synthesizer attempts


def test_refusals(context, client_for, cup):
    # a refusing describer only loses the caption (factual fallback inside the verifier) ...
    script = Script(describer=["I'm sorry, I can't help with that."],
                    verifier=[json.dumps({"instruction": "Find the red cup on the dining table."})],
                    synthesizer=[json.dumps(GOOD_STYLES)])
    client, endpoint = client_for(script)
    result = run_coarse(context, client, cup)
    assert result.caption == UNCLEAR and result.fallback is None
    assert UNCLEAR in json.dumps(endpoint.requests[-2])
    # ... a refusing verifier makes the whole episode fall back to the prior text
    script = Script(describer=["A red cup."], verifier=["I cannot assist with that request."],
                    synthesizer=[json.dumps(GOOD_STYLES)])
    client, _ = client_for(script)
    result = run_coarse(context, client, cup)
    assert result.source == "prior" and "refusal" in result.fallback and result.instruction == cup[1]


def test_wrong_target_is_rejected(context, client_for, cup):
    script = Script(describer=["A red cup."], verifier=[json.dumps({"instruction": "Go to the bed in the kitchen."})],
                    synthesizer=[json.dumps(GOOD_STYLES)])
    client, _ = client_for(script)
    result = run_coarse(context, client, cup)
    assert result.source == "prior" and "does not name the target" in result.fallback


def test_the_target_is_checked_by_its_scene_graph_identity(context, client_for):
    """tv_0 is a black TV: a remote on the TV stand, or a white TV, is not it."""
    target = describe_target(context, "tv_0")
    prior = coarse_instruction(target, np.random.default_rng(0), "formal")
    styles = {"formal": "Locate the black television.", "natural": "Please find the black TV.",
              "casual": "Black TV. Go."}
    script = Script(describer=["A gray remote lies on the TV stand."],
                    verifier=[json.dumps({"instruction": "Find the gray remote on the TV stand."}),
                              json.dumps({"instruction": "Find the white TV in the living room."}),
                              json.dumps({"instruction": "Find the black TV in the living room."})],
                    synthesizer=[json.dumps(styles)])
    client, endpoint = client_for(script)
    result = InstructionPipeline(client, PipelineConfig(max_attempts=3)).coarse(
        context, target, prior, coarse_variants(target, 10), IMAGE)
    assert result.fallback is None and result.instruction.styles == styles
    reasons = [m["content"] for r in endpoint.requests for m in r["messages"] if m["role"] == "user"
               and isinstance(m["content"], str) and "rejected" in m["content"]]
    assert "does not name the target (tv)" in reasons[0] and "colour it does not have (white" in reasons[-1]


def test_a_text_only_model_loses_the_describer_only(context, client_for, cup):
    script = Script(describer=["unused"], verifier=[json.dumps({"instruction": "Find the red cup."})],
                    synthesizer=[json.dumps(GOOD_STYLES)])
    client, endpoint = client_for(script)
    endpoint.failures = [(400, {})]  # "this model does not take images"
    result = run_coarse(context, client, cup)
    assert result.fallback is None and result.caption == UNCLEAR and result.instruction.styles == GOOD_STYLES
    assert result.stages == ("prior", "describer", "verifier", "synthesizer")


def test_record_then_replay_reproduces_exactly(context, client_for, cup, tmp_path):
    script = Script(describer=["The red cup is on the table."],
                    verifier=["not json", json.dumps({"instruction": "Find the red cup on the dining table."})],
                    synthesizer=[json.dumps(GOOD_STYLES)])
    transcript = tmp_path / "run.jsonl"
    client, _ = client_for(script, record=transcript)
    recorded = run_coarse(context, client, cup)
    replayed = run_coarse(context, ReplayClient(transcript), cup)
    assert replayed == recorded
    assert len(transcript.read_text().splitlines()) == 4


def test_fine_pipeline(context, client_for):
    from vlnverse.tasks.sampling import SamplingConfig, TrajectorySampler

    t = TrajectorySampler(context, SamplingConfig(), np.random.default_rng(0)).sample_fine(1)[0]
    prior = fine_instruction(context, describe_path(context, t.points, t.start_yaw), np.random.default_rng(0))
    answer = json.dumps({"natural": "Walk forward into the bedroom and stop in front of the bed."})
    script = Script(describer=["Walk forward past a sofa."], verifier=[json.dumps({"instruction": prior.text})],
                    synthesizer=[answer])
    client, endpoint = client_for(script)
    result = InstructionPipeline(client).fine(context, prior, [IMAGE, IMAGE])
    assert result.fallback is None and result.instruction.text.startswith("Walk forward into the bedroom")
    assert result.stages == ("prior", "describer", "verifier", "synthesizer")
    assert sum(p["type"] == "image_url" for p in endpoint.requests[0]["messages"][0]["content"]) == 2
    assert "sofa" in json.dumps(endpoint.requests[1])  # the verifier saw the describer's text


def test_fine_answers_must_keep_the_turns_and_the_landmark_order(context, client_for):
    from vlnverse.tasks.grounding import turn_sequence
    from vlnverse.tasks.sampling import SamplingConfig, TrajectorySampler

    sampler = TrajectorySampler(context, SamplingConfig(), np.random.default_rng(3))
    for t in sampler.sample_fine(10):
        facts = describe_path(context, t.points, t.start_yaw)
        if any(leg.turn in ("left", "right") for leg in facts.legs):
            break
    prior = fine_instruction(context, facts, np.random.default_rng(0))
    turns = turn_sequence(prior.text)
    assert turns == [leg.turn for leg in facts.legs if leg.turn != "straight"]  # the prior is its own path
    flipped = prior.text.replace("left", "LEFT").replace("right", "left").replace("LEFT", "right")
    script = Script(describer=["Frames."], verifier=[json.dumps({"instruction": flipped}),
                                                    json.dumps({"instruction": prior.text})],
                    synthesizer=[json.dumps({"natural": prior.text})])
    client, endpoint = client_for(script)
    result = InstructionPipeline(client).fine(context, prior, [IMAGE], facts)
    assert result.fallback is None and result.instruction.text == prior.text
    assert "are not the path's" in json.dumps(endpoint.requests[2])


def test_prompt_files_can_be_overridden(tmp_path):
    (tmp_path / "oracle.txt").write_text("Q: ${question}")
    prompts = PromptSet.load(tmp_path)
    assert prompts.render("oracle", question="where?") == "Q: where?"
    assert prompts.sources["oracle"].endswith("oracle.txt") and prompts.sources["verifier_coarse"] == "default"
    (tmp_path / "bogus.txt").write_text("x")
    with pytest.raises(ConfigError, match="unknown prompt file bogus.txt"):
        PromptSet.load(tmp_path)


def test_grounding_checks_on_crafted_text():
    from vlnverse.tasks.grounding import route_problem, target_problem

    assert target_problem("the gray remote on the TV stand", "tv", "silver", ["tv", "tv stand", "remote"])
    assert target_problem("Find the grey television.", "tv", "silver") is not None
    assert target_problem("Find the silver TV on the TV stand.", "tv", "silver") is None
    assert target_problem("Go to the couch.", "sofa", "gray") is None  # a synonym
    assert route_problem("Turn left, then take a right past the sofa.", ["left", "straight", "right"], ["sofa"]) is None
    assert "turns" in route_problem("Turn right and go left.", ["left", "right"], [])
    assert "order" in route_problem("Walk past the bed, then the sofa.", [], ["sofa", "bed"])
