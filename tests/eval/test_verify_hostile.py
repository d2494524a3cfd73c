"""``eval verify`` and ``eval bundle`` on files made to hurt them: each ends in one ``error:``
line and exit status 2, quickly, without following a link or blocking on a pipe. The command
runs with its address space capped (3 GiB), so a reader that does not stop fails here
instead of exhausting the machine."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tarfile

import pytest

from tests.bundled import BUNDLED_SCENES, REPO
from tests.cli_errors import one_error_line

ADDRESS_SPACE = 3 << 30


def capped_vlnverse(*args, timeout=60):
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    return subprocess.run([sys.executable, "-m", "vlnverse", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, timeout=timeout, preexec_fn=cap, env={**os.environ, "PYTHONPATH": str(REPO)})


def hostile_copy(oracle_folder, tmp_path, name, make):
    """A copy of the oracle folder whose file ``name`` is replaced by ``make(path)``."""
    folder = tmp_path / "hostile"
    shutil.copytree(oracle_folder, folder)
    (folder / name).unlink(missing_ok=True)
    make(folder / name)
    return folder


def edited_run(**changes):
    def make(path):
        document = json.loads((path.parent.parent / "source_run.json").read_text())
        document["run"].update(changes)
        path.write_text(json.dumps(document).replace('"seed": "NaN"', '"seed": NaN'))
    return make


HOSTILE = {
    "deep_json": ("run.json", lambda p: p.write_text("[" * 100_000 + "]" * 100_000), "nested deeper than 64"),
    "not_utf8": ("episodes.jsonl", lambda p: p.write_bytes(b'{"episode_id": "\xff\xfe"}\n'), "not UTF-8"),
    "nan_seed": ("run.json", edited_run(seed="NaN"), "NaN is not a JSON number"),
    "string_seed": ("run.json", edited_run(seed="3"), "'seed' must be an integer"),
    "fifo": ("run.json", lambda p: os.mkfifo(p), "is a FIFO"),
    "dev_zero": ("run.json", lambda p: p.symlink_to("/dev/zero"), "is a symlink"),
    "sums_escape": ("SHA256SUMS", lambda p: p.write_text(f"{'0' * 64}  ../../etc/passwd\n"), "SHA256SUMS:1"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_file_is_one_error_line_and_exit_2(case, oracle_folder, verify_dataset, tmp_path):
    name, make, message = HOSTILE[case]
    shutil.copyfile(oracle_folder / "run.json", tmp_path / "source_run.json")
    folder = hostile_copy(oracle_folder, tmp_path, name, make)
    done = capped_vlnverse("eval", "verify", folder, "--dataset", verify_dataset, "--scenes-dir", BUNDLED_SCENES)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in one_error_line(done.stderr)


def test_help_documents_the_exit_statuses():
    done = capped_vlnverse("eval", "verify", "--help")
    text = " ".join(done.stdout.split())
    assert "exit status: 0 verified; 1 a check failed" in text and "2 malformed input" in text


def test_the_bundle_writer_packs_regular_files_of_the_folder_only(oracle_folder, tmp_path):
    linked = hostile_copy(oracle_folder, tmp_path, "summary.md", lambda p: p.symlink_to(oracle_folder / "summary.md"))
    done = capped_vlnverse("eval", "bundle", linked, "--to", tmp_path / "linked.tar.gz")
    assert done.returncode == 2 and "summary.md" in one_error_line(done.stderr) and "symlink" in done.stderr
    assert not (tmp_path / "linked.tar.gz").exists()

    outside = tmp_path / "outside"
    shutil.copytree(oracle_folder, outside)
    secret = tmp_path / "secret.txt"
    secret.write_text("not part of any run")
    document = json.loads((outside / "run.json").read_text())
    document["run"]["llm_record"] = str(secret)
    (outside / "run.json").write_text(json.dumps(document))
    done = capped_vlnverse("eval", "bundle", outside, "--to", tmp_path / "outside.tar.gz")
    assert done.returncode == 2 and "lies outside" in one_error_line(done.stderr)

    document["run"]["llm_record"] = str(outside / "calls.jsonl")  # a transcript inside the folder is packed
    (outside / "run.json").write_text(json.dumps(document))
    (outside / "calls.jsonl").write_text('{"request": {}, "response": {}}\n')
    done = capped_vlnverse("eval", "bundle", outside, "--to", tmp_path / "inside.tar.gz")
    assert done.returncode == 0, done.stderr
    with tarfile.open(tmp_path / "inside.tar.gz") as tar:
        assert "transcript.jsonl" in tar.getnames() and all(m.isfile() for m in tar.getmembers())
