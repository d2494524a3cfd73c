"""Atomic writes: content, file mode, and nothing left behind on failure."""

from __future__ import annotations

import os
import stat

import pytest

from vlnverse.errors import OutputError
from vlnverse.fileio import (
    OutputLock,
    atomic_open,
    prepare_output_dir,
    write_bytes_atomic,
    write_json_atomic,
)


def test_atomic_json_is_sorted_and_has_the_usual_mode(tmp_path):
    path = tmp_path / "a" / "b.json"
    write_json_atomic(path, {"b": 1, "a": 2})
    assert path.read_text() == '{\n  "a": 2,\n  "b": 1\n}\n'
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask


def test_failure_keeps_the_old_file_and_leaves_no_temp(tmp_path):
    path = tmp_path / "x.txt"
    path.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_open(path) as handle:
            handle.write("new")
            raise RuntimeError("boom")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["x.txt"]


def test_writes_into_a_read_only_folder_are_one_line_output_errors(tmp_path):
    from tests.fsfaults import read_only_folder

    with read_only_folder(tmp_path / "ro") as folder:
        with pytest.raises(OutputError, match=rf"^cannot write {folder}/x.json: (read-only file system|permission denied)$"):
            write_json_atomic(folder / "x.json", {})
        with pytest.raises(OutputError, match=rf"^cannot write {folder}: (read-only file system|permission denied)$"):
            prepare_output_dir(folder)
        with pytest.raises(OutputError, match="cannot write .*/ro/sub: "):
            prepare_output_dir(folder / "sub")


def test_a_full_disk_keeps_the_old_file(tmp_path):
    from tests.fsfaults import small_disk

    with small_disk(tmp_path / "disk", 8):
        path = tmp_path / "disk" / "x.bin"
        write_bytes_atomic(path, b"old")
        with pytest.raises(OutputError, match=r"cannot write .*x.bin: no space left on device"):
            write_bytes_atomic(path, b"n" * 64 * 1024)
        assert path.read_bytes() == b"old"
        assert [p.name for p in path.parent.iterdir()] == ["x.bin"]


def test_an_output_path_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(OutputError, match=r"cannot write .*/f: it is a file, not a folder"):
        prepare_output_dir(tmp_path / "f")


def test_a_second_writer_is_refused_until_the_first_lets_go(tmp_path):
    import subprocess
    import sys

    holder = ("import sys, time; from vlnverse.fileio import OutputLock\n"
              "with OutputLock(sys.argv[1]):\n    print('held', flush=True); time.sleep(60)\n")
    process = subprocess.Popen([sys.executable, "-c", holder, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "held"
        with pytest.raises(OutputError, match="is being written by another run"):
            with OutputLock(tmp_path):
                pass
    finally:
        process.kill()
        process.wait(timeout=30)
    with OutputLock(tmp_path):  # the kernel released the killed holder's lock
        pass


def test_stale_temp_files_of_a_killed_writer_are_removed(tmp_path):
    from vlnverse.fileio import remove_stale_temp_files

    (tmp_path / "a").mkdir()
    for name in (".x.json.abc.tmp", "a/.y.png.def.tmp", "keep.json", "a/keep.tmp"):
        (tmp_path / name).write_text("")
    remove_stale_temp_files(tmp_path)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()) == [
        "a/keep.tmp", "keep.json"]
