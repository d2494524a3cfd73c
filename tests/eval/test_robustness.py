"""``vlnverse eval`` under faults: every one gives one line, exit 2, and loses nothing."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.bundled import REPO
from tests.fsfaults import read_only_folder, small_disk
from vlnverse.cli import main

SMALL = ("--split", "test", "--physics", "tel_hop", "--max-steps", "5", "--plots", "0", "--no-progress")


def run_cli(capsys, *args):
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def test_an_unwritable_out_is_one_line(bundled_dataset, tmp_path, capsys):
    with read_only_folder(tmp_path / "ro") as folder:
        code, _, err = run_cli(capsys, "eval", "--dataset", bundled_dataset, "--agent", "forward",
                               "--out", folder / "run", *SMALL)
    assert code == 2
    assert one_error_line(err) in (f"error: cannot write {folder}/run: read-only file system",
                                   f"error: cannot write {folder}/run: permission denied")
    (tmp_path / "file").write_text("")
    code, _, err = run_cli(capsys, "eval", "--dataset", bundled_dataset, "--agent", "forward",
                           "--out", tmp_path / "file", *SMALL)
    assert code == 2 and one_error_line(err) == f"error: cannot write {tmp_path}/file: it is a file, not a folder"


@pytest.mark.slow
def test_a_full_disk_stops_the_run_and_it_resumes_once_there_is_room(bundled_dataset, tmp_path, capsys):
    reference = tmp_path / "reference"
    # long episodes: half the records outweigh the scene maps, which are written as the run goes
    args = ("eval", "--dataset", bundled_dataset, "--agent", "forward", *SMALL, "--max-steps", "60", "--json")
    code, _, err = run_cli(capsys, *args, "--out", reference)
    assert code == 0, err
    total = len((reference / "episodes.jsonl").read_bytes().splitlines())
    # room for run.json, the viewer's scene maps (before or after some records) and about half
    # the records: tmpfs hands out whole 4 KiB pages
    pages = [-(-path.stat().st_size // 4096) for path in (reference / "run.json", *(reference / "viewer" / "maps").iterdir())]
    records_pages = -(-(reference / "episodes.jsonl").stat().st_size // 4096)
    assert records_pages // 2 > sum(pages[1:])
    with small_disk(tmp_path / "disk", 4 * (sum(pages) + max(1, records_pages // 2))) as grow:
        out = tmp_path / "disk" / "run"
        code, _, err = run_cli(capsys, *args, "--out", out)
        assert code == 2
        assert "no space left on device" in one_error_line(err)
        assert 0 < len((out / "episodes.jsonl").read_bytes().splitlines()) < total
        grow(1024 + 2 * sum(-(-f.stat().st_size // 1024) for f in reference.rglob("*") if f.is_file()))
        code, stdout, err = run_cli(capsys, *args, "--out", out)
        assert code == 0, err
        assert json.loads(stdout)["resumed"] > 0
        assert (json.loads((out / "summary.json").read_text())["overall"]
                == json.loads((reference / "summary.json").read_text())["overall"])


def test_a_failed_start_writes_nothing_and_blocks_nothing(bundled_dataset, tmp_path, capsys):
    out = tmp_path / "run"
    code, _, err = run_cli(capsys, "eval", "--dataset", bundled_dataset, "--agent", "badname", "--out", out, *SMALL)
    assert code == 2 and "unknown agent 'badname'" in one_error_line(err)
    assert not out.exists()
    code, _, err = run_cli(capsys, "eval", "--dataset", bundled_dataset, "--agent", "text_history", "--llm",
                           "openai:gpt-4o?api_key_env=VLNVERSE_TEST_UNSET_KEY", "--out", out, *SMALL)
    assert code == 2 and "the API key variable VLNVERSE_TEST_UNSET_KEY is not set" in one_error_line(err)
    assert not out.exists()
    out.mkdir()  # a run file left by a run that stopped before its first episode
    (out / "run.json").write_text(json.dumps({"fingerprint": {"agent": "badname"}}))
    code, _, err = run_cli(capsys, "eval", "--dataset", bundled_dataset, "--agent", "forward", "--out", out, *SMALL)
    assert code == 0, err


@pytest.mark.parametrize(("agent", "message"), [
    ("nosuchmod:X", "error: entry point 'nosuchmod:X': no module named 'nosuchmod'; looked in the current folder"),
    ("tests.eval.agents_for_tests:NOT_AN_AGENT",
     "error: agent tests.eval.agents_for_tests:NOT_AN_AGENT is a int, not an agent, a policy or a factory"),
])
def test_bad_agent_paths_are_one_line(bundled_dataset, tmp_path, capsys, agent, message):
    code, _, err = run_cli(capsys, "eval", "--dataset", bundled_dataset, "--agent", agent, "--out", tmp_path, *SMALL)
    assert code == 2 and one_error_line(err).startswith(message)


def test_a_plain_policy_function_is_an_agent(bundled_dataset, tmp_path, capsys):
    code, stdout, err = run_cli(capsys, "eval", "--dataset", bundled_dataset, "--agent",
                                "tests.eval.agents_for_tests:turn_left", "--out", tmp_path, *SMALL, "--json")
    assert code == 0, err
    assert json.loads(stdout)["summary"]["overall"][0]["metrics"]["steps"]["mean"] == 5.0


def _flip_a_byte(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def test_a_tampered_dataset_is_refused_naming_the_file(bundled_dataset, tmp_path, capsys):
    dataset = tmp_path / "dataset"
    shutil.copytree(bundled_dataset, dataset)
    shard = sorted((dataset / "shards").glob("*.jsonl.gz"))[0]
    _flip_a_byte(shard)
    code, _, err = run_cli(capsys, "eval", "--dataset", dataset, "--agent", "forward", "--out", tmp_path / "run", *SMALL)
    assert code == 2
    assert one_error_line(err).startswith(f"error: dataset {dataset} does not match its manifest")
    assert str(shard) in err and not (tmp_path / "run").exists()
    code, _, err = run_cli(capsys, "eval", "--dataset", shard, "--agent", "forward", "--out", tmp_path / "one", *SMALL)
    assert code == 2 and one_error_line(err) == f"error: cannot read episode file {shard}: corrupt data"


@pytest.mark.slow
def test_an_episode_past_its_time_limit_fails_and_the_run_goes_on(bundled_dataset, tmp_path, capsys):
    code, stdout, err = run_cli(capsys, "eval", "--dataset", bundled_dataset, "--agent",
                                "tests.eval.agents_for_tests:HangingAgent", "--split", "test", "--task", "coarse",
                                "--physics", "strict,tel_hop", "--episode-timeout", "0.5", "--plots", "0",
                                "--no-progress", "--json", "--out", tmp_path)
    assert code == 0, err
    records = [json.loads(line) for line in (tmp_path / "episodes.jsonl").read_text().splitlines()]
    assert len(records) == 4  # two episodes, two physics modes
    for record in records:  # nothing is raised into the agent's thread: its worker process is killed
        assert record["fail_reason"] == "timeout" and record["error_source"] == "timeout"
        assert "worker process was killed" in record["error"] and record["actions"] == []
    assert json.loads((tmp_path / "run.json").read_text())["run"]["episode_timeout"] == 0.5


def test_an_action_that_comes_after_the_time_limit_is_not_taken(bundled_dataset, tmp_path, capsys):
    code, _, err = run_cli(capsys, "eval", "--dataset", bundled_dataset, "--agent",
                           "tests.eval.agents_for_tests:SlowAgent", "--split", "test", "--task", "coarse",
                           "--physics", "strict", "--episodes", "1", "--episode-timeout", "0.5", "--plots", "0",
                           "--no-progress", "--json", "--out", tmp_path)
    assert code == 0, err
    record = json.loads((tmp_path / "episodes.jsonl").read_text())
    assert record["fail_reason"] == "timeout" and "killed" not in record["error"]
    assert record["actions"] == [2] and len(record["trajectory"]) == 2  # the late second turn was dropped


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found |= {int(c) for c in (task / "children").read_text().split()}
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_die_with_a_killed_parent(bundled_dataset, tmp_path):
    command = [sys.executable, "-m", "vlnverse", "eval", "--dataset", str(bundled_dataset), "--agent",
               "tests.eval.agents_for_tests:HangingAgent", "--workers", "2", "--plots", "0", "--no-progress",
               "--out", str(tmp_path)]
    parent = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while len(workers := _children(parent.pid)) < 2:
            assert parent.poll() is None and time.monotonic() < deadline, "the workers never started"
            time.sleep(0.1)
    finally:
        parent.kill()
        parent.wait(timeout=30)
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in workers)
