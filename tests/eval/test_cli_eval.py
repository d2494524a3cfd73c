"""``vlnverse eval`` as a user runs it: JSON output, errors, and kill-and-resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from tests.bundled import REPO


def vlnverse(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "vlnverse", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, timeout=600, **kwargs)


def test_json_output_and_human_tables(bundled_dataset, tmp_path):
    out = tmp_path / "run"
    result = vlnverse("eval", "--dataset", bundled_dataset, "--agent", "forward", "--split", "test", "--task",
                      "fine", "--physics", "tel_hop", "--max-steps", "20", "--out", out, "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["evaluated"] == 1 and data["resumed"] == 0
    assert data["summary"]["overall"][0]["metrics"]["steps"]["mean"] == 20.0
    assert (out / "summary.md").is_file() and (out / "index.html").is_file()
    again = vlnverse("eval", "--dataset", bundled_dataset, "--agent", "forward", "--split", "test", "--task",
                     "fine", "--physics", "tel_hop", "--max-steps", "20", "--out", out)
    assert again.returncode == 0, again.stderr
    assert "Fine-grained task" in again.stdout and "Tel-Hop" in again.stdout
    assert "0 evaluated, 1 resumed" in again.stdout


def test_errors_are_one_line(bundled_dataset, tmp_path):
    result = vlnverse("eval", "--dataset", bundled_dataset, "--agent", "nobody", "--out", tmp_path / "x")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: unknown agent 'nobody'; valid names: cma, discussnav, forward, map_history, map_history_cot, oracle, random, "
        "replay, seq2seq, text_history, text_history_cot, waypoint_bert"]
    result = vlnverse("eval", "--dataset", tmp_path / "nowhere", "--agent", "oracle", "--out", tmp_path / "y")
    assert result.returncode == 2 and "not found" in result.stderr
    result = vlnverse("eval", "--dataset", bundled_dataset, "--agent", "oracle", "--physics", "strict,fly",
                      "--out", tmp_path / "z")
    assert result.returncode == 2 and "unknown physics mode(s) fly" in result.stderr


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
