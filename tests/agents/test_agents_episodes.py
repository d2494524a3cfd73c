"""The four zero-shot agents walked through complete episodes on a bundled scene.

A scripted model answers (its calls are recorded to a transcript); the same episode is
then replayed from the transcript alone and must give the same actions and trace.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.agents.conftest import SMALL, ScriptedModel, reply, walk_then_stop
from vlnverse.agents.base import EpisodeBudgetExceeded
from vlnverse.agents.config import PanoramaConfig
from vlnverse.agents.panorama import Panorama
from vlnverse.envs.nav_env import NavEnv
from vlnverse.errors import ConfigError
from vlnverse.eval.registry import make_agent
from vlnverse.eval.running.runner import run_episode
from vlnverse.llm.transcript import RecordingClient, ReplayClient
from vlnverse.tasks.dataset import EpisodeDataset

AGENTS = ("text_history", "text_history_cot", "map_history", "map_history_cot")


def episode_of(dataset, task):
    ds = EpisodeDataset.open(dataset)
    episode = ds.episodes(None, task)[0]
    return ds, episode


def run(dataset, name, llm, *, task="coarse", physics="tel_hop", config=None, max_steps=None):
    ds, episode = episode_of(dataset, task)
    agent = make_agent(name, {"perception": "gt", **SMALL, **(config or {})}, llm=llm)
    env = NavEnv(str(ds.scene_file(episode)), physics=physics, action_space=agent.action_space,
                 sensors=agent.sensors, max_episode_steps=max_steps, task=task)
    try:
        record, _ = run_episode(env, agent, episode, physics=physics)
    finally:
        env.close()
    return record, episode


@pytest.mark.slow
@pytest.mark.parametrize("name", AGENTS)
def test_agent_walks_an_episode_and_replays_it_from_the_transcript(dataset, name, tmp_path):
    transcript = tmp_path / "calls.jsonl"
    model = ScriptedModel(walk_then_stop(2))
    record, episode = run(dataset, name, RecordingClient(model, transcript), config={"min_steps_before_stop": 0})
    assert record["error"] is None and record["fail_reason"] == "stop"
    trace = record["agent_trace"]
    assert len(trace["steps"]) == 3 and trace["calls"] == 3 and trace["parse_failures"] == 0
    first, second = trace["steps"][0], trace["steps"][1]
    prompt = second["messages"][1]["content"]
    assert episode.instruction.text in prompt and "step 0: moved to" in prompt
    assert all(f"{c['id']}: {c['phrase']}" in prompt for c in second["candidates"])
    chosen = first["candidates"][0]
    moved = np.hypot(*np.subtract(record["trajectory"][1][:2], record["trajectory"][0][:2]))
    assert moved == pytest.approx(chosen["distance_m"], abs=0.15)   # the candidate was executed
    assert record["actions"][-1] == [0.0, 0.0, 1.0]
    assert trace["tokens"]["completion"] == 60 and trace["cost_usd"] == pytest.approx(0.003)
    if name.startswith("map"):
        assert "Trajectory:\nPlace 0 1" in prompt and "Previous planning:\nKeep going" in prompt
    else:
        assert "Summary of your progress:\nProgressing." in prompt
    assert ('{"thought": ' in prompt) == name.endswith("_cot")   # CoT: reasoning before the action

    replayed, _ = run(dataset, name, ReplayClient(transcript), config={"min_steps_before_stop": 0})
    assert replayed["actions"] == record["actions"]
    assert replayed["agent_trace"]["steps"] == trace["steps"]


@pytest.mark.parametrize("name", ["text_history", "map_history_cot"])
def test_garbage_replies_are_repaired_then_fall_back_never_stop(dataset, name):
    garbage = iter(["", "I would rather not say.", '{"action": "Z"}', '{"plan": "no action"}'] * 10)
    record, _ = run(dataset, name, ScriptedModel(lambda *_: next(garbage)), max_steps=4)
    trace = record["agent_trace"]
    assert record["error"] is None and record["fail_reason"] == "step_budget"
    assert trace["repairs"] == trace["fallbacks"] == 4 and trace["parse_failures"] == 8
    assert trace["failures"] == {"empty": 2, "malformed": 4, "unknown_id": 2}
    assert all(a[2] == 0.0 for a in record["actions"])                 # no STOP
    assert all(s["fallback"] and s["repair"] for s in trace["steps"])
    assert "could not be used" in trace["steps"][0]["repair_messages"][1]["content"]


def test_a_repaired_reply_is_used(dataset):
    answers = iter(["nonsense", reply("STOP")])
    record, _ = run(dataset, "text_history", ScriptedModel(lambda *_: next(answers)))
    trace = record["agent_trace"]
    assert record["fail_reason"] == "stop"
    assert (trace["repairs"], trace["fallbacks"], trace["parse_failures"]) == (1, 0, 1)


def test_dialogue_agent_asks_and_reads_the_answer(dataset):
    def policy(step, options, prompt):
        if step == 0:
            assert "ASK" in options
            return reply("ASK", question="Which way to the goal?")
        assert 'asked "Which way to the goal?". Answer: "' in prompt
        return reply("STOP")

    record, _ = run(dataset, "map_history", ScriptedModel(policy), task="dialogue")
    assert record["error"] is None and record["actions"][0] == {"ask": "Which way to the goal?"}
    assert "Q: Which way to the goal?" in record["agent_trace"]["steps"][1]["messages"][1]["content"]


def test_long_horizon_agent_stops_at_each_goal(dataset):
    record, episode = run(dataset, "text_history", ScriptedModel(lambda *_: reply("STOP")), task="long_horizon",
                          config={"privileged_subgoals": True})
    legs = len(episode.goals)
    assert legs > 1 and len(record["stops"]) == legs and record["fail_reason"] == "stop"
    prompts = [s["messages"][1]["content"] for s in record["agent_trace"]["steps"]]
    assert f"You are now on goal 2 of {legs}." in prompts[1]


def test_visual_reference_image_goes_to_a_vlm(dataset):
    record, _ = run(dataset, "map_history", ScriptedModel(walk_then_stop(1)), task="visual_reference",
                    config={"perception": "vlm"})
    prompt = record["agent_trace"]["steps"][0]["messages"][1]["content"]
    assert "<image goal>" in prompt and "<image view " in prompt and "What you see" not in prompt


def test_strict_physics_runs_and_bumps_are_reported(dataset):
    record, _ = run(dataset, "text_history", ScriptedModel(walk_then_stop(3)), physics="strict")
    assert record["error"] is None and record["fail_reason"] in ("stop", "collision")


def test_the_episode_token_cap_ends_the_episode_as_llm_budget(dataset):
    record, _ = run(dataset, "text_history", ScriptedModel(walk_then_stop(9)),
                    config={"max_tokens_per_episode": 10})
    assert record["fail_reason"] == "llm_budget" and "max_tokens_per_episode" in record["error"]
    assert EpisodeBudgetExceeded.__name__ in record["error"]


def test_configs_are_strict_and_a_model_is_required():
    with pytest.raises(ConfigError, match="perceptoin"):
        make_agent("text_history", {"perceptoin": "gt"})
    with pytest.raises(ConfigError, match="max_candidates"):
        make_agent("map_history", {"waypoints": {"max_candidates": 40}})
    agent = make_agent("map_history", {"perception": "gt"})    # no client is built yet
    assert agent.privileged == ("semantic_categories", "room_type") and agent.action_space == "waypoint"
    assert make_agent("text_history").privileged == ()
    with pytest.raises(ConfigError, match="needs a model"):
        _ = agent.llm
    assert math.isclose(agent.config.place_merge_distance, 0.75)


def test_the_harness_runs_an_agent_and_records_privileged_perception(dataset, tmp_path):
    import json

    from vlnverse.eval.running.harness import EvalConfig, evaluate

    agent = make_agent("text_history", {"perception": "gt", **SMALL}, llm=ScriptedModel(walk_then_stop(1)))
    result = evaluate(EvalConfig(dataset=str(dataset), out=str(tmp_path), agent="text_history", task="coarse",
                                 episodes=1, physics=("tel_hop",), plots=0, bootstrap=10), agent=agent)
    run_file = json.loads((tmp_path / "run.json").read_text())["run"]
    assert run_file["privileged"] == ["room_type", "semantic_categories"]
    assert run_file["waypoint_predictor"]["name"] == "learned"  # the default: the shipped checkpoint
    assert run_file["waypoint_predictor"]["checkpoint"] == "shipped"
    (record,) = result.records
    assert record["fail_reason"] == "stop" and record["agent_trace"]["calls"] == 2


def test_a_thin_multi_call_agent_builds_on_consult_and_choose(dataset):
    from vlnverse.agents.text_history import TextHistoryAgent
    from vlnverse.llm.types import ChatMessage

    class Advised(TextHistoryAgent):
        """One advisor call, then the usual decision (the shape of the debate agents)."""

        def decide(self, view):
            advice = self.consult([ChatMessage.user(f"Advise on: {view.instruction}")], "advisor").text
            self.state.memory = f"Advisor said: {advice[:40]}"
            return super().decide(view)

    def policy(step, options, prompt):
        return "go on" if prompt.startswith("Advise on") else reply("STOP")

    model = ScriptedModel(policy)
    ds, episode = episode_of(dataset, "coarse")
    agent = Advised({"perception": "gt", **SMALL}, llm=model)
    env = NavEnv(str(ds.scene_file(episode)), physics="tel_hop", action_space="waypoint", sensors=agent.sensors)
    record, _ = run_episode(env, agent, episode, physics="tel_hop")
    env.close()
    (step,) = record["agent_trace"]["steps"]
    assert record["agent_trace"]["calls"] == 2 and step["consultations"][0]["purpose"] == "advisor"
    assert "Advisor said: go on" in step["messages"][1]["content"]


def test_the_fallback_keeps_moving_and_turns_when_boxed_in():
    from vlnverse.agents.base import _fallback
    from vlnverse.agents.waypoints.candidate import Candidate, turn_options

    ahead = [Candidate("C", 1.0, 2.0, 2), Candidate("A", 0.0, 0.8, 0), Candidate("L", -0.5, 3.0, 11)]
    assert _fallback(ahead).tolist() == pytest.approx([0.8, 0.0, 0.0])
    turns = turn_options(Panorama(PanoramaConfig(views=4, image_size=8), tuple(np.ones((4, 8, 8), np.float32))))
    assert _fallback(turns).tolist() == pytest.approx([0.0, math.pi / 2, 0.0])   # a turn, never STOP


class NoPlace:
    """A predictor that proposes no place to move to (a boxed-in robot)."""

    def __init__(self, config) -> None:
        self.config = config

    def predict(self, panorama) -> list:
        return []


def test_with_no_candidate_the_agent_is_offered_turns_in_place_not_stop_alone(dataset):
    def turn_right_then_stop(step, options, prompt):
        return reply("R" if step < 2 and "R" in options else "STOP" if "STOP" in options else "L")

    model = ScriptedModel(turn_right_then_stop)
    record, _ = run(dataset, "text_history", model, max_steps=6, config={
        "waypoint_predictor": "tests.agents.test_agents_episodes:NoPlace", "min_steps_before_stop": 2})
    steps = record["agent_trace"]["steps"]
    assert steps[0]["options"] == ["L", "R"] and steps[2]["options"] == ["L", "R", "STOP"]   # STOP when due
    assert "R: turn in place, 90 deg right" in model.prompts[0] and "L: turn in place, 90 deg left" in model.prompts[0]
    assert [s["action"] for s in steps] == [[0.0, pytest.approx(-math.pi / 2, abs=1e-4), 0.0]] * 2 + [[0.0, 0.0, 1.0]]
    yaws = [s["pose"][2] for s in steps]                                  # (x, y, yaw) at each decision
    assert math.remainder(yaws[1] - yaws[0], 2 * math.pi) == pytest.approx(-math.pi / 2, abs=0.05)
    assert record["fail_reason"] == "stop" and record["agent_trace"]["fallbacks"] == 0


class ForwardOnly:
    """A stand-in learned predictor: one candidate straight ahead."""

    def __init__(self, config):
        self.config = config

    def predict(self, panorama):
        from vlnverse.agents.waypoints.candidate import Candidate

        return [Candidate("A", 0.0, self.config.min_distance, 0)]


def test_a_predictor_named_in_the_config_replaces_the_depth_one(dataset):
    record, _ = run(dataset, "text_history", ScriptedModel(walk_then_stop(1)),
                    config={"waypoint_predictor": f"{__name__}:ForwardOnly"})
    assert [c["id"] for c in record["agent_trace"]["steps"][0]["candidates"]] == ["A"]
    assert record["actions"][0][:2] == [0.4, 0.0]
    with pytest.raises(ConfigError, match="waypoint_predictor"):
        make_agent("text_history", {"waypoint_predictor": "trained"})
    with pytest.raises(ConfigError, match="12-view"):
        make_agent("text_history", {"panorama": {"views": 4}})
    with pytest.raises(ConfigError, match="waypoint_checkpoint"):
        make_agent("text_history", {"waypoint_predictor": "depth", "waypoint_checkpoint": "x.pt"})


def test_stop_is_withheld_for_the_first_steps_when_configured(dataset):
    record, _ = run(dataset, "map_history", ScriptedModel(lambda step, options, prompt: reply(
        "STOP" if "STOP" in options else options[0])), config={"min_steps_before_stop": 2})
    steps = record["agent_trace"]["steps"]
    assert [("STOP" in s["options"]) for s in steps] == [False, False, True]
    assert record["fail_reason"] == "stop" and record["agent_trace"]["parse_failures"] == 0


def test_samples_vote_and_unusable_samples_are_counted(dataset):
    from vlnverse.llm.types import LLMResponse

    class Sampler(ScriptedModel):
        """Three samples: first a garbage one and two moves, then one move and two STOPs."""

        def send(self, request):
            assert request.params.n == 3
            move = super().send(request)
            votes = ("garbage", move.text, move.text) if len(self.prompts) == 1 else \
                (move.text, reply("STOP"), reply("STOP"))
            return LLMResponse(text=votes[0], model=self.model, usage=move.usage, choices=votes, key=move.key)

    record, _ = run(dataset, "text_history", Sampler(walk_then_stop(5)), config={"samples": 3})
    trace = record["agent_trace"]
    assert len(trace["steps"]) == 2 and record["fail_reason"] == "stop"
    assert trace["parse_failures"] == 1 and trace["repairs"] == 0
    assert trace["steps"][0]["parsed"]["action"] != "STOP"
