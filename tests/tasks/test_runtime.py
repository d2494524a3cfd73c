"""Env-facing task state: long-horizon sub-goals, dialogue budgets, oracles, env episodes."""

from __future__ import annotations

import json

import httpx
import numpy as np

from tests.llm.endpoint import API_KEY_ENV, ChatEndpoint
from vlnverse.llm.openai_client import OpenAIClient
from vlnverse.tasks.episode import Episode, Goal, Instruction, yaw_to_quaternion
from vlnverse.tasks.oracle import LLMOracle, TemplateOracle
from vlnverse.tasks.runtime import BUDGET_SPENT, DialogueSession, SubgoalTracker


def chain_episode() -> Episode:
    return Episode(
        episode_id="h-l0-long_horizon", trajectory_id="h-l0", scene_id="h", scene_path="h.usda", split="train",
        task="long_horizon", start_position=(1.0, 1.0, 0.0), start_rotation=yaw_to_quaternion(0.0),
        goals=(Goal((8.3, 3.6, 0.0), object_id="cup_0", room_id="kitchen_0"),
               Goal((1.5, 9.0, 0.0), object_id="bed_0", room_id="bedroom_0")),
        reference_path=((1.0, 1.0, 0.0), (8.3, 3.6, 0.0), (1.5, 9.0, 0.0)), geodesic_distance=16.0,
        instruction=Instruction("First, find the red cup. Finally, find the blue bed.",
                                subgoals=("Find the red cup.", "Find the blue bed.")),
        subgoal_distances=(8.0, 8.0))


def test_subgoal_tracker_keeps_the_whole_instruction_and_advances_on_stop():
    whole = chain_episode().instruction.text
    tracker = SubgoalTracker(chain_episode())
    assert tracker.instruction == whole and not tracker.done
    assert tracker.on_stop((8.0, 3.0, 0.0)) is False
    assert tracker.instruction == whole and tracker.active == 1
    assert tracker.on_stop((9.0, 9.0, 0.0)) is True
    assert tracker.reached == [True, False]
    assert tracker.info()["subgoal_stops"] == [[8.0, 3.0, 0.0], [9.0, 9.0, 0.0]]

    legs = SubgoalTracker(chain_episode(), view="leg")
    assert legs.instruction == "Find the red cup."
    legs.on_stop((8.0, 3.0, 0.0))
    assert legs.instruction == "Find the blue bed."


def test_template_oracle_uses_the_route_and_the_goal(context):
    oracle = TemplateOracle(context, chain_episode())
    answer = oracle.answer("Where is the cup?", (1.0, 1.0, 0.0, 0.0))
    assert "kitchen" in answer and "red cup" in answer and "m away" in answer
    assert answer[0].isupper()
    near = oracle.answer("Am I there?", (8.3, 3.6, 0.0, np.pi / 2))
    assert near.startswith("You are there")
    second = oracle.answer("And now?", (8.3, 3.6, 0.0, 0.0), goal_index=1)
    assert "bed" in second and "bedroom" in second


def test_dialogue_budget():
    class Echo:
        def answer(self, question, pose, goal_index=0):
            return f"answer to {question}"

    session = DialogueSession(Echo(), budget=2)
    assert session.ask("a?", (0, 0, 0, 0)) == "answer to a?"
    assert session.ask("b?", (0, 0, 0, 0)) == "answer to b?"
    assert session.remaining == 0
    assert session.ask("c?", (0, 0, 0, 0)) == BUDGET_SPENT
    assert len(session.history) == 3


def test_llm_oracle_through_the_openai_client(context, monkeypatch):
    monkeypatch.setenv(API_KEY_ENV, "sk-test")
    endpoint = ChatEndpoint(answer=lambda body: "Go through the doorway on your right into the kitchen.")
    client = OpenAIClient("gpt-4o", base_url="http://llm.test/v1", api_key_env=API_KEY_ENV,
                          http_client=httpx.Client(transport=endpoint.transport()), sleep=lambda s: None)
    oracle = LLMOracle(context, chain_episode(), client)
    assert oracle.answer("Which way?", (1.0, 1.0, 0.0, 0.0)) == "Go through the doorway on your right into the kitchen."
    prompt = json.dumps(endpoint.requests[0])
    assert "Which way?" in prompt and "kitchen_0 (kitchen" in prompt and "red cup" in prompt
    endpoint.answer = lambda body: "I'm sorry, I cannot help."
    assert "red cup" in oracle.answer("Which way?", (1.0, 1.0, 0.0, 0.0)) and oracle.fallbacks == 1


def test_llm_oracle_sees_the_view_until_its_model_refuses_images(context, monkeypatch):
    monkeypatch.setenv(API_KEY_ENV, "sk-test")
    endpoint = ChatEndpoint(answer=lambda body: "The cup is on the table to your right.")
    client = OpenAIClient("gpt-4o", base_url="http://llm.test/v1", api_key_env=API_KEY_ENV,
                          http_client=httpx.Client(transport=endpoint.transport()), sleep=lambda s: None)
    oracle = LLMOracle(context, chain_episode(), client)
    view = np.full((8, 8, 3), 120, np.uint8)
    assert oracle.takes_images and oracle.answer("Where is the cup?", (1.0, 1.0, 0.0, 0.0), view=view)
    parts = endpoint.requests[-1]["messages"][0]["content"]
    assert any(p["type"] == "image_url" for p in parts)
    endpoint.failures = [(400, {})]  # a text-only model rejects the image ...
    assert oracle.answer("Where is the cup?", (1.0, 1.0, 0.0, 0.0), view=view) == "The cup is on the table to your right."
    assert not oracle.takes_images and oracle.fallbacks == 0  # ... and is asked again without it
    assert isinstance(endpoint.requests[-1]["messages"][0]["content"], str)


def test_template_oracle_answers_the_question_asked(context):
    from vlnverse.tasks.oracle import question_kind

    assert [question_kind(q) for q in ("Where is the fridge?", "Am I close?", "How far is it?",
                                       "Which room am I in?", "Which way now?", "Left or right?")] == \
        ["where", "close", "close", "room", "route", "route"]
    oracle = TemplateOracle(context, chain_episode())
    start = (1.0, 1.0, 0.0, 0.0)  # living room, facing +x (the kitchen lies ahead, beyond x = 6)
    answers = {q: oracle.answer(q, start) for q in (
        "Where is the fridge?", "Where is the refrigerator?", "Where is the bathroom?", "Am I close?",
        "Which room am I in?", "Which way should I go?", "Where is the piano?")}
    assert len(set(answers.values())) == 5  # fridge = refrigerator, piano (none here) = the route
    assert answers["Where is the fridge?"] == answers["Where is the refrigerator?"]
    assert "fridge" in answers["Where is the fridge?"] and "kitchen" in answers["Where is the fridge?"]
    assert "ahead of you" in answers["Where is the fridge?"]
    assert answers["Where is the bathroom?"].startswith("The bathroom is")
    assert answers["Am I close?"].startswith("Not yet") and "red cup" in answers["Am I close?"]
    assert answers["Which room am I in?"].startswith("You are in the living room")
    assert "m away" in answers["Which way should I go?"] and "kitchen" in answers["Which way should I go?"]
    assert answers["Where is the piano?"] == answers["Which way should I go?"]  # no piano: the route
    near = oracle.answer("Am I close?", (6.8, 3.6, 0.0, 0.0))
    assert near.startswith("Yes, you are close")
    assert oracle.answer("Which room am I in?", (8.0, 1.5, 0.0, 0.0)).startswith("You are in the kitchen")


def test_episodes_feed_the_env(house_file):
    from vlnverse.envs.nav_env import NavEnv

    episode = chain_episode()
    env = NavEnv(house_file, sensors=(), episodes=[episode.to_nav_mapping(goal_index=0)], action_space="discrete")
    try:
        obs, info = env.reset(seed=0)
        assert obs["instruction"] == "Find the red cup."
        assert info["episode_id"] == episode.episode_id
        assert env.episode.goals[0].position[:2] == (8.3, 3.6)
        assert np.allclose(env.episode.start, (1.0, 1.0, 0.0))
    finally:
        env.close()
