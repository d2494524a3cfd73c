"""The compatibility matrix (issue 35): every LLM agent finishes an episode, and the DVS
generator a generation, against each emulated server (:mod:`tests.llm.servers`: vLLM,
llama.cpp server, llama-cpp-python, Ollama, LM Studio, TGI, a hosted reasoning model)
without an error record, through the fallbacks; ``run.json`` says which were used."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.agents.conftest import SMALL
from tests.llm.servers import DVS, MAX_REQUESTS, PROFILES, server_answer
from vlnverse.eval.running.harness import EvalConfig, evaluate
from vlnverse.llm.loopback import LoopbackServer

AGENTS = ("text_history", "map_history_cot", "dscd_nav", "discussnav", "arna")
GT = {**SMALL, "perception": "gt", "samples": 2, "max_tokens_per_episode": 10**6}  # local models have no price


def spec(server: LoopbackServer) -> str:
    return f"openai:local-model?base_url={server.url}&api_key_env=none&max_retries=1&timeout=10"


def evaluate_agent(dataset, out, name: str, llm: str, config=None):
    return evaluate(EvalConfig(dataset=str(dataset), out=str(out), agent=name, agent_config=config or GT,
                               task="coarse", episodes=1, physics=("tel_hop",), max_steps=2, plots=0,
                               bootstrap=10, llm=llm))


@pytest.mark.slow
@pytest.mark.timeout(300)  # a hang guard only; the requests counted below bound the work
@pytest.mark.parametrize("profile", PROFILES, ids=[p.name for p in PROFILES])
def test_every_agent_finishes_an_episode_against_each_server(dataset, tmp_path, profile):
    with LoopbackServer(server_answer(profile)) as server:
        for name in AGENTS:
            result = evaluate_agent(dataset, tmp_path / name, name, spec(server))
            record = result.records[0]
            assert record["error"] is None and record["fail_reason"] in ("stop", "step_budget"), (name, record)
            run = json.loads((tmp_path / name / "run.json").read_text())["run"]
            assert run["llm_features"], name
        assert server.calls < MAX_REQUESTS
    features = json.loads((tmp_path / "arna" / "run.json").read_text())["run"]["llm_features"]
    rejects_schema = profile.reject({"model": "m", "messages": [], "response_format": {"type": "json_schema"}})
    assert features["structured"] == (["json_object+schema_in_prompt"] if profile.name == "llama-cpp-python" else
                                       ["schema_in_prompt"] if profile.name == "tgi" else ["json_schema"])
    assert bool(rejects_schema) == (features["structured"] != ["json_schema"])
    rejects_tools = profile.reject({"model": "m", "messages": [], "tools": [{}], "tool_choice": "required"})
    assert features["tools"] == (["emulated"] if rejects_tools else ["native"])
    n_mode = json.loads((tmp_path / "discussnav" / "run.json").read_text())["run"]["llm_features"]["n"]
    rejects_n = profile.reject({"model": "m", "messages": [], "n": 2}) or not profile.honours_n
    assert n_mode == (["single_seeded"] if rejects_n else ["native"])


def test_vlm_perception_is_refused_in_one_line_by_a_server_without_images(dataset, tmp_path):
    llama_cpp = next(p for p in PROFILES if p.name == "llama.cpp")
    with LoopbackServer(server_answer(llama_cpp)) as server:
        result = evaluate_agent(dataset, tmp_path / "vlm", "text_history", spec(server), {**SMALL, "samples": 1})
    error = result.records[0]["error"]
    assert result.records[0]["fail_reason"] == "error" and "\n" not in error
    assert "perception 'vlm' needs a model that takes images" in error and "use perception: gt" in error
    assert json.loads((tmp_path / "vlm" / "run.json").read_text())["run"]["llm_features"]["images"] == ["refused"]


@pytest.fixture(scope="module")
def cup_scene(tmp_path_factory):
    from tests.tasks.house import build_house
    from vlnverse.scene.inspect import prepare_scene
    from vlnverse.tasks.context import SceneContext
    from vlnverse.tasks.prior import coarse_instruction, coarse_variants
    from vlnverse.tasks.targets import describe_target

    context = SceneContext(prepare_scene(build_house(tmp_path_factory.mktemp("house") / "house.usda")))
    target = describe_target(context, "cup_0")
    return context, target, coarse_instruction(target, np.random.default_rng(0), "formal"), coarse_variants(target, 10)


@pytest.mark.slow
def test_the_dvs_generator_finishes_against_each_server(cup_scene):
    from vlnverse.llm import make_llm
    from vlnverse.tasks.dvs import UNCLEAR, InstructionPipeline

    context, target, prior, variants = cup_scene
    image = np.full((16, 16, 3), 90, np.uint8)
    for profile in PROFILES:
        with LoopbackServer(server_answer(profile)) as server:
            pipeline = InstructionPipeline(make_llm(spec(server)))
            first = pipeline.coarse(context, target, prior, variants, image)
            second = pipeline.coarse(context, target, prior, variants, image)
        assert first.fallback is None and first.instruction.styles == DVS["synthesizer"], (profile.name, first)
        takes_images = profile.reject({"model": "m", "messages": [
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,"}}]}]}) is None
        assert (first.caption != UNCLEAR) == takes_images, profile.name
        assert second.fallback is None and second.caption == first.caption
