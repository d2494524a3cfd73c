"""The episode viewer: pages linked from the index, with each step's panorama and
candidates, what the model was sent and answered, the action and the path so far."""

from __future__ import annotations

import json
import re

from vlnverse.eval.reporting.viewer import render_episode_page, strip_x
from vlnverse.eval.running.harness import EvalConfig, evaluate
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
            agent_config={"panorama": {"views": 4, "image_size": 48}, "waypoint_predictor": "depth",  # the model from the agent config
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
    assert re.search(r'Step 0: <span class="act">[A-Z]: \d+\.\d\d m at [+-]\d+°</span>', page)  # worded
    scene = pictured["scene_id"]
    assert f'<image href="maps/{scene}.png"' in page and "<polygon" in page  # the inset's map and objects
    # the map is drawn twice (the overview, and one layer every step's view references), not once per step
    assert page.count(f'<image href="maps/{scene}.png"') == 2 and page.count('<use href="#step-map"/>') == 3
    assert (out / "viewer" / "maps" / f"{scene}.png").is_file()
    other = next(p for p in pages if p.stem != name).read_text()
    assert "no frames for this episode" in other and "raise --plots" not in other


def test_any_agent_gets_frames_the_map_and_what_it_hit(bundled_dataset, tmp_path):
    """An agent without a camera (``forward``: no sensors) gets frames rendered from its pose,
    its actions in words, and each collision with what it hit."""
    result = evaluate(EvalConfig(dataset=str(bundled_dataset), out=str(tmp_path / "run"), agent="forward",
                                 task="fine", split="val_unseen", physics=("slide",), max_steps=30, plots=1,
                                 bootstrap=10))
    record = result.records[0]
    name = f"{record['episode_id']}__slide"
    folder = result.out / "viewer" / name
    page = (result.out / "viewer" / f"{name}.html").read_text()
    frames = json.loads((folder / "frames.json").read_text())
    assert frames["source"] == "render" and frames["span_deg"] == 90.0  # a discrete agent: the view ahead
    assert len(list(folder.glob("step_*.jpg"))) == len(record["actions"]) == 30
    assert page.count('<span class="act">FORWARD 0.25 m</span>') == 30
    assert "the 90° ahead of the agent, rendered for this page from its pose: the agent itself has no" in page
    assert record["action_space"] == "discrete" and sum(record["collisions"]) > 0
    hit = next(k for k, c in enumerate(record["collisions"]) if c)
    assert record["hits"][str(hit)] and f"collision: hit {', '.join(record['hits'][str(hit)])}" in page
    assert f'<image href="maps/{record["scene_id"]}.png"' in page


def test_frames_are_the_pixels_the_agent_saw():
    import numpy as np

    from vlnverse.eval.reporting.viewer import panorama_strip

    view = np.random.default_rng(0).integers(0, 255, (224, 224, 3), dtype=np.uint8)
    assert np.array_equal(panorama_strip({"rgb": view}), view)  # the sensor's 224 px, not a thumbnail
    assert panorama_strip({"rgb": np.zeros((960, 1280, 3), np.uint8)}).shape == (480, 640, 3)


def test_frames_stop_at_their_budget_and_the_page_says_so(tmp_path):
    import numpy as np

    from vlnverse.eval.reporting.viewer import FrameRecorder

    rng = np.random.default_rng(0)
    recorder = FrameRecorder(tmp_path, budget=60_000)
    for step in range(20):
        recorder(step, {"rgb": rng.integers(0, 255, (64, 64, 3), dtype=np.uint8)})  # noise: big JPEGs
    frames = json.loads((tmp_path / "frames.json").read_text())
    kept = len(list(tmp_path.glob("step_*.jpg")))
    assert 0 < kept == frames["stopped_at"] < 20 and frames["source"] == "agent"
    record = {"episode_id": "e", "physics": "strict", "trajectory": [[0, 0, 0]] * 21, "actions": [1] * 20,
              "goals": [], "metrics": {}}
    page = render_episode_page(record, {k: f"x/step_{k:03d}.jpg" for k in range(kept)}, frames)
    assert f"frames stopped at step {kept}" in page


def test_rendered_frames_stop_at_their_count(tmp_path):
    import numpy as np

    from vlnverse.eval.reporting.viewer import FrameRecorder

    recorder = FrameRecorder(tmp_path, render=lambda: (np.zeros((30, 40, 3), np.uint8), 90.0), max_rendered=3)
    for step in range(6):
        recorder(step, {"depth": np.zeros((4, 4, 1))})  # no RGB: rendered for people
    frames = json.loads((tmp_path / "frames.json").read_text())
    assert len(list(tmp_path.glob("step_*.jpg"))) == 3 and frames["stopped_at"] == 3 and frames["max_rendered"] == 3


def test_actions_in_words():
    from vlnverse.eval.reporting.viewer import describe_action

    assert [describe_action(a, "discrete") for a in (0, 1, 2, 3)] == ["STOP", "FORWARD 0.25 m", "LEFT 15°", "RIGHT 15°"]
    assert describe_action([0.98, 1.0472, 0.0], "waypoint", "C") == "C: 0.98 m at +60°"
    assert describe_action([0.5, -0.5236, 0.0], "velocity") == "0.50 m/s turning -30°/s"
    assert describe_action([0.0, 0.0, 1.0], "waypoint") == "STOP"
    assert describe_action({"ask": "where?"}, "discrete") == 'ASK "where?"'
    assert describe_action({"answer": 2}, "discrete") == "ANSWER C"


def test_page_of_a_plain_record_and_marker_positions():
    record = {"episode_id": "e1", "physics": "strict", "instruction": "go <b>", "task": "fine",
              "trajectory": [[0, 0, 0], [1, 0, 0]], "reference_path": [[0, 0, 0], [2, 0, 0]],
              "goals": [{"position": [2, 0, 0], "radius": 1.0}], "actions": [1], "metrics": {"SR": 0.0},
              "agent_trace": None}
    page = render_episode_page(record, {})
    assert "go &lt;b&gt;" in page and 'Step 0: <span class="act">FORWARD 0.25 m</span>' in page
    assert strip_x(0) == 0.5 and strip_x(90) == 0.25 and strip_x(-90) == 0.75 and strip_x(180) == 0.0
    assert "<th>SR</th><td>0.0 %</td>" in page  # rates in %, as every other page shows them
    assert all(f"</svg>{entry}" in page for entry in ("start", "goal", "success radius", "STOP", "collision"))
    assert 'type="range"' in page and "ArrowRight" in page  # stepped with a slider or the keyboard
