"""Shared fixtures: one small generated house and its written USD file (module-scoped, real files)."""

from __future__ import annotations

import pytest

from vlnverse.scene.procgen.authoring import write_house
from vlnverse.scene.procgen.house import HouseOptions, generate_house


@pytest.fixture(scope="session")
def small_house():
    return generate_house(11, HouseOptions(min_rooms=6, max_rooms=7))


@pytest.fixture(scope="session")
def small_scene_file(small_house, tmp_path_factory):
    path = tmp_path_factory.mktemp("procgen") / "house" / "scene.usdc"
    write_house(small_house, path)
    return path
