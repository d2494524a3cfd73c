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


def edited_records(edit):
    def make(path):
        lines = (path.parent.parent / "source_episodes.jsonl").read_text().splitlines()
        record = json.loads(lines[0])
        edit(record)
        path.write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n")
    return make


def first_record_then(tail):
    def make(path):
        path.write_text((path.parent.parent / "source_episodes.jsonl").read_text().splitlines()[0] + "\n" + tail)
    return make


def twice(path):
    text = (path.parent.parent / "source_run.json").read_text()
    path.write_text(text.replace('"agent": "oracle"', '"agent": "random", "agent": "oracle"', 1))


HOSTILE = {
    "deep_json": ("run.json", lambda p: p.write_text("[" * 100_000 + "]" * 100_000), "nested deeper than 64"),
    "not_utf8": ("episodes.jsonl", lambda p: p.write_bytes(b'{"episode_id": "\xff\xfe"}\n'), "not UTF-8"),
    "nan_seed": ("run.json", edited_run(seed="NaN"), "NaN is not a JSON number"),
    "string_seed": ("run.json", edited_run(seed="3"), "'seed' must be a non-negative integer"),
    "negative_seed": ("run.json", edited_run(seed=-1), "'seed' must be a non-negative integer"),
    "fifo": ("run.json", lambda p: os.mkfifo(p), "is a FIFO"),
    "dev_zero": ("run.json", lambda p: p.symlink_to("/dev/zero"), "is a symlink"),
    "sums_escape": ("SHA256SUMS", lambda p: p.write_text(f"{'0' * 64}  ../../etc/passwd\n"), "SHA256SUMS:1"),
    "blank_lines": ("episodes.jsonl", first_record_then("\n" * (64 << 20)), "episodes.jsonl:2: a blank line"),
    "long_line": ("episodes.jsonl", first_record_then('{"episode_id": "' + "a" * (17 << 20) + '"}\n'),
                  "episodes.jsonl:2: a line longer than"),
    "overflow": ("episodes.jsonl", first_record_then('{"episode_id": "x", "physics": "strict", "NE": 1e999}\n'),
                 "1e999 is beyond the range of a number"),
    "huge_integer": ("run.json", edited_run(seed=10**30), "beyond the range of a 64-bit integer"),
    "duplicate_key": ("run.json", twice, "key 'agent' given twice"),
    "unknown_run_field": ("run.json", edited_run(notes="x" * 1000), "unknown field 'notes' in 'run'"),
    "unknown_record_field": ("episodes.jsonl", edited_records(lambda r: r.update(bonus="x" * 1000)),
                             "episodes.jsonl:1: unknown field 'bonus'"),
    "usage_kind": ("episodes.jsonl", edited_records(lambda r: r.update(llm={"calls": "x"})),
                   "its records do not make a summary (TypeError"),
    "record_field_kind": ("episodes.jsonl", edited_records(lambda r: r.update(metrics="high")),
                          "episodes.jsonl:1: field 'metrics' must be dict"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_file_is_one_error_line_and_exit_2(case, oracle_folder, verify_dataset, tmp_path):
    name, make, message = HOSTILE[case]
    shutil.copyfile(oracle_folder / "run.json", tmp_path / "source_run.json")
    shutil.copyfile(oracle_folder / "episodes.jsonl", tmp_path / "source_episodes.jsonl")
    folder = hostile_copy(oracle_folder, tmp_path, name, make)
    done = capped_vlnverse("eval", "verify", folder, "--dataset", verify_dataset, "--scenes-dir", BUNDLED_SCENES)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in one_error_line(done.stderr)


def test_help_documents_the_exit_statuses():
    done = capped_vlnverse("eval", "verify", "--help")
    text = " ".join(done.stdout.split())
    assert "exit status: 0 verified (a spot check: every selected record); 1 a check failed" in text
    assert "2 malformed input" in text


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


def archive_of(path, *members, pax=None):
    """A gzipped tar of ``(TarInfo, bytes or None)`` members (None: the header alone, the archive cut after it)."""
    import gzip
    import io

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT, pax_headers=pax or {}) as tar:
        for info, data in members:
            if data is None:
                tar.fileobj.write(info.tobuf(tarfile.PAX_FORMAT))
                break
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(gzip.compress(buffer.getvalue()))
    return path


def member(name, size=3, kind=tarfile.REGTYPE, **extra):
    info = tarfile.TarInfo(name)
    info.size, info.type = size, kind
    for key, value in extra.items():
        setattr(info, key, value)
    return info


UNPACK_REFUSALS = {
    "over_its_cap": ((member("episodes.jsonl", size=2 << 30), None), "is 2147483648 bytes, more than its cap"),
    "not_a_member": ((member("evil.py"), b"x=1"), "member 'evil.py' is not a bundle member"),
    "escaping": ((member("../run.json"), b"{} "), "member '../run.json' is not a bundle member"),
    "symlink": ((member("run.json", size=0, kind=tarfile.SYMTYPE, linkname="/etc/passwd"), b""),
                "member run.json is not a regular file"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(UNPACK_REFUSALS))
def test_unpack_refuses_what_a_bundle_does_not_hold_and_leaves_nothing(case, tmp_path):
    entry, message = UNPACK_REFUSALS[case]
    archive = archive_of(tmp_path / "results.tar.gz", (member("summary.md"), b"ok\n"), entry)
    done = capped_vlnverse("eval", "unpack", archive, "--to", tmp_path / "out")
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in one_error_line(done.stderr)
    assert list((tmp_path / "out").iterdir()) == []


def test_unpack_refuses_headers_that_inflate_past_their_members(tmp_path):
    archive = archive_of(tmp_path / "results.tar.gz", (member("summary.md"), b"ok\n"),
                         pax={"comment": "x" * (8 << 20)})
    done = capped_vlnverse("eval", "unpack", archive, "--to", tmp_path / "out")
    assert done.returncode == 2 and "decompresses to more than" in one_error_line(done.stderr)


@pytest.mark.slow
def test_a_bundle_unpacks_and_verifies_but_not_with_a_file_added(oracle_folder, verify_dataset, tmp_path):
    archive = tmp_path / "results.tar.gz"
    assert capped_vlnverse("eval", "bundle", oracle_folder, "--to", archive).returncode == 0
    done = capped_vlnverse("eval", "unpack", archive, "--to", tmp_path / "unpacked")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "unpacked").iterdir()) == sorted(
        ["run.json", "episodes.jsonl", "summary.json", "summary.md", "environment.json", "SHA256SUMS"])
    (tmp_path / "unpacked" / "notes.py").write_text("print('hello')\n")
    done = capped_vlnverse("eval", "verify", tmp_path / "unpacked", "--dataset", verify_dataset, "--scenes-dir",
                           BUNDLED_SCENES, timeout=300)
    assert done.returncode == 1 and "sha256sums    FAIL: notes.py: not a bundle member" in done.stdout, done.stdout


def test_unpack_refuses_a_file_that_is_not_a_gzipped_tar(tmp_path):
    (tmp_path / "results.tar.gz").write_text("not an archive\n")
    done = capped_vlnverse("eval", "unpack", tmp_path / "results.tar.gz", "--to", tmp_path / "out")
    assert done.returncode == 2 and "not a results archive (a gzipped tar)" in one_error_line(done.stderr)
