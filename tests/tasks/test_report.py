"""Dataset statistics: per-task path length, expert steps and instruction length (Figs. 2-3)."""

from __future__ import annotations

import math
import subprocess
import sys

from tests.bundled import REPO
from vlnverse.tasks.episode import Episode, Goal, Instruction, yaw_to_quaternion
from vlnverse.tasks.report import (
    _tally,
    dataset_stats,
    distribution_series,
    expert_steps,
    write_report,
)
from vlnverse.tasks.storage import write_episodes


def test_expert_steps_count_turns_forward_steps_and_stops():
    # 2 m east (8 steps), a left turn of 90 deg (6 turns), 1 m north (4 steps), STOP
    assert expert_steps([(0, 0), (2, 0), (2, 1)], 0.0) == 8 + 6 + 4 + 1
    # facing west at the start: turn around first (12 turns)
    assert expert_steps([(0, 0), (2, 0)], math.pi, goals=2) == 12 + 8 + 2


def episode(k, task, length, words):
    path = ((0.0, 0.0, 0.0), (length, 0.0, 0.0))
    return Episode(episode_id=f"e{k}", trajectory_id=f"t{k}", scene_id="s", scene_path="s.usda", split="train",
                   task=task, start_position=path[0], start_rotation=yaw_to_quaternion(0.0),
                   goals=(Goal(path[-1]),), reference_path=path, geodesic_distance=length,
                   instruction=Instruction(" ".join(["go"] * words)))


def test_per_task_distributions_and_report(tmp_path):
    episodes = [episode(0, "fine", 10.0, 30), episode(1, "fine", 14.0, 50), episode(2, "coarse", 6.0, 8)]
    stats = dataset_stats(episodes)
    fine, coarse = stats["per_task"]["fine"], stats["per_task"]["coarse"]
    assert fine["path_length"]["mean"] == 12.0 and fine["path_length"]["n"] == 2
    assert fine["steps"]["min"] == 41 and fine["steps"]["max"] == 57
    assert fine["instruction_words"]["median"] == 40.0 and coarse["path_length"]["max"] == 6.0
    write_report(episodes, tmp_path / "report")
    md = (tmp_path / "report" / "report.md").read_text()
    assert "| Fine-grained | path_length | 12.0 |" in md and (tmp_path / "report" / "paths.png").stat().st_size > 5000


def test_tasks_that_share_their_paths_are_one_series_of_the_path_plot():
    episodes = [episode(0, "fine", 10.0, 30), episode(1, "coarse", 6.0, 8), episode(2, "dialogue", 6.0, 8),
                episode(3, "visual_reference", 7.0, 8)]
    series = distribution_series(_tally(episodes).distributions, "path_length")
    assert series == [("Fine-grained", [10.0]), ("Coarse-grained = Dialogue (same paths)", [6.0]),
                      ("Visual reference", [7.0])]


def test_stats_cli_prints_the_distributions(tmp_path):
    write_episodes(tmp_path / "d.jsonl", [episode(0, "fine", 10.0, 30), episode(1, "coarse", 6.0, 8)])
    result = subprocess.run([sys.executable, "-m", "vlnverse", "dataset", "stats", str(tmp_path / "d.jsonl")],
                            capture_output=True, text=True, cwd=REPO, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "human TL" in result.stdout and "10.0 / 10.0 / 10.0" in result.stdout
