"""Dataset generation: determinism, parallel workers, corrupt scenes, bad input, kill-and-resume."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.outputs import assert_drawn
from tests.tasks.house import build_scene_dir
from vlnverse.errors import ConfigError, DatasetError
from vlnverse.tasks.datagen import DatagenConfig, run_datagen
from vlnverse.tasks.dataset import EpisodeDataset
from vlnverse.tasks.generate import GenerationConfig

ROOT = Path(__file__).resolve().parents[2]


def tree(root: Path) -> dict[str, str]:
    """Digest of every dataset file (the report is a summary, not part of the data)."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and "report" not in p.relative_to(root).parts}


def config(scenes, out, **generation) -> DatagenConfig:
    generation.setdefault("per_scene", 6)
    return DatagenConfig(scenes=str(scenes), out=str(out), generation=GenerationConfig(**generation))


@pytest.mark.slow
def test_same_seed_same_bytes_and_workers_agree(corpus, tmp_path):
    a = run_datagen(config(corpus, tmp_path / "a"))
    b = run_datagen(config(corpus, tmp_path / "b"))
    parallel = run_datagen(DatagenConfig(scenes=str(corpus), out=str(tmp_path / "c"), workers=2,
                                         generation=GenerationConfig(per_scene=6)))
    assert tree(tmp_path / "a") == tree(tmp_path / "b") == tree(tmp_path / "c")
    assert a.manifest["total_episodes"] == b.manifest["total_episodes"] == parallel.manifest["total_episodes"] > 0
    assert a.manifest["start_distance"]["min_start_distance"] == 4.0
    other = run_datagen(DatagenConfig(scenes=str(corpus), out=str(tmp_path / "d"), seed=1,
                                      generation=GenerationConfig(per_scene=6)))
    assert tree(tmp_path / "d")["shards/house_0.jsonl.gz"] != tree(tmp_path / "a")["shards/house_0.jsonl.gz"]
    assert other.manifest["total_episodes"] > 0
    # every task, splits by scene, coarse family sharing trajectories
    ds = EpisodeDataset.open(tmp_path / "a")
    episodes = ds.all_episodes()
    assert {e.task for e in episodes} == {"fine", "coarse", "visual_reference", "long_horizon", "dialogue"}
    splits = a.manifest["scene_splits"]
    assert sorted(splits.values()) == ["test", "train", "val_unseen"]
    for e in episodes:
        assert e.split == splits[e.scene_id] or (splits[e.scene_id] == "train" and e.split == "val_seen")
    by_trajectory = {}
    for e in episodes:
        if e.task in ("coarse", "visual_reference", "dialogue"):
            by_trajectory.setdefault(e.trajectory_id, []).append(e)
    for group in by_trajectory.values():
        assert len(group) == 3
        assert all((g.instruction, g.reference_path, g.goals) == (group[0].instruction, group[0].reference_path,
                                                                  group[0].goals) for g in group)
    dialogue = ds.episodes(task="dialogue")[0]
    assert dialogue.question_budget == 3
    lh = ds.episodes(task="long_horizon")[0]
    assert len(lh.goals) == len(lh.instruction.subgoals) == len(lh.subgoal_distances) >= 2
    assert abs(sum(lh.subgoal_distances) - lh.geodesic_distance) < 1e-3


@pytest.mark.slow
def test_corrupt_scene_is_skipped_and_reported(corpus_with_corrupt, tmp_path):
    summary = run_datagen(config(corpus_with_corrupt, tmp_path / "out"))
    assert list(summary.manifest["skipped_scenes"]) == ["broken"]
    assert "broken/scene.usda" in summary.manifest["skipped_scenes"]["broken"]
    assert set(summary.manifest["shards"]) == {"house_0", "house_1"}
    result = subprocess.run([sys.executable, "-m", "vlnverse", "datagen", "--scenes", str(corpus_with_corrupt),
                             "--out", str(tmp_path / "cli"), "--per-scene", "3", "--tasks", "coarse", "--no-progress"],
                            capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "skipped scene broken" in result.stdout and "report:" in result.stdout
    total = json.loads((tmp_path / "cli/manifest.json").read_text())["total_episodes"]
    report = (tmp_path / "cli/report/report.md").read_text()
    assert f"\n{total} episodes." in report and "| Coarse" in report
    for picture in ("instruction_lengths.png", "vocabulary.png"):
        assert_drawn(tmp_path / "cli/report" / picture)


@pytest.mark.slow
def test_bad_input(tmp_path, corpus):
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError, match="no USD scenes"):
        run_datagen(config(tmp_path / "empty", tmp_path / "out"))
    with pytest.raises(ConfigError, match="unknown task"):
        GenerationConfig(tasks=("fine", "teleport"))
    result = subprocess.run([sys.executable, "-m", "vlnverse", "datagen", "--scenes", str(corpus), "--out",
                             str(tmp_path / "o"), "--tasks", "fine,teleport"], capture_output=True, text=True,
                            cwd=ROOT, timeout=60)
    assert result.returncode == 2 and "unknown task(s) teleport" in result.stderr
    result = subprocess.run([sys.executable, "-m", "vlnverse", "datagen", "--scenes", str(corpus), "--out",
                             str(tmp_path / "o"), "--llm", "openai:gpt-4o"], capture_output=True, text=True,
                            cwd=ROOT, timeout=60)
    assert result.returncode == 2 and "needs rendered images" in result.stderr and "--render" in result.stderr
    run_datagen(config(corpus, tmp_path / "o2", tasks=("coarse",)))
    with pytest.raises(DatasetError, match="different configuration"):
        run_datagen(config(corpus, tmp_path / "o2", tasks=("fine",)))


@pytest.mark.slow
def test_kill_and_resume_gives_the_uninterrupted_dataset(tmp_path):
    scenes = build_scene_dir(tmp_path / "scenes", 4)
    command = [sys.executable, "-m", "vlnverse", "datagen", "--scenes", str(scenes), "--per-scene", "25",
               "--no-progress", "--no-report", "--json"]
    reference = subprocess.run(command + ["--out", str(tmp_path / "reference")], capture_output=True, text=True,
                               cwd=ROOT, timeout=300)
    assert reference.returncode == 0, reference.stderr
    out = tmp_path / "resumed"
    kills = 0
    # kill once while the first scene is in flight, then each time one more scene has finished
    for finished_before_kill in (0, 1, 2, 3):
        process = subprocess.Popen(command + ["--out", str(out)], cwd=ROOT, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while process.poll() is None and time.monotonic() < deadline:
            done = len(list((out / "shards").glob("*.jsonl.gz"))) if (out / "shards").is_dir() else 0
            if done > finished_before_kill or (finished_before_kill == 0 and (out / "shards").is_dir()):
                break
            time.sleep(0.02)
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            kills += 1
        process.wait()
    assert kills >= 3
    final = subprocess.run(command + ["--out", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert final.returncode == 0, final.stderr
    summary = json.loads(final.stdout)
    assert summary["scenes_resumed"] >= 1  # the killed runs did finish some scenes
    assert tree(out) == tree(tmp_path / "reference")


def test_resume_removes_temp_files_a_killed_run_left(corpus, tmp_path):
    out = tmp_path / "o"
    run_datagen(config(corpus, out, tasks=("coarse",)))
    left = [out / ".manifest.json.k1ll3d.tmp", out / "shards" / ".x.jsonl.gz.k1ll3d.tmp"]
    for path in left:
        path.write_bytes(b"half a file")
    run_datagen(config(corpus, out, tasks=("coarse",)))
    assert not any(path.exists() for path in left)
