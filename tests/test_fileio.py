"""Atomic writes: content, file mode, and nothing left behind on failure."""

from __future__ import annotations

import os
import stat

import pytest

from vlnverse.fileio import atomic_open, write_json_atomic


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
