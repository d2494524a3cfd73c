"""Executor plumbing: chunking by scene and physics, argument checks."""

from __future__ import annotations

import pytest

from vlnverse.errors import ConfigError
from vlnverse.eval.executors import chunk_items, run_items
from vlnverse.eval.worker import RunSpec, WorkItem


def items(groups):
    return [WorkItem({"episode_id": f"{scene}-{physics}-{i}"}, physics, scene)
            for scene, physics, n in groups for i in range(n)]


def test_chunks_never_mix_scenes_or_physics_and_keep_order():
    work = items([("a", "strict", 17), ("a", "tel_hop", 17), ("b", "strict", 3)])
    chunks = chunk_items(work, workers=2)  # at most ceil(37 / 8) = 5 per chunk
    assert [len(c) for c in chunks] == [5, 5, 5, 2, 5, 5, 5, 2, 3]
    assert [i for c in chunks for i in c] == work
    assert all(len({(i.scene_file, i.physics) for i in c}) == 1 for c in chunks)
    assert chunk_items(work[:1], workers=4) == [work[:1]]


def test_run_items_checks_its_arguments():
    with pytest.raises(ConfigError, match="unknown executor 'dask'"):
        run_items(RunSpec(agent="oracle"), [], print, executor="dask")
    with pytest.raises(ConfigError, match="workers must be a positive integer"):
        run_items(RunSpec(agent="oracle"), [], print, workers=0)
