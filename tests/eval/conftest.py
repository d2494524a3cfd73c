"""Fixtures of the harness tests: a small dataset of every task on the bundled scenes,
and one oracle run over it (shared by the sanity, resume and executor tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUNDLED_SCENES = REPO / "assets" / "scenes"


@pytest.fixture(scope="session")
def bundled_dataset(tmp_path_factory) -> Path:
    """Two coarse trajectories per bundled scene, every task type (27 episodes, 3 splits)."""
    if not (BUNDLED_SCENES / "corpus.json").is_file():
        pytest.skip(f"no bundled scenes in {BUNDLED_SCENES}")
    from vlnverse.tasks.datagen import DatagenConfig, run_datagen
    from vlnverse.tasks.generate import GenerationConfig

    out = tmp_path_factory.mktemp("dataset")
    run_datagen(DatagenConfig(scenes=str(BUNDLED_SCENES), out=str(out), seed=0,
                              generation=GenerationConfig(per_scene=2)))
    return out


@pytest.fixture(scope="session")
def oracle_run(bundled_dataset, tmp_path_factory):
    """The oracle over the whole dataset under Strict and Tel-Hop, 1 plot per group."""
    from vlnverse.eval.harness import EvalConfig, evaluate

    out = tmp_path_factory.mktemp("oracle_run")
    return evaluate(EvalConfig(dataset=str(bundled_dataset), out=str(out), agent="oracle", plots=1))
