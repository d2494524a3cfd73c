"""episodes.jsonl: durable appends, resume, torn last lines, no duplicates."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from vlnverse.errors import DatasetError
from vlnverse.eval.running.store import ResultStore, dumps_record, json_safe


def rec(i, physics="strict", **extra):
    return {"episode_id": f"ep{i}", "physics": physics, "metrics": {"SR": 1.0}, **extra}


def test_append_and_reopen(tmp_path):
    path = tmp_path / "run" / "episodes.jsonl"
    store = ResultStore(path)
    assert store.append(rec(1)) and store.append(rec(1, "tel_hop")) and store.append(rec(2))
    assert not store.append(rec(1, metrics={"SR": 0.0}))  # a finished key is never rewritten
    again = ResultStore(path)
    assert again.keys() == {("ep1", "strict"), ("ep1", "tel_hop"), ("ep2", "strict")}
    assert [r["episode_id"] for r in again.records()] == ["ep1", "ep1", "ep2"]
    assert again.get(("ep1", "strict"))["metrics"] == {"SR": 1.0}
    assert len(path.read_text().splitlines()) == 3


def test_torn_last_line_is_dropped_and_the_run_continues(tmp_path):
    path = tmp_path / "episodes.jsonl"
    store = ResultStore(path)
    store.append(rec(1))
    store.append(rec(2))
    whole = path.read_bytes()
    path.write_bytes(whole + dumps_record(rec(3)).encode()[:25])  # crash in the middle of a write
    store = ResultStore(path)
    assert store.keys() == {("ep1", "strict"), ("ep2", "strict")}
    assert path.read_bytes() == whole
    store.append(rec(3))
    assert [json.loads(line)["episode_id"] for line in path.read_text().splitlines()] == ["ep1", "ep2", "ep3"]


def test_corrupt_middle_line_is_refused(tmp_path):
    path = tmp_path / "episodes.jsonl"
    path.write_text(dumps_record(rec(1)) + "\nnot json\n" + dumps_record(rec(2)) + "\n")
    with pytest.raises(DatasetError, match=r"episodes.jsonl:2: not an episode record"):
        ResultStore(path)


def test_json_safe_makes_strict_json():
    value = {"a": np.float32(1.5), "b": np.array([1, 2]), "c": math.nan, "d": (np.int64(3), math.inf),
             "e": np.bool_(True)}
    assert json_safe(value) == {"a": 1.5, "b": [1, 2], "c": None, "d": [3, None], "e": True}
    line = dumps_record({"episode_id": "x", "physics": "strict", "z": [math.inf]})
    assert json.loads(line) == {"episode_id": "x", "physics": "strict", "z": [None]}
    with pytest.raises(TypeError, match="cannot store object"):
        json_safe(object())
