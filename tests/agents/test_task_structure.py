"""Agents see only what the env shows: the sub-goal split of a long-horizon instruction is a
declared privileged option (off by default, listed in ``run.json``), and the harness tells
an agent the split only when it declares it."""

from __future__ import annotations

import json
import re

import numpy as np

from tests.agents.arna_script import ARNAScript
from tests.agents.conftest import SMALL, ScriptedModel, reply
from tests.agents.test_agents_episodes import episode_of, run
from tests.agents.test_arna import answer_at_the_answer_step
from tests.agents.test_arna import run as run_arna
from vlnverse.eval.agent import Agent
from vlnverse.eval.registry import make_agent
from vlnverse.eval.running.harness import EvalConfig, evaluate


def split_shown(prompt: str, subgoals) -> bool:
    """Whether a prompt shows the split: its markers, its count or a sub-goal's own text."""
    return bool(re.search(r"^(?:->| {2}) goal \d+: ", prompt, re.M)) or f"goal 1 of {len(subgoals)}" in prompt \
        or any(s in prompt for s in subgoals)


def test_the_sub_goal_split_is_absent_unless_the_privileged_option_is_on(dataset):
    _, episode = episode_of(dataset, "long_horizon")
    subgoals = episode.instruction.subgoals
    legs = len(subgoals)
    assert legs > 1 and not any(s in episode.instruction.text for s in subgoals)
    for name in ("text_history", "map_history_cot"):
        record, _ = run(dataset, name, ScriptedModel(lambda *_: reply("STOP")), task="long_horizon",
                        config={"min_steps_before_stop": 0})
        prompts = [s["messages"][1]["content"] for s in record["agent_trace"]["steps"]]
        assert len(record["stops"]) == legs and record["fail_reason"] == "stop"
        assert not any(split_shown(p, subgoals) for p in prompts)
        assert episode.instruction.text in prompts[1] and "You have stopped 1 time(s) so far." in prompts[1]

    record, _ = run(dataset, "text_history", ScriptedModel(lambda *_: reply("STOP")), task="long_horizon",
                    config={"privileged_subgoals": True})
    prompts = [s["messages"][1]["content"] for s in record["agent_trace"]["steps"]]
    assert f"-> goal 2: {subgoals[1]}" in prompts[1] and f"You are now on goal 2 of {legs}." in prompts[1]


def test_arna_reads_no_sub_goal_split_by_default(dataset):
    _, episode = episode_of(dataset, "long_horizon")
    record = run_arna(dataset, ARNAScript({"NextStep": answer_at_the_answer_step}), task="long_horizon", max_steps=60)
    assert len(record["stops"]) == len(episode.goals) and record["fail_reason"] == "stop"
    prompts = [c["messages"][1]["content"] for s in record["agent_trace"]["steps"] for c in s.get("consultations", [])]
    assert prompts and not any(split_shown(p, episode.instruction.subgoals) for p in prompts)


class Recorder(Agent):
    """STOPs at once; its trace holds the sub-goals its EpisodeInfo held."""

    action_space = "waypoint"
    sensors = ()

    def __init__(self, privileged=()):
        self.privileged = privileged

    def reset(self, episode):
        self.seen = list(episode.subgoal_instructions)

    def act(self, observation):
        return np.array([0.0, 0.0, 1.0], dtype=np.float32)

    def trace(self):
        return {"subgoals_seen": self.seen}


def test_the_harness_gives_the_split_only_to_an_agent_that_declares_it(dataset, tmp_path):
    def evaluated(agent, out):
        result = evaluate(EvalConfig(dataset=str(dataset), out=str(tmp_path / out), agent=out, task="long_horizon",
                                     episodes=1, physics=("tel_hop",), max_steps=4, plots=0, bootstrap=10),
                          agent=agent)
        seen = [(r["agent_trace"] or {}).get("subgoals_seen") for r in result.records]
        return seen, json.loads((tmp_path / out / "run.json").read_text())["run"]

    seen, run_file = evaluated(Recorder(), "fair")
    assert seen == [[]] and run_file["privileged"] == []
    seen, run_file = evaluated(Recorder(("subgoal_instructions",)), "told")
    assert len(seen[0]) > 1 and run_file["privileged"] == ["subgoal_instructions"]

    agent = make_agent("text_history", {**SMALL, "privileged_subgoals": True}, llm=ScriptedModel(lambda *_: reply("STOP")))
    _, run_file = evaluated(agent, "llm")
    assert run_file["privileged"] == ["subgoal_instructions"] and run_file["agent_settings"]["privileged_subgoals"]
    _, run_file = evaluated(make_agent("text_history", SMALL, llm=ScriptedModel(lambda *_: reply("STOP"))), "default")
    assert run_file["privileged"] == [] and run_file["agent_settings"]["privileged_subgoals"] is False
    assert run_file["agent_settings"]["waypoint_predictor"] and "local_map" in run_file["agent_settings"]


def test_run_json_records_the_effective_settings_and_a_changed_one_is_another_run(dataset, tmp_path):
    import pytest

    from vlnverse.errors import ConfigError

    def evaluated(settings, llm="none"):
        agent = make_agent("text_history", {**SMALL, **settings, "llm": llm},
                           llm=ScriptedModel(lambda *_: reply("STOP")))
        return evaluate(EvalConfig(dataset=str(dataset), out=str(tmp_path / "run"), agent="text_history",
                                   task="coarse", episodes=1, physics=("tel_hop",), max_steps=4, plots=0,
                                   bootstrap=10), agent=agent)

    spec = "openai:m?base_url=http://user:secret@127.0.0.1:9/v1&api_key_env=none"
    evaluated({}, spec)
    run_file = json.loads((tmp_path / "run" / "run.json").read_text())
    settings = run_file["run"]["agent_settings"]
    assert settings["local_map"] is False and settings["panorama_images"] == 12 and settings["perception"] == "vlm"
    assert run_file["fingerprint"]["agent_settings"]["local_map"] is False
    assert "secret" not in json.dumps(run_file) and settings["llm"]["backend"] == "openai"
    assert evaluated({}, spec).resumed == 1                     # the same settings continue the run
    with pytest.raises(ConfigError, match="agent_settings"):
        evaluated({"local_map": True}, spec)                    # same --agent-config keys, other agent
