"""Fixtures of the task-layer tests: a small corpus of four-room houses, prepared once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tasks.house import build_house, build_scene_dir


@pytest.fixture(scope="session")
def house_file(tmp_path_factory) -> Path:
    return build_house(tmp_path_factory.mktemp("house") / "house.usda")


@pytest.fixture(scope="session")
def context(house_file):
    from vlnverse.scene.inspect import prepare_scene
    from vlnverse.tasks.context import SceneContext

    return SceneContext(prepare_scene(house_file))


@pytest.fixture(scope="session")
def corpus(tmp_path_factory) -> Path:
    """Three houses (house_0..2) and nothing else."""
    return build_scene_dir(tmp_path_factory.mktemp("corpus") / "scenes", 3)


@pytest.fixture(scope="session")
def corpus_with_corrupt(tmp_path_factory) -> Path:
    return build_scene_dir(tmp_path_factory.mktemp("corpus_bad") / "scenes", 2, corrupt=("broken",))
