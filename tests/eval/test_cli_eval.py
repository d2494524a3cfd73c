"""``vlnverse eval`` as a user runs it: JSON output, errors, and kill-and-resume."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from tests.bundled import REPO
from tests.cli_errors import one_error_line
from tests.outputs import index_rows
from vlnverse.cli import main


def vlnverse(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "vlnverse", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, timeout=600, **kwargs)


@pytest.mark.slow
def test_json_output_and_human_tables(bundled_dataset, tmp_path):
    out = tmp_path / "run"
    result = vlnverse("eval", "--dataset", bundled_dataset, "--agent", "forward", "--split", "test", "--task",
                      "fine", "--physics", "tel_hop", "--max-steps", "20", "--out", out, "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["evaluated"] == 1 and data["resumed"] == 0
    assert data["summary"]["overall"][0]["metrics"]["steps"]["mean"] == 20.0
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert index_rows(out / "index.html") == [r["episode_id"] for r in records] and len(records) == 1
    assert "Fine-grained task" in (out / "summary.md").read_text()
    again = vlnverse("eval", "--dataset", bundled_dataset, "--agent", "forward", "--split", "test", "--task",
                     "fine", "--physics", "tel_hop", "--max-steps", "20", "--out", out)
    assert again.returncode == 0, again.stderr
    assert "Fine-grained task · split test" in again.stdout and "Tel-Hop" in again.stdout
    assert "Physics" in again.stdout and "Collision" not in again.stdout
    assert "0 evaluated, 1 resumed" in again.stdout


@pytest.mark.slow
def test_errors_are_one_line(bundled_dataset, tmp_path):
    result = vlnverse("eval", "--dataset", bundled_dataset, "--agent", "nobody", "--out", tmp_path / "x")
    assert result.returncode == 2
    line = one_error_line(result.stderr)
    assert line.startswith("error: unknown agent 'nobody'; valid names: ")
    assert {"forward", "oracle", "random", "replay"} <= set(line.split(": ")[-1].split(", "))
    result = vlnverse("eval", "--dataset", tmp_path / "nowhere", "--agent", "oracle", "--out", tmp_path / "y")
    assert result.returncode == 2 and "not found" in one_error_line(result.stderr)
    result = vlnverse("eval", "--dataset", bundled_dataset, "--agent", "oracle", "--physics", "strict,fly",
                      "--out", tmp_path / "z")
    assert result.returncode == 2 and "unknown physics mode 'fly'" in one_error_line(result.stderr)


@pytest.mark.slow
def test_killed_run_resumes_to_the_same_summary(bundled_dataset, oracle_run, tmp_path):
    out = tmp_path / "killed"
    command = [sys.executable, "-m", "vlnverse", "eval", "--dataset", str(bundled_dataset), "--agent", "oracle",
               "--out", str(out), "--plots", "0", "--no-progress"]
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    episodes = out / "episodes.jsonl"
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline:
            if episodes.exists() and len(episodes.read_bytes().splitlines()) >= 10:
                break
            assert process.poll() is None, "the run ended before it could be killed"
            time.sleep(0.05)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    done = len(episodes.read_bytes().splitlines())
    assert 10 <= done < 54, f"{done} records when killed"
    assert not (out / "summary.json").exists()

    result = vlnverse(*command[3:])
    assert result.returncode == 0, result.stderr
    assert f"{54 - done} evaluated, {done} resumed" in result.stdout
    lines = episodes.read_text().splitlines()
    keys = [(json.loads(line)["episode_id"], json.loads(line)["physics"]) for line in lines]
    assert len(keys) == len(set(keys)) == 54
    resumed = json.loads((out / "summary.json").read_text())
    uninterrupted = json.loads((oracle_run.out / "summary.json").read_text())
    assert resumed == uninterrupted


def eval_json(capsys, *args) -> dict:
    code = main(["eval", *map(str, args), "--no-progress", "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def test_sample_seed_success_distance_and_scenes_dir_options(bundled_dataset, capsys, tmp_path):
    # A copy of the dataset whose manifest points at scenes that are not there: only
    # --scenes-dir finds them.
    moved = tmp_path / "moved"
    shutil.copytree(bundled_dataset, moved)
    manifest = json.loads((moved / "manifest.json").read_text())
    scenes = str((bundled_dataset / manifest["scenes_dir"]).resolve())  # the manifest's is relative to the dataset
    (moved / "manifest.json").write_text(json.dumps({**manifest, "scenes_dir": str(tmp_path / "gone")}))
    common = ("--dataset", moved, "--agent", "oracle", "--physics", "tel_hop", "--episodes", "3", "--plots", "0")
    assert main(["eval", *map(str, common), "--out", str(tmp_path / "x"), "--no-progress"]) != 0
    capsys.readouterr()
    samples = {}
    for seed in (3, 4):
        out = tmp_path / f"seed{seed}"
        options = (*common, "--scenes-dir", scenes, "--seed", seed, "--success-distance", "1.5", "--out", out)
        assert eval_json(capsys, *options)["evaluated"] == 3
        run = json.loads((out / "run.json").read_text())["run"]
        assert (run["seed"], run["episodes"], run["success_distance"]) == (seed, 3, 1.5)
        records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
        for record in records:  # the oracle stops within 1.5 m; SR follows the configured radius
            assert record["metrics"]["SR"] == float(record["metrics"]["NE"] < 1.5) == 1.0
        samples[seed] = sorted(r["episode_id"] for r in records)
        again = eval_json(capsys, *options)  # the same seed samples the same episodes: all finished
        assert (again["evaluated"], again["resumed"]) == (0, 3)
    assert samples[3] != samples[4]


def test_executor_ray_without_ray_is_one_line(bundled_dataset, capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)
    code = main(["eval", "--dataset", str(bundled_dataset), "--agent", "oracle", "--executor", "ray",
                 "--out", str(tmp_path / "r"), "--no-progress"])
    assert code == 2
    assert "pip install 'vlnverse[ray]'" in one_error_line(capsys.readouterr().err)
