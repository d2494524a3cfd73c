"""What a VLM agent sees: every panorama view (within the image budget) labelled with its
heading; MapGPT's supplementary images, whole-episode history, STOP first and not before
step 3; the local map and the free-space hint only as options."""

from __future__ import annotations

import re

from tests.agents.conftest import ScriptedModel, walk_then_stop
from tests.agents.test_agents_episodes import run
from vlnverse.agents.config import LLMAgentConfig
from vlnverse.agents.map_history import MapHistoryConfig

VLM = {"perception": "vlm"}


def images(prompt: str) -> list[str]:
    return re.findall(r"<image ([^>]+)>", prompt)


def test_all_twelve_views_reach_a_vlm_prompt_labelled_with_their_heading(dataset):
    record, _ = run(dataset, "text_history", ScriptedModel(walk_then_stop(1)), config=VLM)
    step = record["agent_trace"]["steps"][0]
    views = [label for label in images(step["messages"][1]["content"]) if label.startswith("view ")]
    assert len(views) == 12 and views[0] == "view 0 (ahead)" and views[6] == "view 6 (behind)"
    assert views[3] == "view 3 (90 deg left)" and views[9] == "view 9 (90 deg right)"

    record, _ = run(dataset, "text_history", ScriptedModel(walk_then_stop(1)), config={**VLM, "panorama_images": 3})
    step = record["agent_trace"]["steps"][0]
    sent = [int(label.split()[1]) for label in images(step["messages"][1]["content"]) if label.startswith("view ")]
    toward = sorted({round(c["heading_deg"] / 30) % 12 for c in step["candidates"]})
    assert len(sent) == 3 and set(toward[:3]) <= set(sent)


def test_local_map_and_free_space_hint_are_options_off_by_default(dataset):
    assert LLMAgentConfig().local_map is False and LLMAgentConfig().free_space_hint is False
    for name in ("text_history", "map_history"):
        record, _ = run(dataset, name, ScriptedModel(walk_then_stop(0)), config={"min_steps_before_stop": 0})
        system, user = (m["content"] for m in record["agent_trace"]["steps"][0]["messages"])
        assert "Local map" not in user and "free space" not in system
        record, _ = run(dataset, name, ScriptedModel(walk_then_stop(0)),
                        config={"min_steps_before_stop": 0, "local_map": True, "free_space_hint": True})
        system, user = (m["content"] for m in record["agent_trace"]["steps"][0]["messages"])
        assert "Local map" in user and "prefer candidates with free space" in system


def test_map_history_follows_mapgpt(dataset):
    defaults = MapHistoryConfig()
    assert (defaults.min_steps_before_stop, defaults.history_window) == (3, 0)
    record, _ = run(dataset, "map_history", ScriptedModel(walk_then_stop(10)), config=VLM, max_steps=11)
    steps = record["agent_trace"]["steps"]
    assert [s["options"][0] == "STOP" for s in steps[:5]] == [False, False, False, True, True]
    assert all("STOP" not in s["options"] for s in steps[:3])
    last = steps[-1]["messages"][1]["content"]
    assert "step 0: moved to" in last and "earlier step(s) not shown" not in last   # the whole episode
    later = [images(s["messages"][1]["content"]) for s in steps[1:]]
    supplementary = [label for labels in later for label in labels if label.startswith("place ")]
    assert supplementary and all(label.endswith("(observed, unvisited)") for label in supplementary)
    assert max(sum(label.startswith("place ") for label in labels) for labels in later) <= 4
