"""``vlnverse train --procs N``: data-parallel training in processes the command spawns itself
learns what one process learns (the same per-epoch losses, a last batch smaller than the
processes included); bad counts are refused in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from tests.cli_errors import one_error_line  # noqa: E402
from vlnverse.learning.distributed import GlobalBatches, Group, is_ghost  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def test_global_batches_cover_the_one_process_epoch_with_ghosts_for_empty_shares():
    one = list(GlobalBatches(9, 4, 7, Group()))
    shares = [list(GlobalBatches(9, 4, 7, Group(rank, 2))) for rank in range(2)]
    assert [len(s) for s in shares] == [len(one)] * 2 == [3, 3]
    for step, batch in enumerate(one):
        a, b = shares[0][step], shares[1][step]
        assert sorted(i for i in a + b if not is_ghost(i)) == sorted(batch)
    # the last global batch holds one episode: rank 1 steps on a ghost of it
    assert shares[0][-1] == one[-1] and len(shares[1][-1]) == 1 and is_ghost(shares[1][-1][0])


def test_a_batch_is_shared_out_by_frames_so_no_process_waits_long_for_another():
    from vlnverse.learning.distributed import shares

    lengths = [12, 90, 40, 45, 50, 8, 100, 30]
    assert shares(list(range(8)), lengths, 2) == [[0, 3, 6, 7], [1, 2, 4, 5]]  # 187 and 188 frames
    assert shares(list(range(8)), None, 2) == [[0, 2, 4, 6], [1, 3, 5, 7]]  # 202 and 173: rank 1 waits
    assert shares([3, 0, 2, 1], lengths, 2) == [[1], [3, 0, 2]]  # 90 and 97, each share in batch order
    one = list(GlobalBatches(8, 4, 3, Group(), lengths))
    two = [list(GlobalBatches(8, 4, 3, Group(rank, 2), lengths)) for rank in range(2)]
    assert [sorted(a + b) for a, b in zip(*two, strict=True)] == [sorted(batch) for batch in one]


def test_a_ghost_episode_is_collated_without_weight(train_frames):
    from vlnverse.learning.data import EpisodeTensors, WithGhosts, collate, vocabulary
    from vlnverse.learning.distributed import ghost
    from vlnverse.learning.frames import FrameStore

    store = FrameStore(train_frames[0].out, "train")
    data = WithGhosts(EpisodeTensors(store, vocabulary(store), 80))
    real, phantom = collate([data[0]], 2.0), collate([data[ghost(0)]], 2.0)
    assert torch.equal(real["rgb"], phantom["rgb"]) and torch.equal(real["mask"], phantom["mask"])
    assert float(real["weights"].sum()) > 0 and float(phantom["weights"].sum()) == 0


def _command(fine_dataset: Path, frames: str, out: Path, *options: str) -> list[str]:
    return [sys.executable, "-m", "vlnverse", "train", "cma", "--dataset", str(fine_dataset), "--frames", frames,
            "--out", str(out), "--preset", "smoke", "--epochs", "2", "--val-split", "none", "--no-progress", "--json",
            *options]


def _train(fine_dataset: Path, frames: str, out: Path, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run(_command(fine_dataset, frames, out, *options), capture_output=True, text=True, timeout=240,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_two_and_three_spawned_processes_learn_the_one_process_curve(train_frames, fine_dataset, tmp_path):
    """The split's episodes make one global batch: 2 processes take one each; with 3 (and a
    batch of 3, the same single batch in one process) the third steps on a ghost."""
    from vlnverse.learning.frames import FrameStore

    frames = train_frames[0].out
    store = FrameStore(frames, "train")
    assert len(store) == 2
    runs = {procs: subprocess.Popen(_command(fine_dataset, frames, tmp_path / f"procs{procs}", "--procs", str(procs),
                                             "--threads", "1", "--batch-size", str(procs)),
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    env={**os.environ, "PYTHONPATH": str(ROOT)}) for procs in (2, 3)}
    single = _train(fine_dataset, frames, tmp_path / "procs1", "--procs", "1", "--threads", "1", "--batch-size", "2")
    assert single.returncode == 0, single.stderr
    summaries = {1: json.loads(single.stdout)}
    for procs, process in runs.items():
        out, err = process.communicate(timeout=240)
        assert process.returncode == 0, err
        summaries[procs] = json.loads(out)
    assert {procs: summary["processes"] for procs, summary in summaries.items()} == {1: 1, 2: 2, 3: 3}
    history = {procs: summary["history"] for procs, summary in summaries.items()}
    one = history[1]
    assert one[1]["loss"] != one[0]["loss"]  # the second epoch trained on the first's weights
    weights = torch.load(one[-1]["checkpoint"], weights_only=False)["model"]
    for procs in (2, 3):
        rows = history[procs]
        assert [row["samples"] for row in rows] == [sum(e.length for e in store.episodes)] * 2
        assert [row["accuracy"] for row in rows] == pytest.approx([row["accuracy"] for row in one], abs=1e-9)
        assert [row["loss"] for row in rows] == pytest.approx([row["loss"] for row in one], rel=1e-5)
        other = torch.load(rows[-1]["checkpoint"], weights_only=False)["model"]
        assert all(torch.allclose(weights[k], other[k], atol=1e-5) for k in weights)


@pytest.mark.parametrize("procs", ["0", "5"])
def test_a_process_count_outside_one_to_the_batch_size_is_refused(procs):
    from vlnverse.cli import build_parser
    from vlnverse.cli.train import build_config
    from vlnverse.errors import ConfigError

    args = build_parser().parse_args(["train", "cma", "--dataset", "DS", "--out", "RUN", "--procs", procs])
    with pytest.raises(ConfigError, match=f"procs must be an integer from 1 to the batch size 4, got {procs}"):
        build_config(args)


def test_a_process_count_that_is_no_number_is_one_error_line_before_anything_is_written(fine_dataset, tmp_path):
    done = _train(fine_dataset, "unused", tmp_path / "run", "--procs", "two")
    assert done.returncode != 0
    assert "--procs takes a number or 'auto', got 'two'" in one_error_line(done.stderr)
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_bad_input_met_by_every_rank_is_rank_zeros_one_error_line(fine_dataset, tmp_path):
    done = _train(fine_dataset, str(tmp_path / "missing"), tmp_path / "run", "--procs", "2", "--batch-size", "2")
    assert done.returncode != 0
    assert "holds no pre-rendered split 'train'" in one_error_line(done.stderr)  # no traceback of rank 1 either


def rank_one_dies(place) -> None:
    """A rank 1 that dies before it joins the group, which rank 0 then waits for."""
    from vlnverse.learning.distributed import process_group

    if place.rank == 1:
        raise RuntimeError("rank 1 broke")
    with process_group("cpu", place) as (group, _):
        group.barrier()


@pytest.mark.slow
def test_a_spawned_rank_that_dies_ends_the_run_in_seconds_not_at_the_group_timeout():
    import time

    script = ("from vlnverse.learning.distributed import spawn_ranks\n"
              "from tests.learning.test_procs import rank_one_dies\n"
              "spawn_ranks(2, 1, rank_one_dies)\n")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 1 and time.monotonic() - started < 100
    assert "RuntimeError: rank 1 broke" in done.stderr  # the dead rank's own traceback, then rank 0's line
    assert one_error_line(done.stderr.split("RuntimeError: rank 1 broke", 1)[1]).startswith(
        "error: training process vlnverse-rank-1 (exit status 1) ended while the others waited for it")
