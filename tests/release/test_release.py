"""``vlnverse release build`` at --scale 0.02: end to end, the card against the data, a build
killed and finished on Ray giving the bytes of an uninterrupted local build, and Ray
retrying a unit whose worker died. One Ray instance serves the module (its start is slow)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.cli_errors import one_error_line
from vlnverse.cli import main
from vlnverse.parallel import run_units
from vlnverse.release import ReleaseConfig, build_release
from vlnverse.tasks.storage import iter_episodes

ROOT = Path(__file__).resolve().parents[2]
OPTIONS = {"scale": 0.02, "per_scene": 6}
CLI_OPTIONS = ["--scale", "0.02", "--per-scene", "6"]


@pytest.fixture(scope="module")
def local_build(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("release") / "local"
    build_release(ReleaseConfig(out=str(out), workers=2, **OPTIONS))
    return out


@pytest.fixture(scope="module")
def ray_instance():
    ray = pytest.importorskip("ray", reason="ray is not installed (dev extra)")
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    yield ray
    ray.shutdown()


def _card_rows(card: str) -> dict[tuple[str, str], int]:
    from vlnverse.tasks.report import TASK_LABELS

    labels = {label: task for task, label in TASK_LABELS.items()}  # every registered family, PointNav included
    rows = {}
    for line in card.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) >= 4 and cells[0] in labels:
            rows[(labels[cells[0]], cells[1])] = int(cells[2])
    return rows


@pytest.mark.slow
def test_the_card_states_the_counts_of_the_data(local_build):
    counted = Counter((e.task, e.split) for shard in sorted((local_build / "dataset" / "shards").glob("*.jsonl.gz"))
                      for e in iter_episodes(shard))
    card = (local_build / "README.md").read_text(encoding="utf-8")
    rows = _card_rows(card)
    assert {k: v for k, v in rows.items() if v} == dict(counted)
    assert f"({sum(counted.values())} episodes)" in card
    splits = json.loads((local_build / "scenes" / "splits.json").read_text())
    assert {k: len(v) for k, v in splits.items() if k != "val_seen"} == {"train": 3, "val_unseen": 1, "test": 1}
    assert "5 procedural homes (3 train / 1 val-unseen / 1 test)" in card
    assert {"fine", "coarse", "visual_reference", "long_horizon", "dialogue", "objectnav", "eqa"} <= {t for t, _ in counted}
    listed = dict(line.split("  ", 1)[::-1] for line in (local_build / "SHA256SUMS").read_text().splitlines())
    assert "README.md" in listed and "build.json" not in listed and "dataset/report/paths.png" in listed
    assert len([p for p in listed if p.startswith("dataset/images/")]) == 5 * 6
    log = json.loads((local_build / "build.json").read_text())
    assert set(log["stages"]) == {"scenes", "episodes", "report", "card"}
    units = [v["episodes"] for v in log["workers"].values() if "episodes" in v]
    assert sum(u["units"] for u in units) == 5 and all(u["peak_mb"] >= u["first_mb"] > 50 for u in units)  # MiB
    assert re.search(r"vlnverse release build --out DIR --scale 0.02 --seed 0 --per-scene 6", card)


@pytest.mark.slow
def test_a_killed_build_finished_on_ray_is_the_uninterrupted_local_build(local_build, ray_instance, tmp_path):
    out = tmp_path / "resumed"
    process = subprocess.Popen([sys.executable, "-m", "vlnverse", "release", "build", "--out", str(out),
                                *CLI_OPTIONS, "--no-progress"], cwd=ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while process.poll() is None and time.monotonic() < deadline and not (out / "scenes" / "scene_0000" / "meta.json").is_file():
        time.sleep(0.05)
    assert process.poll() is None, process.stderr.read().decode()
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert not (out / "SHA256SUMS").exists()
    summary = build_release(ReleaseConfig(out=str(out), workers=2, executor="ray", **OPTIONS))
    assert (out / "SHA256SUMS").read_bytes() == (local_build / "SHA256SUMS").read_bytes()
    assert summary.log.runs == 2
    ray_workers = [w for w, stages in summary.log.workers.items() if w != "main" and "episodes" in stages]
    assert ray_workers and all(str(process.pid) not in w for w in ray_workers)


def _dies_the_first_time(marker: str) -> str:
    if not os.path.exists(marker):
        Path(marker).touch()
        os._exit(1)
    return marker


@pytest.mark.slow
def test_ray_retries_a_unit_whose_worker_died(ray_instance, tmp_path):
    markers = [str(tmp_path / f"unit{i}") for i in range(3)]
    results = sorted(run_units(_dies_the_first_time, markers, workers=2, executor="ray"), key=lambda r: r.index)
    assert [r.value for r in results] == markers
    assert all(r.peak_rss_mb > 0 for r in results)


def test_bad_options_are_one_line(capsys, tmp_path):
    for option, value, error in (("--scale", "2", "error: scale must be in (0, 1], got 2.0"),
                                 ("--workers", "0", "error: workers must be a positive integer, got 0")):
        assert main(["release", "build", "--out", str(tmp_path / "r"), option, value]) == 2
        assert one_error_line(capsys.readouterr().err) == error
