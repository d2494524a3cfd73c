"""Scenes for the env tests: two rooms joined by a doorway, built in memory."""

import pytest

from vlnverse.sim.testing import Box, box_room

#: An interior wall at x = 4 with a 1.2 m doorway at y ∈ [2.8, 4.0].
PARTITION = Box("Wall_4", (3.95, 0.0, 0.0), (4.05, 2.8, 2.5), (0.8, 0.8, 0.75), group="Walls")
SOFA = Box("sofa_0", (1.0, 3.0, 0.0), (2.6, 4.0, 0.8), (0.3, 0.3, 0.6), "sofa")


@pytest.fixture(scope="session")
def two_rooms():
    return box_room(8.0, 4.0, extra_walls=[PARTITION], furniture=[SOFA])


SMALL_SENSORS = {"rgb": {"kind": "rgb", "width": 32, "height": 32},
                 "depth": {"kind": "depth", "width": 32, "height": 32}}
