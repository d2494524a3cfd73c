"""The env over datasets: episode iteration, scene switching, long-horizon sub-goals,
dialogue asks and the visual-reference observation (datasets made from ``assets/scenes``)."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from PIL import Image

import vlnverse.envs
from tests.bundled import bundled_dataset
from vlnverse.envs import NAV_ENV_ID
from vlnverse.errors import ConfigError, InvalidActionError
from vlnverse.tasks.dataset import EpisodeDataset
from vlnverse.tasks.runtime import BUDGET_SPENT

SMALL = {"rgb": {"kind": "rgb", "width": 32, "height": 24}}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    """Every task over the three bundled scenes, reference images rendered."""
    return bundled_dataset(tmp_path_factory.mktemp("ds") / "rendered", per_scene=2, render=True)


@pytest.fixture(scope="module")
def dataset_no_images(tmp_path_factory) -> Path:
    return bundled_dataset(tmp_path_factory.mktemp("ds") / "plain", per_scene=2, render=False)


def _oracle_run(env, obs, info, limit=400):
    """Follow ``info["oracle_action"]`` until the episode ends; returns every step's (obs, info, terminated)."""
    steps = []
    for _ in range(limit):
        obs, _, terminated, truncated, info = env.step(info["oracle_action"])
        steps.append((obs, info, terminated))
        if terminated or truncated:
            break
    return steps


@pytest.mark.slow
def test_dataset_env_iterates_in_order_and_switches_scenes(dataset):
    records = EpisodeDataset.open(dataset).episodes(None, "coarse")
    assert len({r.scene_id for r in records}) == 3
    env = vlnverse.envs.make(dataset=dataset, task="coarse", sensors=())
    base = env.unwrapped
    seen, sims = [], {}
    obs, info = env.reset(seed=0)
    for i in range(len(records)):
        if i:
            obs, info = env.reset()
        seen.append(info["episode_id"])
        record = records[i]
        assert obs["instruction"] == record.instruction.text
        assert np.allclose(info["pose"][:2], record.start_position[:2], atol=0.05)
        sims.setdefault(record.scene_id, set()).add(id(base.sim))
        assert Path(base._scene_key) == EpisodeDataset.open(dataset).scene_file(record).resolve()
    assert seen == [r.episode_id for r in records]
    # one backend per scene run: reused while the scene stays the same
    assert all(len(ids) == 1 for ids in sims.values())
    assert env.reset()[1]["episode_id"] == records[0].episode_id  # cycles
    assert env.reset(options={"episode_id": records[3].episode_id})[1]["episode_id"] == records[3].episode_id
    assert env.reset()[1]["episode_id"] == records[4].episode_id
    assert env.reset(seed=5)[1]["episode_id"] == records[0].episode_id  # a seeded reset restarts the order
    with pytest.raises(ConfigError, match="no episode"):
        env.reset(options={"episode_id": "nope"})
    env.close()

    by_id = gymnasium.make(NAV_ENV_ID, dataset=str(dataset), split="val_unseen", task="fine", sensors=())
    _, info = by_id.reset(seed=0)
    assert info["episode_id"] == EpisodeDataset.open(dataset).episodes("val_unseen", "fine")[0].episode_id
    by_id.close()


@pytest.mark.parametrize("task", ["long_horizon", "dialogue", "visual_reference"])
def test_check_env_passes_for_dataset_tasks(dataset, task):
    env = vlnverse.envs.make(dataset=dataset, split="val_unseen", task=task, sensors=SMALL)
    check_env(env.unwrapped, skip_render_check=True)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert ("oracle_answer" in obs) == (task == "dialogue")
    assert ("reference_image" in obs) == (task == "visual_reference")
    env.close()


def test_long_horizon_stop_advances_subgoals(dataset):
    record = next(r for r in EpisodeDataset.open(dataset).episodes(None, "long_horizon") if len(r.goals) == 3)
    env = vlnverse.envs.make(dataset=dataset, task="long_horizon", sensors=(), max_episode_steps=2000)
    obs, info = env.reset(options={"episode_id": record.episode_id})
    assert obs["instruction"] == record.instruction.text  # the whole chain, as in the paper
    assert (info["subgoal_index"], info["subgoals_total"], info["subgoal_results"]) == (0, 3, [])

    # a STOP far from the first sub-goal: recorded as a miss, the second sub-goal becomes active
    assert info["geodesic_distance"] > record.goals[0].radius
    obs, reward, terminated, truncated, info = env.step(0)
    assert not terminated and not truncated and info["subgoal_stop"]
    assert info["subgoal_index"] == 1 and obs["instruction"] == record.instruction.text
    assert [r["success"] for r in info["subgoal_results"]] == [False]
    assert info["subgoal_results"][0]["index"] == 0
    assert abs(reward) < 1.0  # no progress jump from switching goals

    # following the oracle reaches sub-goals 2 and 3, each declared by its own STOP
    steps = _oracle_run(env, obs, info, limit=2000)
    stops = [(o, i, t) for o, i, t in steps if i["subgoal_stop"] or t]
    assert len(stops) == 2
    (obs_mid, info_mid, term_mid), (_, info_end, term_end) = stops
    assert not term_mid and term_end
    assert obs_mid["instruction"] == record.instruction.text
    assert [r["success"] for r in info_end["subgoal_results"]] == [False, True, True]
    assert [r["index"] for r in info_end["subgoal_results"]] == [0, 1, 2]
    assert info_end["success"] and info_end["fail_reason"] is None
    env.close()


def test_long_horizon_leg_view_is_an_option(dataset):
    record = next(r for r in EpisodeDataset.open(dataset).episodes(None, "long_horizon") if len(r.goals) >= 2)
    env = vlnverse.envs.make(dataset=dataset, task="long_horizon", sensors=(), instruction_view="leg")
    obs, _ = env.reset(options={"episode_id": record.episode_id})
    assert obs["instruction"] == record.instruction.subgoals[0]
    obs, *_ = env.step(0)
    assert obs["instruction"] == record.instruction.subgoals[1]
    env.close()
    with pytest.raises(ConfigError, match="instruction_view"):
        vlnverse.envs.make(dataset=dataset, task="long_horizon", sensors=(), instruction_view="chunks")


def test_dialogue_asks_answers_and_budget(dataset):
    env = vlnverse.envs.make(dataset=dataset, split="val_unseen", task="dialogue", sensors=())
    base = env.unwrapped
    assert env.action_space.n == 5 and base.ask_action == 4
    obs, info = env.reset(seed=0)
    assert obs["oracle_answer"] == "" and info["questions_remaining"] == 3
    start = info["pose"].copy()
    answers = []
    for i in range(4):
        obs, reward, terminated, truncated, info = (base.ask("Which way is the target?") if i % 2
                                                    else env.step(base.ask_action))
        assert not terminated and not truncated and info["steps"] == i + 1
        assert np.allclose(info["pose"], start)
        assert env.observation_space["oracle_answer"].contains(obs["oracle_answer"])
        answers.append(obs["oracle_answer"])
    assert all(a and a != BUDGET_SPENT for a in answers[:3]) and answers[3] == BUDGET_SPENT
    assert (info["questions_asked"], info["questions_remaining"]) == (4, 0)
    assert "looking for" in answers[0]
    obs, *_ = env.step(1)
    assert obs["oracle_answer"] == ""  # the answer arrives once, in the next observation
    env.reset()
    assert env.reset(seed=0)[1]["questions_remaining"] == 3
    env.close()

    # continuous actions keep their space; asking goes through ask()
    velocity = vlnverse.envs.make(dataset=dataset, split="val_unseen", task="dialogue", sensors=(),
                                  action_space="velocity", question_budget=1)
    velocity.reset(seed=0)
    assert isinstance(velocity.action_space, gymnasium.spaces.Box)
    assert velocity.unwrapped.ask("Where now?")[0]["oracle_answer"]
    velocity.close()

    plain = vlnverse.envs.make(dataset=dataset, split="val_unseen", task="coarse", sensors=())
    plain.reset(seed=0)
    assert plain.action_space.n == 4
    with pytest.raises(InvalidActionError, match="no dialogue"):
        plain.unwrapped.ask("Where?")
    plain.close()


def test_reference_image_loaded_or_rendered(dataset, dataset_no_images):
    ds = EpisodeDataset.open(dataset)
    record = ds.episodes("val_unseen", "visual_reference")[0]
    env = vlnverse.envs.make(dataset=dataset, split="val_unseen", task="visual_reference", sensors=())
    obs, _ = env.reset(seed=0)
    with Image.open(ds.root / record.reference_image) as image:
        stored = np.asarray(image.convert("RGB"))
    assert obs["reference_image"].shape == stored.shape == (224, 224, 3)
    assert np.array_equal(obs["reference_image"], stored)
    env.close()

    plain = EpisodeDataset.open(dataset_no_images)
    assert plain.episodes("val_unseen", "visual_reference")[0].reference_image is None
    env = vlnverse.envs.make(dataset=dataset_no_images, split="val_unseen", task="visual_reference",
                             sensors=(), reference_image_size=(48, 64))
    obs, _ = env.reset(seed=0)
    image = obs["reference_image"]
    assert image.shape == (48, 64, 3) and image.dtype == np.uint8 and image.std() > 1.0
    assert env.observation_space.contains(obs)
    again, _ = env.reset(seed=0)
    assert np.array_equal(again["reference_image"], image)
    env.close()


def test_dialogue_with_an_llm_oracle_over_the_openai_client(dataset, monkeypatch):
    import httpx

    from tests.llm.endpoint import API_KEY_ENV, ChatEndpoint
    from vlnverse.llm.openai_client import OpenAIClient

    monkeypatch.setenv(API_KEY_ENV, "sk-test")
    endpoint = ChatEndpoint(answer=lambda body: "Turn around and go through the door behind you.")
    client = OpenAIClient("gpt-4o", base_url="http://llm.test/v1", api_key_env=API_KEY_ENV,
                          http_client=httpx.Client(transport=endpoint.transport()), sleep=lambda s: None)
    env = vlnverse.envs.make(dataset=dataset, split="val_unseen", task="dialogue", sensors=(), oracle_llm=client)
    try:
        obs, _ = env.reset(seed=0)
        obs, *_ = env.unwrapped.ask("Where is the target?")
        assert obs["oracle_answer"] == "Turn around and go through the door behind you."
        assert "Where is the target?" in json.dumps(endpoint.requests[0])
        # a refusal falls back to the privileged template answer
        endpoint.answer = lambda body: "I'm sorry, I cannot help with that."
        obs, *_ = env.unwrapped.ask("Where now?")
        assert obs["oracle_answer"] and "sorry" not in obs["oracle_answer"]
    finally:
        env.close()
