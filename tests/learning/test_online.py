"""Online fine-tuning: the oracle's waypoint choices reach the goal through a vector env,
and a short training run writes checkpoints, resumes and reports Table 7."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

pytest.importorskip("torch")

from vlnverse.agents.config import WaypointConfig  # noqa: E402
from vlnverse.learning.online.inputs import InputSpec  # noqa: E402
from vlnverse.learning.online.rollout import TeacherPolicy, make_vector_env, rollout  # noqa: E402
from vlnverse.learning.online.trainer import OnlineConfig, train_online  # noqa: E402


def small_spec() -> InputSpec:
    from vlnverse.agents.config import PanoramaConfig

    return InputSpec(PanoramaConfig(views=12, image_size=24), WaypointConfig(), max_tokens=40)


def teacher_rollout(dataset, kind: str, physics: str):
    from vlnverse.tasks.dataset import EpisodeDataset
    from vlnverse.tasks.formats.vocab import build_vocab

    episodes = EpisodeDataset.open(dataset).episodes("train")
    vocab = build_vocab(e.instruction.text for e in episodes)["stoi"]
    vec = make_vector_env(kind, 2, dataset=str(dataset), split="train", task=None, physics=physics,
                          spec=small_spec(), vocab=vocab, max_steps=35)
    try:
        return rollout(vec, TeacherPolicy(), [0, 1, 1], max_steps=35)  # sub-env 0 plays 2 in turn
    finally:
        vec.close()


@pytest.mark.parametrize("physics", ["tel_hop", "slide"])
def test_scripted_teacher_reaches_the_goals(fine_dataset, physics):
    stats = teacher_rollout(fine_dataset, "sync", physics)
    assert stats.episodes == 3 and stats.env_steps > 3
    assert stats.successes == 3



def recorded_steps(dataset, kind: str) -> list[tuple[dict, np.ndarray, np.ndarray]]:
    """Observations, teacher choices and episode ends of every step of a 2-env teacher rollout
    (sub-env 0 plays two episodes in turn)."""
    from vlnverse.tasks.dataset import EpisodeDataset
    from vlnverse.tasks.formats.vocab import build_vocab

    vocab = build_vocab(e.instruction.text for e in EpisodeDataset.open(dataset).episodes("train"))["stoi"]
    vec = make_vector_env(kind, 2, dataset=str(dataset), split="train", task=None, physics="tel_hop",
                          spec=small_spec(), vocab=vocab, max_steps=35)
    try:
        observations, info = vec.reset(options={"episode_queues": [[0, 1], [1]]})
        done = np.zeros(2, dtype=bool)
        steps = [(observations, info["teacher"], done.copy())]
        while not done.all() and len(steps) < 70:
            observations, _, _, _, info = vec.step(np.maximum(info["teacher"], 0))
            done |= info["episode_over"] & ~info["started"]
            steps.append((observations, info["teacher"], done.copy()))
        return steps
    finally:
        vec.close()


def test_async_sub_envs_observe_what_sync_ones_do(fine_dataset):
    """Worker processes (observations in shared memory) give the arrays of in-process envs."""
    sync, workers = recorded_steps(fine_dataset, "sync"), recorded_steps(fine_dataset, "async")
    assert len(sync) == len(workers) > 4 and sync[-1][2].all()
    for (a, teacher_a, done_a), (b, teacher_b, done_b) in zip(sync, workers, strict=True):
        assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
        assert np.array_equal(teacher_a, teacher_b) and np.array_equal(done_a, done_b)

@pytest.mark.slow
@pytest.mark.timeout(300)
def test_ray_sub_envs_roll_out_as_local_ones(fine_dataset):
    pytest.importorskip("ray", reason="ray is not installed (dev extra)")
    local, remote = teacher_rollout(fine_dataset, "sync", "tel_hop"), teacher_rollout(fine_dataset, "ray", "tel_hop")
    assert (remote.episodes, remote.successes, remote.env_steps) == (local.episodes, local.successes, local.env_steps)


@pytest.mark.slow
def test_online_training_resumes_and_reports_table7(fine_dataset, tmp_path):
    from vlnverse.learning.online.policy import WaypointBertConfig

    config = OnlineConfig(dataset=str(fine_dataset), out=str(tmp_path / "run"), iterations=2, num_envs=2, batch_size=3,
                          vector="sync", physics="tel_hop", max_traj_len=6, lr=1e-3, image_size=24,
                          eval_split="val_unseen", eval_episodes=1, eval_physics=("tel_hop",),
                          model=WaypointBertConfig(dim=32, layers=1, heads=2, channels=(4, 8, 8), max_tokens=40))
    first = train_online(config)
    assert [h["iteration"] for h in first["history"]] == [1, 2]
    assert all(h["loss"] > 0 and h["env_steps"] > 0 for h in first["history"])
    table = json.loads((tmp_path / "run" / "table7.json").read_text())
    assert set(table) == {"Zero-shot", "Fine-tuned (2 it.)"}
    assert all(np.isfinite(row["SR"]) and row["episodes"] == 1 for row in table.values())
    again = train_online(dataclasses.replace(config, iterations=3, eval_split=None))
    assert [h["iteration"] for h in again["history"]] == [1, 2, 3]
    assert again["history"][:2] == first["history"][:2]
    # resumed after iteration 2 (a kill leaves latest.pt there) = an uninterrupted 3-iteration run
    whole = train_online(dataclasses.replace(config, out=str(tmp_path / "whole"), iterations=3, eval_split=None))
    assert [h["loss"] for h in whole["history"]] == [h["loss"] for h in again["history"]]
    import torch

    resumed = torch.load(tmp_path / "run" / "checkpoints" / "iter_0003.pt", weights_only=False)["model"]
    uninterrupted = torch.load(tmp_path / "whole" / "checkpoints" / "iter_0003.pt", weights_only=False)["model"]
    assert resumed.keys() == uninterrupted.keys()
    assert all(torch.equal(resumed[k], uninterrupted[k]) for k in resumed)


@pytest.mark.slow
def test_fine_tuned_policy_reaches_its_training_goals(fine_dataset, tmp_path):
    """Online imitation learns what it is taught: trained on the two train episodes (the oracle
    always acting), the greedy policy alone then reaches both goals and stops there through
    the eval harness, which the initial policy does not (the labels' frame, the STOP index
    and the inputs agree between training and acting)."""
    from vlnverse.learning.online.policy import WaypointBertConfig

    config = OnlineConfig(dataset=str(fine_dataset), out=str(tmp_path / "run"), iterations=30, num_envs=2,
                          vector="sync", physics="tel_hop", max_traj_len=12, lr=3e-3, image_size=24,
                          schedule_ratio=1.0, checkpoint_every=30, eval_split="train", eval_physics=("tel_hop",),
                          model=WaypointBertConfig(dim=32, layers=1, heads=2, channels=(4, 8, 8), max_tokens=40),
                          waypoint_predictor="depth")  # sized for the depth predictor's candidates at 24 px
    summary = train_online(config)
    assert all(h["teacher_probability"] == 1.0 for h in summary["history"])
    zero_shot, fine_tuned = summary["table7"]["Zero-shot"], summary["table7"]["Fine-tuned (30 it.)"]
    assert zero_shot["episodes"] == fine_tuned["episodes"] == 2
    assert zero_shot["SR"] == 0.0 and fine_tuned["SR"] == 1.0
