"""Pinned walks per task family: fixed policies over stored episodes of a bundled scene give
the recorded observations (hashed), ``info`` (every key), rewards and end reasons.

One walk per task family (fine, coarse, visual reference, long-horizon in both instruction
views, dialogue, ObjectNav, EQA) under the physics modes, through the dataset form of the
env (``NavEnv(dataset=..., task=...)``, so each task's own defaults apply). The episodes are
stored in the data file (``data/task_golden.json.gz``), not regenerated, so a change to
datagen does not move these walks. Re-record deliberately, after a change meant to alter
what an agent experiences: ``python -m tests.envs.test_task_golden`` (it regenerates the
episodes from the bundled scenes, seed 0).

Re-recorded when the default physics rate went from 120 Hz to 60 Hz (issue 31) over the
same stored episodes, compared record by record with the 120 Hz recording first: every
action, end reason, success and collision identical, poses and rewards within 3e-10, and
15 of 1,354 observation digests changed (rendered from poses 1e-13 m apart).
"""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from gymnasium import spaces as gym_spaces

from tests.envs.test_step_golden import FLOAT_TOLERANCE, _assert_same
from vlnverse.envs.nav_env import NavEnv

ROOT = Path(__file__).resolve().parents[2]
SCENES = ROOT / "assets" / "scenes"
GOLDEN = Path(__file__).parent / "data" / "task_golden.json.gz"
SCENE_ID = "scene_0000"
SENSORS = {"rgb": {"kind": "rgb", "width": 24, "height": 24}, "depth": {"kind": "depth", "width": 24, "height": 24}}
#: (name, task, physics, steps, extra NavEnv keywords, share of oracle actions); the last
#: composes three task components in one env.
WALKS = (
    ("fine_slide", "fine", "slide", 120, {}, 0.8),
    ("fine_strict", "fine", "strict", 80, {}, 0.5),
    ("coarse_tel_hop", "coarse", "tel_hop", 120, {}, 0.9),
    ("visual_reference_slide", "visual_reference", "slide", 100, {"reference_image_size": (48, 64)}, 0.85),
    ("long_horizon_full", "long_horizon", "slide", 200, {}, 0.95),
    ("long_horizon_leg", "long_horizon", "tel_hop", 150, {"instruction_view": "leg"}, 0.9),
    ("dialogue_slide", "dialogue", "slide", 100, {"question_budget": 2}, 0.85),
    ("objectnav_slide", "objectnav", "slide", 140, {}, 0.9),
    ("eqa_slide", "eqa", "slide", 200, {}, 0.9),
    ("eqa_with_dialogue_and_reference", "eqa", "tel_hop", 120,
     {"dialogue": True, "reference_image": True, "reference_image_size": (16, 16)}, 0.9),
)
#: Dialogue walks ask at these steps: the discrete ask action, or a question of their own.
ASK_ACTION_STEPS = (2, 9, 14)
ASK_TEXT_STEPS = {5: "Which room is the goal in?", 20: "Am I close?"}


def _digest(value) -> str:
    data = np.ascontiguousarray(value)
    return hashlib.sha1(f"{data.dtype}{data.shape}".encode() + data.tobytes()).hexdigest()


def _plain(value):
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (np.floating, float)):
        return float(value)
    if isinstance(value, (np.integer, np.bool_)):
        return value.item()
    return value


def _observation(obs: dict) -> dict:
    """Arrays by digest, texts as they are (long ones by digest)."""
    out = {}
    for key, value in sorted(obs.items()):
        if isinstance(value, np.ndarray):
            out[key] = _digest(value)
        elif isinstance(value, str) and len(value) > 80:
            out[key] = hashlib.sha1(value.encode()).hexdigest()
        else:
            out[key] = _plain(value)
    return out


def _space(space) -> str:
    """A space's text with what ``repr`` leaves out (a text space's characters)."""
    if isinstance(space, gym_spaces.Text):
        return f"Text({space.min_length}, {space.max_length}, {''.join(sorted(space.character_set))!r})"
    if isinstance(space, gym_spaces.Tuple):
        return f"Tuple({', '.join(_space(s) for s in space.spaces)})"
    return repr(space)


def _record(kind: str, action, result) -> dict:
    if kind == "reset":
        obs, info = result
        return {"kind": kind, "obs": _observation(obs), "info": _plain(info), "info_keys": sorted(info)}
    obs, reward, terminated, truncated, info = result
    return {"kind": kind, "action": _plain(action), "reward": float(reward), "terminated": bool(terminated),
            "truncated": bool(truncated), "obs": _observation(obs), "info": _plain(info), "info_keys": sorted(info)}


def _episodes_file(episodes: list[dict], folder: Path) -> Path:
    path = folder / "episodes.jsonl"
    path.write_text("".join(json.dumps(e, sort_keys=True) + "\n" for e in episodes), encoding="utf-8")
    return path


def walk(episodes_file: Path, task: str, physics: str, steps: int, extra: dict, oracle_share: float) -> dict:
    """The spaces and every reset and step record of one walk."""
    env = NavEnv(dataset=episodes_file, task=task, scenes_dir=SCENES, sensors=SENSORS, physics=physics,
                 renderer="tiny", max_episode_steps=120, **extra)
    rng = np.random.default_rng(7)
    try:
        records = [_record("reset", None, env.reset(seed=0))]
        info, episode_step, episodes_done = records[0]["info"], 0, 0
        for _ in range(steps):
            kind, action = "step", info["oracle_action"] if rng.random() < oracle_share else int(rng.choice([1, 1, 2, 3]))
            if env.ask_action is not None and episode_step in ASK_ACTION_STEPS:
                action = env.ask_action
            if env.ask_action is not None and episode_step in ASK_TEXT_STEPS:
                kind, action = "ask", ASK_TEXT_STEPS[episode_step]
            if task == "eqa" and action == 0:  # answer instead of stopping: right first, then wrong
                option = info["eqa_answer"] if episodes_done == 0 else (info["eqa_answer"] + 1) % 4
                kind, action = ("step", env.answer_action(option)) if episodes_done == 0 else ("answer", option)
            call = {"step": env.step, "ask": env.ask, "answer": env.answer}[kind]
            result = call(action)
            records.append(_record(kind, action, result))
            info, episode_step = result[-1], episode_step + 1
            if result[2] or result[3]:
                episodes_done += 1
                result = env.reset()
                records.append(_record("reset", None, result))
                info, episode_step = result[1], 0
        spaces = {"observation": {k: hashlib.sha1(_space(v).encode()).hexdigest()
                                  for k, v in env.observation_space.spaces.items()},
                  "action": repr(env.action_space)}
        return {"spaces": spaces, "records": records}
    finally:
        env.close()


def _golden() -> dict:
    return json.loads(gzip.decompress(GOLDEN.read_bytes()))


@pytest.fixture(scope="module")
def golden_episodes(tmp_path_factory) -> tuple[dict, Path]:
    golden = _golden()
    return golden, _episodes_file(golden["episodes"], tmp_path_factory.mktemp("task_golden"))


@pytest.mark.slow
@pytest.mark.parametrize("name, task, physics, steps, extra, oracle_share", WALKS, ids=[w[0] for w in WALKS])
def test_task_walk_matches_the_recorded_one(golden_episodes, name, task, physics, steps, extra, oracle_share):
    golden, episodes_file = golden_episodes
    expected = golden["walks"][name]
    got = json.loads(json.dumps(walk(episodes_file, task, physics, steps, extra, oracle_share)))
    assert got["spaces"] == expected["spaces"]
    assert len(got["records"]) == len(expected["records"])
    for k, (g, e) in enumerate(zip(got["records"], expected["records"], strict=True)):
        assert g["info_keys"] == e["info_keys"], f"{name} record {k}"
        for key in e:
            _assert_same(g[key], e[key], f"{name} record {k} {key}")


def test_the_task_walks_cover_each_task_rule():
    walks = _golden()["walks"]
    steps = {name: [r for r in w["records"] if r["kind"] != "reset"] for name, w in walks.items()}
    for name in ("fine_slide", "coarse_tel_hop", "visual_reference_slide", "objectnav_slide"):
        assert any(r["info"]["success"] for r in steps[name]), name
    assert any(r["info"]["fail_reason"] == "collision" for r in steps["fine_strict"])
    for name in ("long_horizon_full", "long_horizon_leg"):
        assert sum(r["info"]["subgoal_stop"] for r in steps[name]) >= 1, name
    legs = {r["obs"]["instruction"] for r in steps["long_horizon_leg"]}
    assert len(legs) >= 2  # the leg view changes the instruction after a sub-goal STOP
    answers = [r["obs"]["oracle_answer"] for r in steps["dialogue_slide"] if r["obs"]["oracle_answer"]]
    assert len(answers) >= 4 and len(set(answers)) >= 3  # template answers and the spent budget
    eqa = [r["info"] for r in steps["eqa_slide"] if r["info"]["answer"] is not None]
    assert {i["answer_correct"] for i in eqa} == {True, False}
    assert any(i["fail_reason"] == "wrong_answer" for i in eqa)
    assert FLOAT_TOLERANCE < 1e-6


if __name__ == "__main__":
    import tempfile

    from vlnverse.tasks.datagen import DatagenConfig, run_datagen
    from vlnverse.tasks.dataset import EpisodeDataset
    from vlnverse.tasks.episode import TASKS
    from vlnverse.tasks.generate import GenerationConfig

    with tempfile.TemporaryDirectory() as tmp:
        run_datagen(DatagenConfig(scenes=str(SCENES), out=f"{tmp}/ds", seed=0,
                                  generation=GenerationConfig(tasks=TASKS, per_scene=2)))
        episodes = [e.to_dict() for e in EpisodeDataset.open(f"{tmp}/ds").all_episodes() if e.scene_id == SCENE_ID]
        file = _episodes_file(episodes, Path(tmp))
        walks = {name: walk(file, *rest) for name, *rest in WALKS}
    GOLDEN.write_bytes(gzip.compress(json.dumps({"episodes": episodes, "walks": walks},
                                                separators=(",", ":")).encode(), mtime=0))
    print(f"wrote {GOLDEN}")
