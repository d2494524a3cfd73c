"""Prose in the action field, through every agent that reads actions with the shared parser:
each prose reply is counted as ``malformed``, repaired once, then falls back; none becomes
an action (above all, none becomes a silent STOP)."""

from __future__ import annotations

import itertools
import json
import re

import pytest

from tests.agents.conftest import ScriptedModel
from tests.agents.test_agents_episodes import run
from tests.agents.test_discussnav import ROLES, Panel, PanelModel
from tests.agents.test_dscd_nav import DebateModel
from tests.agents.test_parsing import PROSE

TABLE = PROSE


def prose_replies():
    """Each prose text once as a JSON reply, then again as ``Key: value`` lines."""
    texts = itertools.cycle([json.dumps({"thought": "t", "summary": "s", "new_planning": "p",
                                         "why": "w", "evidence": "e", "action": p}) for p in TABLE]
                            + [f"Thought: t\nAction: {p}" for p in TABLE])
    return lambda *_: next(texts)


def assert_no_prose_was_acted_on(record, failures):
    trace = record["agent_trace"]
    assert record["error"] is None and record["fail_reason"] == "step_budget"
    # malformed, or unknown_id where the first id named is not offered at this step
    assert sum(trace["failures"].values()) == failures and set(trace["failures"]) <= {"malformed", "unknown_id"}
    assert all(a[2] == 0.0 for a in record["actions"])              # no STOP
    assert all(s["fallback"] for s in trace["steps"])


@pytest.mark.parametrize("name", ["text_history", "map_history_cot"])
def test_single_prompt_agents_count_every_prose_reply(dataset, name):
    steps = len(TABLE)                          # two replies a step: the table in JSON, then in lines
    record, _ = run(dataset, name, ScriptedModel(prose_replies()), max_steps=steps)
    assert_no_prose_was_acted_on(record, 2 * steps)
    assert record["agent_trace"]["repairs"] == record["agent_trace"]["fallbacks"] == steps


def test_dscd_nav_stances_and_judge_count_every_prose_reply(dataset):
    replies = prose_replies()
    record, _ = run(dataset, "dscd_nav", DebateModel(lambda *_: replies()), max_steps=4)
    # per step: 3 rounds of TSU and SIB (each replied to twice) and the NCA (twice): 14 replies
    assert_no_prose_was_acted_on(record, 14 * 4)
    for step in record["agent_trace"]["debate"]:
        assert [(r["tsu"], r["sib"]) for r in step["rounds"]] == [(None, None)] * 3 and step["judge"] is None


class ProsePanel(Panel):
    """A panel whose decision tester answers in prose; the navigator's step-0 samples are prose too."""

    def answer(self, system, user, n, seed):
        role = ROLES.get(system.split(".")[0], "navigator")
        if role == "decision_testing":                 # its first answer and its repair
            minority = (re.findall(r"Prediction: (\w+)", user) or ["STOP"])[-1]
            return [json.dumps({"thought": "t", "action": f"STOP? not yet, maybe {minority}"})]
        texts = super().answer(system, user, n, seed)
        if role == "navigator" and not re.search(r"^\[Step \d+\]", user, re.M):
            return [json.dumps({"thought": "t", "action": p}) for p in TABLE[:len(texts)]]
        return texts


def test_discussnav_navigator_and_decision_tester_count_prose(dataset):
    plan = [lambda o: [o[0]] * 5, lambda o: [o[0]] * 3 + ["STOP"] * 2, lambda o: ["STOP"] * 5]
    record, _ = run(dataset, "discussnav", PanelModel(ProsePanel(plan)), max_steps=2)
    trace = record["agent_trace"]
    first, second = (s["discussion"] for s in trace["steps"])
    assert trace["steps"][0]["fallback"] and first["decision"] is None    # 5 prose samples, 5 prose repairs
    assert second["testing"]["error"] == "malformed"                      # the tester's prose is not STOP
    assert second["decision"] == trace["steps"][1]["options"][0]          # the majority after one repair
    assert trace["failures"] == {"malformed": 5 + 5 + 2} and trace["repairs"] == 2
    assert trace["roles"]["decision_testing"]["calls"] == 2
    assert all(a[2] == 0.0 for a in record["actions"])
