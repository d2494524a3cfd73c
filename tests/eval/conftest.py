"""Fixtures of the harness tests: a small dataset of every task on the bundled scenes,
and one oracle run over it (shared by the sanity, resume and executor tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bundled import bundled_dataset as make_bundled_dataset


@pytest.fixture(scope="session")
def bundled_dataset(tmp_path_factory) -> Path:
    """Two coarse trajectories per bundled scene, every task type (27 episodes, 3 splits)."""
    return make_bundled_dataset(tmp_path_factory.mktemp("dataset"), per_scene=2)


@pytest.fixture(scope="session")
def oracle_run(bundled_dataset, tmp_path_factory):
    """The oracle over the whole dataset under Strict and Tel-Hop, 1 plot per group."""
    from vlnverse.eval.running.harness import EvalConfig, evaluate

    out = tmp_path_factory.mktemp("oracle_run")
    return evaluate(EvalConfig(dataset=str(bundled_dataset), out=str(out), agent="oracle", plots=1))


@pytest.fixture(scope="session")
def verify_dataset(bundled_dataset, tmp_path_factory) -> Path:
    """A private copy of the bundled dataset for the verify tests (they pass ``scenes_dir``)."""
    import shutil

    copy = tmp_path_factory.mktemp("verify") / "dataset"
    shutil.copytree(bundled_dataset, copy)
    return copy


@pytest.fixture(scope="session")
def oracle_folder(verify_dataset, tmp_path_factory) -> Path:
    """The oracle on a seeded sample of 3 episodes under Strict and Tel-Hop (never edited: copy it)."""
    from tests.eval.verify_helpers import run_eval

    out = tmp_path_factory.mktemp("verify") / "oracle"
    run_eval(verify_dataset, out)
    return out
