"""``vlnverse demo``: bundled scenes → dataset → three baselines and the shipped CMA under Strict and
Tel-Hop → report."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

import pytest

from tests.bundled import BUNDLED_SCENES, REPO
from tests.outputs import assert_drawn, index_rows
from vlnverse.cli.demo import cli_command, missing_rows, small_sample_note


@pytest.mark.slow
def test_demo_runs_end_to_end(tmp_path):
    out = tmp_path / "demo"
    command = [sys.executable, "-m", "vlnverse", "demo", "--out", str(out), "--per-scene", "2", "--max-steps", "400"]
    result = subprocess.run([*command, "--no-progress"], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    scenes = sorted(p.name for p in BUNDLED_SCENES.iterdir() if (p / "scene.usdc").is_file())
    for scene in scenes:
        assert_drawn(out / "scenes" / scene / "bev.png")
    manifest = json.loads((out / "dataset" / "manifest.json").read_text())
    tasks = {task for split in manifest["splits"].values() for task in split}
    assert tasks >= {"coarse", "visual_reference", "long_horizon", "dialogue"}
    report = (out / "report.md").read_text()
    for agent in ("oracle", "random", "forward"):
        assert f"| {agent} | Tel-Hop |" in report and f"| {agent} | Strict |" in report
        summary = json.loads((out / "eval" / agent / "summary.json").read_text())
        assert summary["episodes"] == 2 * manifest["total_episodes"]
        records = [json.loads(line) for line in (out / "eval" / agent / "episodes.jsonl").read_text().splitlines()]
        assert sorted(index_rows(out / "eval" / agent / "index.html")) == sorted(r["episode_id"] for r in records)
    # the shipped CMA checkpoint, on the tasks it was trained on
    fine_coarse = sum(split.get(t, {}).get("episodes", 0) for split in manifest["splits"].values()
                      for t in ("fine", "coarse"))
    cma = json.loads((out / "eval" / "cma" / "summary.json").read_text())
    assert cma["episodes"] == 2 * fine_coarse and cma["errors"]["count"] == 0
    assert "| cma | Tel-Hop |" in report
    oracle = json.loads((out / "eval" / "oracle" / "summary.json").read_text())
    assert all(g["metrics"]["SR"]["mean"] == 1.0 for g in oracle["overall"] if g["physics"] == "tel_hop")
    assert "Coarse-grained task" in result.stdout and "Long-horizon" in result.stdout
    assert f"eval --dataset {out / 'dataset'} --split val_unseen" in result.stdout  # the next command to type
    assert "splits test + val_seen + val_unseen pooled" in result.stdout and "+ train" not in result.stdout
    assert "no cma rows for visual_reference, long_horizon, dialogue" in result.stdout
    # Re-run with --json: everything is reused, and stdout is one JSON object with the same results.
    again = subprocess.run([*command, "--json"], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    data = json.loads(again.stdout)
    assert data["episodes"] == manifest["total_episodes"]
    assert sorted(s["scene_id"] for s in data["scenes"]) == scenes
    assert data["runs"]["oracle"] == oracle
    assert "0 evaluated" in again.stderr  # the narration went to stderr, and nothing was run twice


def test_the_next_command_runs_as_printed_without_an_activated_venv(tmp_path, monkeypatch):
    """``make demo`` runs ``.venv/bin/python`` with ``vlnverse`` off ``PATH``: the command it prints must
    name a program that runs from where the user stands."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    command = cli_command()
    assert command != "vlnverse"
    done = subprocess.run([*shlex.split(command), "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "datagen" in done.stdout, done.stderr


def test_an_agent_run_on_some_tasks_says_why_it_has_no_row_for_the_others():
    notes = missing_rows({"oracle": "all", "cma": "fine,coarse"}, ["fine", "coarse", "dialogue"])
    assert notes == ["no cma rows for dialogue: the demo evaluates it on fine and coarse only, the tasks it was "
                     "trained on"]


def test_rows_on_few_episodes_say_n_and_why_it_is_small():
    def held_out(*sizes):
        return [("cma", {"groups": [{"n_episodes": n} for n in sizes]})]

    note = small_sample_note(held_out(2, 4, 3), per_scene=2)
    assert note.startswith("n = 2 to 4 held-out episodes per row: --per-scene 2 keeps the demo to minutes")
    assert "up to 50 points" in note and "28 % SR" in note
    assert small_sample_note(held_out(40, 120), per_scene=20) is None
