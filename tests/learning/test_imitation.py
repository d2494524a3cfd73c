"""Imitation training: a run killed after an epoch and re-run equals an uninterrupted one;
its agent.yaml evaluates through the harness; the CLI trains with a preset."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from vlnverse.learning.imitation import ImitationConfig, train_imitation  # noqa: E402
from vlnverse.learning.models import ModelConfig  # noqa: E402

TINY = ModelConfig(embedding_dim=8, instruction_hidden=8, rgb_dim=16, depth_dim=8, hidden=32, action_embedding=8,
                   attention_dim=16, channels=(4, 8, 8))


class Killed(Exception):
    pass


def config(train_frames, fine_dataset, out, **changes) -> ImitationConfig:
    frames_config, _ = train_frames
    base = ImitationConfig(kind="cma", dataset=str(fine_dataset), out=str(out), frames=frames_config.out,
                           epochs=2, batch_size=1, lr=1e-3, rgb_size=32, depth_size=32, val_split=None, model=TINY)
    return dataclasses.replace(base, **changes)


def test_resume_after_kill_equals_uninterrupted(train_frames, fine_dataset, tmp_path):
    whole = train_imitation(config(train_frames, fine_dataset, tmp_path / "whole"))

    def kill(stats):
        if stats.epoch == 1:
            raise Killed

    interrupted = config(train_frames, fine_dataset, tmp_path / "killed")
    with pytest.raises(Killed):
        train_imitation(interrupted, on_epoch_end=kill)
    resumed = train_imitation(interrupted)
    assert [e.epoch for e in resumed.history] == [1, 2]
    assert [e.loss for e in resumed.history] == [e.loss for e in whole.history]
    a = torch.load(whole.history[-1].checkpoint, weights_only=False)["model"]
    b = torch.load(resumed.history[-1].checkpoint, weights_only=False)["model"]
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert (tmp_path / "killed" / "curves.png").stat().st_size > 0
    assert any((tmp_path / "killed" / "tb").iterdir())
    with pytest.raises(Exception, match="another configuration"):
        train_imitation(dataclasses.replace(interrupted, lr=5e-4))


@pytest.mark.slow
def test_cli_trains_validates_and_agent_yaml_evaluates(train_frames, fine_dataset, tmp_path, capsys):
    from vlnverse.cli import main

    frames_config, _ = train_frames
    out = tmp_path / "run"
    code = main(["train", "seq2seq", "--dataset", str(fine_dataset), "--out", str(out), "--epochs", "1",
                 "--val-split", "val_unseen", "--val-episodes", "1", "--no-progress", "--json"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["best_epoch"] == 1 and summary["history"][0]["val_sr"] is not None
    code = main(["eval", "--dataset", str(fine_dataset), "--split", "val_unseen", "--agent", "seq2seq",
                 "--agent-config", str(out / "agent.yaml"), "--physics", "tel_hop", "--episodes", "1",
                 "--max-steps", "20", "--plots", "0", "--out", str(tmp_path / "eval"), "--json"])
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["summary"]["episodes"] == 1 and result["summary"]["errors"]["count"] == 0


def test_dagger_round_aggregates_oracle_labelled_policy_walks(train_frames, fine_dataset, tmp_path):
    from vlnverse.learning.frames import FrameStore

    frames_config, _ = train_frames
    run = train_imitation(config(train_frames, fine_dataset, tmp_path / "dagger", epochs=1, dagger_rounds=1,
                                 dagger_p=0.5, max_steps=12, kind="seq2seq"))
    assert [e.epoch for e in run.history] == [1, 2]
    collected = FrameStore(tmp_path / "dagger" / "dagger_01", "train")
    assert not (Path(frames_config.out) / "dagger_01").exists()  # the shared frames stay as they were
    record = json.loads((collected.root / "train" / "prerender.json").read_text())
    assert record["config"]["beta"] == 0.5 and record["config"]["policy"] == run.history[0].checkpoint
    episode = collected.episode(0)
    assert len(episode["actions"]) == len(episode["rgb"]) <= 12
    assert set(episode["actions"]) <= {0, 1, 2, 3}
    assert run.history[1].samples == run.history[0].samples + sum(e.length for e in collected.episodes)
    assert record["config"]["physics"] == json.loads(
        (Path(frames_config.out) / "train" / "prerender.json").read_text())["config"]["physics"]

    # a second round extends the finished run in its folder (one more walk and epoch), a
    # teacher-forced-only run of the same settings is another training
    extended = config(train_frames, fine_dataset, tmp_path / "dagger", epochs=1, dagger_rounds=2, dagger_p=0.5,
                      max_steps=12, kind="seq2seq")
    assert extended.fingerprint() == config(train_frames, fine_dataset, tmp_path, epochs=1, dagger_rounds=1,
                                            dagger_p=0.5, max_steps=12, kind="seq2seq").fingerprint()
    assert extended.fingerprint() != dataclasses.replace(extended, dagger_rounds=0).fingerprint()
    longer = train_imitation(extended)
    assert [e.epoch for e in longer.history] == [1, 2, 3]
    assert longer.history[:2] == run.history
    second = json.loads((tmp_path / "dagger" / "dagger_02" / "train" / "prerender.json").read_text())
    assert second["config"]["beta"] == 0.25 and second["config"]["policy"] == run.history[1].checkpoint


def _ddp_rank(rank: int, port: int, run: ImitationConfig) -> None:
    import os

    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port))
    torch.set_num_threads(1)
    train_imitation(run)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_ddp_on_two_cpu_processes_equals_one_process(train_frames, fine_dataset, tmp_path):
    """torchrun's two-process DDP (gloo) trains the weights one process trains on the same global batches."""
    import multiprocessing
    import socket

    from vlnverse.learning.frames import FrameStore

    episodes = len(FrameStore(train_frames[0].out, "train"))
    assert episodes >= 2
    one = train_imitation(config(train_frames, fine_dataset, tmp_path / "one", batch_size=episodes))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    run = config(train_frames, fine_dataset, tmp_path / "ddp", batch_size=episodes)
    context = multiprocessing.get_context("spawn")
    ranks = [context.Process(target=_ddp_rank, args=(rank, port, run)) for rank in range(2)]
    for process in ranks:
        process.start()
    for process in ranks:
        process.join(240)
    assert [p.exitcode for p in ranks] == [0, 0]
    history = json.loads((tmp_path / "ddp" / "history.json").read_text())
    assert [row["epoch"] for row in history] == [1, 2]
    assert [row["loss"] for row in history] == pytest.approx([e.loss for e in one.history], rel=1e-5)
    a = torch.load(one.history[-1].checkpoint, weights_only=False)["model"]
    b = torch.load(history[-1]["checkpoint"], weights_only=False)["model"]
    # float sums in another order; attention key biases (zero gradient in theory) drift most, ~3e-6
    # after AdamW's normalisation, while one step of lr 1e-3 in the wrong direction would be ~1e-3
    assert a.keys() == b.keys() and all(torch.allclose(a[k], b[k], atol=1e-5) for k in a)


@pytest.mark.slow
@pytest.mark.parametrize("threads, expected", [(None, 2), (1, 1)])
def test_training_keeps_its_threads_after_each_validation(threads, expected, train_frames, fine_dataset, tmp_path):
    """``threads=None`` trains on torch's threads as training started, every epoch, though
    validation's agent sets one thread; an explicit count is kept the same way."""
    seen = []
    run = config(train_frames, fine_dataset, tmp_path / "run", val_split="val_unseen", val_episodes=1, max_steps=5,
                 threads=threads)
    torch.set_num_threads(2)
    try:
        history = train_imitation(run, progress=lambda phase, done, total: seen.append((done, torch.get_num_threads())))
    finally:
        torch.set_num_threads(1)
    assert history.history[0].val_sr is not None  # epoch 1 was validated before epoch 2's batches
    batches = len(seen) // 2
    assert [done for done, _ in seen] == [*range(1, batches + 1)] * 2
    assert {used for _, used in seen} == {expected}


def test_gama_trains_and_validates_with_the_same_command(train_frames, fine_dataset, tmp_path):
    result = train_imitation(config(train_frames, fine_dataset, tmp_path / "gama", kind="gama", epochs=1,
                                    val_split="val_unseen", val_episodes=1,
                                    model=dataclasses.replace(TINY, experts=3)))
    (epoch,) = result.history
    assert epoch.loss > 0 and epoch.val_sr is not None  # validated by `vlnverse eval --agent gama`
    state = torch.load(epoch.checkpoint, weights_only=False)
    assert state["kind"] == "gama" and any(k.startswith("residual_moe.") for k in state["model"])


def test_amp_trains_in_bfloat16_where_this_cpu_can_and_is_refused_before_any_output_where_not(
        train_frames, fine_dataset, tmp_path):
    """--amp on the CPU runs the same training step as on a GPU with bfloat16 (autocast, loss
    scaling disabled): the epoch's loss moves by bfloat16 rounding, not more. On a CPU without
    bfloat16 kernels for the model's layers the run is refused before it writes anything."""
    from vlnverse.errors import ConfigError
    from vlnverse.learning.models import build_model
    from vlnverse.learning.torch_support import bfloat16_failure

    mixed_run = config(train_frames, fine_dataset, tmp_path / "amp", epochs=1, amp=True)
    if bfloat16_failure(build_model(dataclasses.replace(TINY, kind="cma"))) is not None:
        with pytest.raises(ConfigError, match="this CPU cannot train the model in bfloat16: LSTM"):
            train_imitation(mixed_run)
        assert not (tmp_path / "amp").exists()
        return
    full = train_imitation(config(train_frames, fine_dataset, tmp_path / "fp32", epochs=1))
    mixed = train_imitation(mixed_run)
    assert mixed.history[0].loss != full.history[0].loss  # the forward really ran in bfloat16
    assert mixed.history[0].loss == pytest.approx(full.history[0].loss, rel=0.01)
    state = torch.load(tmp_path / "amp" / "checkpoints" / "latest.pt", weights_only=False)
    assert "scaler" not in state and all(v.dtype == torch.float32 for v in state["model"].values() if v.is_floating_point())


_AMP_PROBE_SCRIPT = """
import dataclasses, json, sys
import torch
torch.set_num_threads(1)
from vlnverse.learning import torch_support
from vlnverse.learning.imitation import ImitationConfig, train_imitation
from vlnverse.learning.models import ModelConfig, build_model
tiny = ModelConfig(**json.loads(sys.argv[1]))
run = ImitationConfig(**json.loads(sys.argv[2]), model=tiny)
failure = torch_support.bfloat16_failure(build_model(dataclasses.replace(tiny, kind="cma")))
torch_support.require_autocast_support = lambda model, device: None  # train as if unchecked
try:
    train_imitation(run)
    trained = True
except RuntimeError:
    trained = False
print(json.dumps({"failure": failure, "trained": trained}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("isa", [None, "AVX2"])
def test_bfloat16_probe_predicts_whether_amp_training_runs_on_this_cpu(isa, train_frames, fine_dataset, tmp_path):
    """The probe says "cannot" exactly where an unchecked --amp epoch dies in oneDNN: on this CPU,
    and with oneDNN limited to AVX2 (where, on the CPUs seen so far, LSTMs have no bfloat16 kernel)."""
    import os
    import subprocess
    import sys

    run = dataclasses.asdict(config(train_frames, fine_dataset, tmp_path / "amp", epochs=1, amp=True))
    run.pop("model")
    tiny = dataclasses.asdict(TINY)
    env = dict(os.environ, **({"ONEDNN_MAX_CPU_ISA": isa} if isa else {}))
    if not isa:
        env.pop("ONEDNN_MAX_CPU_ISA", None)
    done = subprocess.run([sys.executable, "-c", _AMP_PROBE_SCRIPT, json.dumps(tiny), json.dumps(run, default=str)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert (result["failure"] is None) == result["trained"], result


def test_cli_refuses_amp_in_one_line_where_the_cpu_lacks_bfloat16_kernels(fine_dataset, tmp_path, capsys, monkeypatch):
    from vlnverse.cli import main
    from vlnverse.learning import torch_support

    monkeypatch.setattr(torch_support, "bfloat16_failure", lambda model: "LSTM (no bfloat16 primitive)")
    code = main(["train", "cma", "--dataset", str(fine_dataset), "--out", str(tmp_path / "run"), "--amp",
                 "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "--amp: this CPU cannot train the model in bfloat16: LSTM" in err and "without --amp" in err
    assert not (tmp_path / "run").exists()


def test_stalled_counts_epochs_without_a_better_validation():
    from vlnverse.learning.imitation import EpochStats, stalled

    def history(*srs):
        return [EpochStats(i + 1, 1.0, 0.5, 10, 1.0, val_sr=sr, val_spl=sr / 2) for i, sr in enumerate(srs)]

    assert not stalled(history(0.2, 0.1), None)
    assert not stalled(history(0.2, 0.1), 2)  # two epochs: nothing before the window to beat
    assert stalled(history(0.2, 0.1, 0.2), 2)  # a tie is no improvement
    assert not stalled(history(0.2, 0.1, 0.3), 2)
    assert stalled(history(0.0, 0.2, 0.1), 1) and not stalled(history(0.0, 0.1, 0.2), 1)


@pytest.mark.slow
def test_patience_stops_training_on_a_stalled_validation_and_a_rerun_keeps_it_stopped(
        train_frames, fine_dataset, tmp_path, monkeypatch):
    import vlnverse.learning.imitation as imitation

    scripted = iter([(0.5, 0.4), (0.4, 0.4), (0.5, 0.3), (0.9, 0.9), (0.9, 0.9), (0.9, 0.9)])
    monkeypatch.setattr(imitation, "validate", lambda config, path, epoch: next(scripted))
    run = config(train_frames, fine_dataset, tmp_path / "run", epochs=6, patience=2, val_split="val_unseen")
    result = train_imitation(run)
    assert [e.epoch for e in result.history] == [1, 2, 3] and result.stopped_early
    assert result.best.epoch == 1
    assert "epoch_001.pt" in (tmp_path / "run" / "agent.yaml").read_text()
    again = train_imitation(run)  # resuming a stopped run trains nothing more
    assert [e.epoch for e in again.history] == [1, 2, 3] and again.stopped_early
    more = train_imitation(dataclasses.replace(run, patience=None))  # patience is not part of the weights
    assert [e.epoch for e in more.history] == [1, 2, 3, 4, 5, 6] and not more.stopped_early
    assert more.best.epoch == 6


def test_fine_and_coarse_train_in_one_run(tmp_path_factory):
    from tests.bundled import bundled_dataset
    from vlnverse.errors import DatasetError
    from vlnverse.learning.frames import FrameStore
    from vlnverse.learning.prerender import PrerenderConfig, prerender
    from vlnverse.tasks.dataset import EpisodeDataset

    dataset = bundled_dataset(tmp_path_factory.mktemp("both"), tasks=("fine", "coarse", "visual_reference"),
                              per_scene=2)
    episodes = EpisodeDataset.open(str(dataset))
    wanted = episodes.episodes("train", "fine,coarse")
    assert {e.task for e in wanted} == {"fine", "coarse"}
    assert len(episodes.episodes("val_unseen,test", "fine")) == len(episodes.episodes("val_unseen", "fine")) + len(
        episodes.episodes("test", "fine"))
    with pytest.raises(DatasetError, match="unknown task 'fin'"):
        episodes.episodes("train", "fine,fin")
    frames = PrerenderConfig(dataset=str(dataset), out=str(tmp_path_factory.mktemp("frames")), split="train",
                             task="fine,coarse", rgb_size=16, depth_size=16)
    prerender(frames)
    assert sorted(e.episode_id for e in FrameStore(frames.out, "train").episodes) == sorted(
        e.episode_id for e in wanted)


@pytest.mark.slow
@pytest.mark.parametrize("kind, compress", [("cma", False), ("gama", True)])
def test_padded_batches_learn_what_the_code_before_the_speed_up_learned(kind, compress, train_frames, fine_dataset,
                                                                        tmp_path):
    """Batches of 3 padded episodes, 3 epochs at a fixed seed: the per-epoch loss, step accuracy
    and samples recorded with the code before padding frames were left out of the encoders
    (``imitation_losses.json``), read from raw chunks (the default) or from .npz ones."""
    from pathlib import Path

    from vlnverse.learning.prerender import prerender

    frames_config, _ = train_frames
    frames = dataclasses.replace(frames_config, out=str(tmp_path / "raw"), compress=False)
    if not compress:
        prerender(frames)
    golden = json.loads((Path(__file__).parent / "imitation_losses.json").read_text())[kind]
    run = config(train_frames, fine_dataset, tmp_path / "run", kind=kind, epochs=3, batch_size=3,
                 frames=frames_config.out if compress else frames.out)
    history = train_imitation(run).history
    assert [e.samples for e in history] == [row[2] for row in golden]
    assert [e.loss for e in history] == pytest.approx([row[0] for row in golden], rel=1e-4)
    assert [e.accuracy for e in history] == pytest.approx([row[1] for row in golden], abs=0.01)


@pytest.mark.slow
def test_training_with_an_augmentation_set_sees_its_frames_and_says_so(train_frames, fine_dataset, augmentation,
                                                                      tmp_path):
    _, prerendered = train_frames
    folder, facts = augmentation
    run = train_imitation(config(train_frames, fine_dataset, tmp_path / "aug", epochs=1, augment=(str(folder),)))
    assert run.history[0].samples == prerendered.frames + facts["frames"]["count"]
    state = torch.load(run.history[0].checkpoint, weights_only=False)
    data = state["training_data"]
    assert [(a["track"], a["homes"], a["episodes"]) for a in data["augment"]] == [("mini", 1, sum(facts["episodes"].values()))]
    assert data["split"] == "train"
    from vlnverse.eval.running.harness import EvalConfig, evaluate
    from vlnverse.release.table3 import load_runs, table3_markdown

    evaluate(EvalConfig(dataset=str(fine_dataset), out=str(tmp_path / "eval"), agent="cma", split="val_unseen",
                        agent_config={"checkpoint": run.history[0].checkpoint}, physics=("tel_hop",), episodes=1,
                        max_steps=5, plots=0, bootstrap=10))
    recorded = json.loads((tmp_path / "eval" / "run.json").read_text(encoding="utf-8"))["run"]
    assert recorded["label"] == "cma +aug" and recorded["training_data"] == data
    runs = load_runs([f"CMA={tmp_path / 'eval'}"])
    assert runs[0][0] == "CMA +aug"
    # verify re-runs the checkpoint and derives the '+aug' from it: a run that drops it fails
    from tests.eval.verify_helpers import forge
    from vlnverse.eval.verification.verify import verify_run

    checkpoint = {"checkpoint": run.history[0].checkpoint}
    honest = verify_run(tmp_path / "eval", dataset=fine_dataset, rerun=True, checkpoints=checkpoint)
    assert honest.ok, honest.mismatches
    assert any("what the model trained on" in line for line in honest.reported)

    def plain_row(recorded):
        recorded.update(label="cma")
        del recorded["training_data"]

    forged = forge(tmp_path / "eval", tmp_path / "forged", run=plain_row)
    report = verify_run(forged, dataset=fine_dataset, rerun=True, checkpoints=checkpoint)
    assert not report.ok and "is not the re-run checkpoint's" in report.checks["rerun"]
    table = table3_markdown(runs)
    assert table.index("Trained with augmentation homes") < table.index("| CMA +aug |")
    plain = config(train_frames, fine_dataset, tmp_path / "plain", epochs=1)
    assert plain.fingerprint() != dataclasses.replace(plain, augment=(str(folder),)).fingerprint()
    with pytest.raises(Exception, match="another configuration"):
        train_imitation(dataclasses.replace(plain, out=str(tmp_path / "aug")))


def test_augmentation_frames_of_another_resolution_or_a_missing_set_are_refused(train_frames, fine_dataset,
                                                                              augmentation, tmp_path):
    import shutil

    from vlnverse.errors import ConfigError
    from vlnverse.learning.prerender import prerender
    from vlnverse.release.augment import AugmentConfig

    folder, _ = augmentation
    other = tmp_path / "AUG16"
    shutil.copytree(folder, other, ignore=shutil.ignore_patterns("frames"))
    prerender(AugmentConfig(track="mini", out=str(other), homes=1, rgb_size=16, depth_size=16).prerender_config())
    with pytest.raises(ConfigError, match="holds frames stored as"):
        train_imitation(config(train_frames, fine_dataset, tmp_path / "bad", epochs=1, augment=(str(other),)))
    with pytest.raises(ConfigError, match="not an augmentation set"):
        train_imitation(config(train_frames, fine_dataset, tmp_path / "none", epochs=1, augment=(str(tmp_path),)))
