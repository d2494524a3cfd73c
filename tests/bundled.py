"""Datasets made from the bundled scenes (``assets/scenes``) for tests that need real episodes."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BUNDLED_SCENES = REPO / "assets" / "scenes"


def bundled_dataset(out: Path, **generation) -> Path:
    """Run datagen (seed 0, prior instructions) over the bundled scenes into ``out``.

    ``generation`` are :class:`~vlnverse.tasks.generate.GenerationConfig` fields. Skips the
    calling test when the bundled scenes are missing.
    """
    if not (BUNDLED_SCENES / "corpus.json").is_file():
        pytest.skip(f"no bundled scenes in {BUNDLED_SCENES}")
    from vlnverse.tasks.datagen import DatagenConfig, run_datagen
    from vlnverse.tasks.generate import GenerationConfig

    run_datagen(DatagenConfig(scenes=str(BUNDLED_SCENES), out=str(out), seed=0,
                              generation=GenerationConfig(**generation)))
    return out
