"""The progress monitor: its target from an oracle walk's poses, its masked loss, a head that
learns it, and a training run whose checkpoint acts as an agent."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from vlnverse.errors import ConfigError  # noqa: E402
from vlnverse.learning.data import EpisodeTensors, collate, route_progress, vocabulary  # noqa: E402
from vlnverse.learning.imitation import ImitationConfig, progress_errors, train_imitation  # noqa: E402
from vlnverse.learning.models import ModelConfig, build_model  # noqa: E402
from vlnverse.learning.models.encoders import TeacherForced  # noqa: E402

from .test_imitation import TINY, config  # noqa: E402
from .test_models import TINY as TINY_SIZES  # noqa: E402
from .test_models import batch  # noqa: E402


def test_route_progress_is_the_share_of_the_walk_behind_each_pose():
    turn = math.radians(15)
    poses = np.array([[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, turn],  # a turn on the spot: no progress
                      [0.0, 0.25, 0.0, turn], [0.0, 0.5, 0.0, turn], [0.25, 0.5, 0.0, turn], [0.25, 0.5, 0.0, turn]])
    np.testing.assert_allclose(route_progress(poses), [0.0, 0.0, 1 / 3, 2 / 3, 1.0, 1.0], rtol=1e-6)
    assert route_progress(poses).dtype == np.float32
    np.testing.assert_array_equal(route_progress(np.zeros((3, 4))), [1.0, 1.0, 1.0])  # a walk that never moves


def test_progress_errors_leave_out_steps_without_a_target():
    estimate = torch.tensor([[0.5, 0.2, -0.1]])
    target = torch.tensor([[1.0, float("nan"), 0.0]])
    errors = progress_errors(estimate, target)
    torch.testing.assert_close(errors, torch.tensor([[0.25, 0.0, 0.01]]))
    estimate.requires_grad_(True)
    progress_errors(estimate, target).sum().backward()
    assert torch.isfinite(estimate.grad).all() and estimate.grad[0, 1] == 0


def test_oracle_walks_carry_targets_and_other_walks_none(train_frames):
    from vlnverse.learning.frames import FrameStore

    frames_config, _ = train_frames
    store = FrameStore(frames_config.out, "train")
    vocab = vocabulary(store)
    led, unled = EpisodeTensors(store, vocab, 80)[0], EpisodeTensors(store, vocab, 80, oracle_walks=False)[0]
    assert led["progress"].shape == led["actions"].shape and led["progress"][-1] == 1.0
    assert bool((led["progress"][1:] >= led["progress"][:-1]).all())  # an oracle never walks back
    assert torch.isnan(unled["progress"]).all()
    padded = collate([led, EpisodeTensors(store, vocab, 80)[1]])
    assert padded["progress"].shape == padded["actions"].shape


@pytest.mark.parametrize("kind", ["seq2seq", "cma"])
def test_a_policy_with_the_monitor_acts_as_without_and_learns_the_targets(kind):
    data = batch(b=2, t=6, seed=3)
    torch.manual_seed(0)
    plain = build_model(ModelConfig(kind=kind, **TINY_SIZES))
    torch.manual_seed(0)
    monitored = build_model(ModelConfig(kind=kind, progress_monitor=True, **TINY_SIZES))
    assert TeacherForced(plain)(data["tokens"], data["rgb"], data["depth"], data["prev_actions"]).progress is None
    # the head is built last: the other weights start as without it, and acting ignores it
    shared = plain.state_dict()
    assert {k: v for k, v in monitored.state_dict().items() if not k.startswith("progress_head.")}.keys() == shared.keys()
    assert all(torch.equal(monitored.state_dict()[k], v) for k, v in shared.items())

    target = torch.linspace(0, 1, 6).expand(2, 6)
    runner = TeacherForced(monitored)
    optimizer = torch.optim.AdamW(monitored.parameters(), lr=3e-3)
    errors = []
    for _ in range(100):
        out = runner(data["tokens"], data["rgb"], data["depth"], data["prev_actions"])
        loss = progress_errors(out.progress, target).mean()
        errors.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert out.progress.shape == (2, 6) and errors[-1] < 0.01 < errors[0]


def test_the_monitor_is_refused_for_gama_and_a_negative_weight():
    with pytest.raises(ConfigError, match="not gama"):
        ModelConfig(kind="gama", progress_monitor=True)
    with pytest.raises(ConfigError, match="not gama"):
        ImitationConfig(kind="gama", dataset="d", out="o", progress_weight=1.0)
    with pytest.raises(ConfigError, match="progress_weight must be >= 0"):
        ImitationConfig(kind="cma", dataset="d", out="o", progress_weight=-1.0)


def test_a_run_without_the_monitor_keeps_its_fingerprint():
    """The fingerprints the code before the monitor gave these configs: their runs still resume."""
    base = ImitationConfig(kind="cma", dataset="D", out="O", epochs=2, batch_size=1, lr=1e-3, model=TINY)
    assert base.fingerprint() == "bd043e4c2888011b"
    assert dataclasses.replace(base, dagger_rounds=1).fingerprint() == "f631c8f972793547"
    assert dataclasses.replace(base, progress_weight=1.0).fingerprint() != base.fingerprint()


@pytest.mark.slow
def test_a_monitored_run_trains_and_its_checkpoint_acts(train_frames, fine_dataset, tmp_path, capsys):
    from tests.cli_errors import one_error_line
    from vlnverse.cli import main
    from vlnverse.learning.agent import load_policy
    from vlnverse.learning.imitation import best_epoch

    run = train_imitation(config(train_frames, fine_dataset, tmp_path / "run", epochs=1, progress_weight=1.0,
                                 val_split="val_unseen", val_episodes=1, max_steps=20))
    plain = train_imitation(config(train_frames, fine_dataset, tmp_path / "plain", epochs=1))
    assert run.history[0].loss != plain.history[0].loss  # the progress error joined the loss
    model, state = load_policy(best_epoch(run.history).checkpoint)
    assert state["model_config"]["progress_monitor"] is True and "progress_head.weight" in state["model"]
    assert run.history[0].val_sr is not None  # validation acted with it through the eval harness
    capsys.readouterr()
    assert main(["train", "cma", "--dataset", str(fine_dataset), "--out", str(tmp_path / "bad"),
                 "--progress-monitor", "-1", "--no-progress"]) != 0
    assert "progress_weight must be >= 0" in one_error_line(capsys.readouterr().err)
    assert not (tmp_path / "bad").exists()
