"""The episode viewer: pages linked from the index, with each step's panorama and
candidates, what the model was sent and answered, the action and the path so far."""

from __future__ import annotations

import json
import re

from vlnverse.eval.harness import EvalConfig, evaluate
from vlnverse.eval.viewer import render_episode_page, strip_x
from vlnverse.llm.loopback import LoopbackServer

KEY_ENV = "VLNVERSE_TEST_VIEWER_KEY"


def first_candidate(body):
    text = "\n".join(m["content"] if isinstance(m["content"], str) else
                     "\n".join(p.get("text", "") for p in m["content"]) for m in body["messages"])
    options = re.findall(r'"action" must be exactly one of: ([^\n]*?)\.\s*$', text, re.MULTILINE)[-1]
    return json.dumps({"thought": "go", "action": options.split(",")[0].strip()})


def test_an_llm_agent_run_gets_step_pages(bundled_dataset, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-viewer")
    with LoopbackServer(first_candidate) as server:
        result = evaluate(EvalConfig(
            dataset=str(bundled_dataset), out=str(tmp_path / "run"), agent="text_history", task="fine",
            episodes=2, physics=("tel_hop",), max_steps=3, plots=1, bootstrap=10,
            agent_config={"panorama": {"views": 4, "image_size": 48},  # the model from the agent config
                          "llm": f"openai:gpt-4o?base_url={server.url}&api_key_env={KEY_ENV}&max_retries=0"}))
    out = result.out
    assert all(r["llm"]["calls"] == 3 for r in result.records)  # metered like --llm
    index = (out / "index.html").read_text()
    pages = sorted((out / "viewer").glob("*.html"))
    assert len(pages) == 2 and all(f'href="viewer/{p.name}"' in index for p in pages)
    pictured = next(r for r in result.records if r["plot"])
    name = f"{pictured['episode_id']}__tel_hop"
    page = (out / "viewer" / f"{name}.html").read_text()
    strips = sorted((out / "viewer" / name).glob("step_*.jpg"))
    assert len(strips) == len(pictured["actions"]) == 3
    assert page.count('<div class="step"') == 3 and f'src="{name}/step_000.jpg"' in page
    assert page.count('class="cand chosen"') == 3  # the chosen candidate is marked at every step
    assert "Sent to the model" in page and "&quot;action&quot;" in page and "<svg" in page
    other = next(p for p in pages if p.stem != name).read_text()
    assert "no panorama captured" in other


def test_page_of_a_plain_record_and_marker_positions():
    record = {"episode_id": "e1", "physics": "strict", "instruction": "go <b>", "task": "fine",
              "trajectory": [[0, 0, 0], [1, 0, 0]], "reference_path": [[0, 0, 0], [2, 0, 0]],
              "goals": [{"position": [2, 0, 0], "radius": 1.0}], "actions": [1], "metrics": {"SR": 0.0},
              "agent_trace": None}
    page = render_episode_page(record, {})
    assert "go &lt;b&gt;" in page and "<h2>Actions</h2>" in page
    assert strip_x(0) == 0.5 and strip_x(90) == 0.25 and strip_x(-90) == 0.75 and strip_x(180) == 0.0
