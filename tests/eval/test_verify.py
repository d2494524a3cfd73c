"""``vlnverse eval verify`` and ``eval bundle``: an untouched run verifies (also from its
bundle), a hand-edited record or a changed dataset file is caught, and an LLM agent re-run
from its transcript takes the same actions."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile

import pytest

from tests.bundled import BUNDLED_SCENES, REPO
from tests.eval.verify_helpers import llm_run, verify_cli
from tests.eval.verify_helpers import run_eval as oracle_eval
from vlnverse.eval.verification.untrusted import MalformedInput
from vlnverse.eval.verification.verify import verify_run


def verify(folder, dataset, **options):
    return verify_run(folder, dataset=dataset, scenes_dir=BUNDLED_SCENES, **options)


def edited_copy(folder, tmp_path, edit):
    """A copy of ``folder`` whose first record went through ``edit(record)``."""
    copy = tmp_path / "edited"
    shutil.copytree(folder, copy)
    lines = (copy / "episodes.jsonl").read_text().splitlines()
    record = json.loads(lines[0])
    edit(record)
    lines[0] = json.dumps(record, sort_keys=True)
    (copy / "episodes.jsonl").write_text("\n".join(lines) + "\n")
    return copy


@pytest.mark.slow
def test_an_untouched_run_verifies_and_so_does_its_bundle(oracle_folder, verify_dataset, tmp_path):
    report = verify(oracle_folder, verify_dataset)
    assert report.ok, report.mismatches
    assert report.records == 6 and list(report.checks) == ["inputs", "records", "resimulation", "summary", "claims"]
    assert report.checks["resimulation"] == "ok (6 episodes re-simulated)"
    run = json.loads((oracle_folder / "run.json").read_text())["run"]
    assert run["action_space"] == "discrete" and {k for k in run["inputs"]} >= {"dataset"}
    assert {k for k in report.checksums if k.startswith("scene:")} == {k for k in run["inputs"] if k != "dataset"}

    archive = tmp_path / "results.tar.gz"
    done = subprocess.run([sys.executable, "-m", "vlnverse", "eval", "bundle", str(oracle_folder), "--to", str(archive)],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    unpacked = tmp_path / "unpacked"
    with tarfile.open(archive) as tar:
        tar.extractall(unpacked, filter="data")
    assert sorted(p.name for p in unpacked.iterdir()) == sorted(
        ["run.json", "episodes.jsonl", "summary.json", "summary.md", "environment.json", "SHA256SUMS"])
    for line in (unpacked / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split("  ")
        assert hashlib.sha256((unpacked / name).read_bytes()).hexdigest() == digest
    assert json.loads((unpacked / "environment.json").read_text())["libraries"]["pybullet"]
    report = verify(unpacked, verify_dataset)
    assert report.ok and list(report.checks) == ["sha256sums", "inputs", "records", "resimulation", "summary", "claims"]


@pytest.mark.slow
@pytest.mark.parametrize("edit, field", [
    (lambda r: r["metrics"].update(SR=1.0 - r["metrics"]["SR"]), "metrics.SR"),
    (lambda r: r["trajectory"][-1].__setitem__(0, r["trajectory"][-1][0] + 0.5), "trajectory"),
    (lambda r: r.update(instruction=r["instruction"] + " Then stop."), "instruction differs from the dataset"),
])
def test_a_hand_edited_record_is_caught(oracle_folder, verify_dataset, tmp_path, edit, field):
    report = verify(edited_copy(oracle_folder, tmp_path, edit), verify_dataset)
    assert not report.ok and field in report.mismatches[0]


@pytest.mark.slow
def test_the_cli_exits_1_with_the_first_mismatch(oracle_folder, verify_dataset, tmp_path):
    edited = edited_copy(oracle_folder, tmp_path, lambda r: r["metrics"].update(SPL=0.123))
    done = verify_cli(edited, verify_dataset)
    assert done.returncode == 1, done.stderr
    assert "resimulation  FAIL:" in done.stdout and "metrics.SPL: recorded 0.123" in done.stdout
    assert done.stdout.strip().splitlines()[-1].startswith("MISMATCH: 6 record(s)")


def test_a_changed_dataset_file_is_caught(verify_dataset, tmp_path):
    dataset = tmp_path / "dataset"
    shutil.copytree(verify_dataset, dataset)
    out = tmp_path / "run"
    oracle_eval(dataset, out, physics=("tel_hop",))
    assert verify(out, dataset).ok
    manifest = json.loads((dataset / "manifest.json").read_text())
    manifest["note"] = "edited after the run"
    (dataset / "manifest.json").write_text(json.dumps(manifest))
    report = verify(out, dataset)
    assert report.checks["inputs"].startswith("FAIL: dataset: sha256")

    shard = next((dataset / "shards").glob("*.jsonl.gz"))
    lines = gzip.decompress(shard.read_bytes()).decode().splitlines()
    episode = json.loads(lines[0])
    episode["instruction"]["text"] = "Walk somewhere else."
    lines[0] = json.dumps(episode)
    shard.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    report = verify(out, dataset)
    assert any(shard.name in m for m in report.mismatches)   # the shard no longer matches its manifest


def test_an_llm_agent_re_run_from_its_transcript_takes_the_recorded_actions(verify_dataset, tmp_path):
    transcript = tmp_path / "calls.jsonl"
    out = llm_run(verify_dataset, tmp_path / "run", transcript)
    report = verify(out, verify_dataset, rerun=True, transcript=transcript)
    assert report.ok, report.mismatches
    assert report.checks["rerun"] == "ok (1 episodes replayed: the actions follow from this transcript)"

    calls = [json.loads(line) for line in transcript.read_text().splitlines()]
    calls[0]["response"] = {**calls[-1]["response"], "key": calls[0]["response"].get("key")}  # first reply: STOP
    transcript.write_text("".join(json.dumps(c) + "\n" for c in calls))
    report = verify(out, verify_dataset, rerun=True, transcript=transcript)
    assert not report.ok and "actions" in report.mismatches[0] and report.checks["rerun"].startswith("FAIL")

    transcript.write_bytes(b"\xff\xfe not a transcript\n")  # the submitter's file is read as untrusted
    with pytest.raises(MalformedInput, match="not UTF-8"):
        verify(out, verify_dataset, rerun=True, transcript=transcript)


@pytest.mark.slow
def test_a_stated_selection_is_a_spot_check_whose_verdict_names_what_was_not_checked(
        oracle_folder, verify_dataset, tmp_path):
    from vlnverse.eval.verification.verify import Selection

    tel_hop = Selection(physics=("tel_hop",))
    whole = verify(oracle_folder, verify_dataset, selection=tel_hop)   # a full check: the Strict records do not belong
    assert not whole.ok and "not in the required selection" in whole.mismatches[0]
    report = verify(oracle_folder, verify_dataset, selection=tel_hop, subset=True)
    assert report.ok, report.mismatches
    assert (report.records, report.checked, report.outside) == (6, 3, 3)
    assert report.checks["records"] == "ok (3 of 3 selected have a record; 3 outside the selection not checked)"
    assert report.checks["resimulation"] == "ok (3 episodes re-simulated)"
    assert report.reported[0].startswith("the 3 record(s) outside the selection: not re-simulated")

    done = verify_cli(oracle_folder, verify_dataset, "--physics", "tel_hop")
    assert done.returncode == 0, done.stdout + done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("verified on the stated selection (tel_hop: 3 record(s)) (consistent;"), last
    assert last.endswith(f"3 record(s) outside it not checked, in {oracle_folder}")

    edited = tmp_path / "edited_tel_hop"   # a selected record edited: the spot check fails
    shutil.copytree(oracle_folder, edited)
    records = [json.loads(line) for line in (edited / "episodes.jsonl").read_text().splitlines()]
    next(r for r in records if r["physics"] == "tel_hop")["metrics"]["SPL"] = 0.123
    (edited / "episodes.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
    done = verify_cli(edited, verify_dataset, "--physics", "tel_hop")
    assert done.returncode == 1 and done.stdout.strip().splitlines()[-1].startswith("MISMATCH:"), done.stdout
