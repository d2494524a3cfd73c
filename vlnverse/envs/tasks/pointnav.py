"""PointNav in the env: the goal observed as distance and heading from the agent's own odometry.

With ``task="pointnav"`` the env observes ``pointgoal_with_gps_compass``, habitat-lab's
``PointGoalWithGPSCompass`` convention: ``[rho, phi]`` (float32), the goal's straight-line
distance (m) and its bearing (rad, in ``[-pi, pi]``, positive to the agent's left) from the
agent's current pose. The pose is the agent's own: noiseless GPS and compass, as habitat's
sensor; a start frame would give the same numbers, since distance and relative bearing do
not depend on the frame. The goal is the episode's first (PointNav episodes have one,
:mod:`vlnverse.tasks.pointnav`). Success is the generic rule: STOP within the goal's
radius (0.2 m in generated episodes; ``goal_radius`` for the env's random episodes).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from vlnverse.envs.tasks.base import TaskComponent
from vlnverse.sim.types import wrap_angle

OBSERVATION = "pointgoal_with_gps_compass"


class PointNavTask(TaskComponent):
    """The ``pointgoal_with_gps_compass`` observation (see the module docs)."""

    @classmethod
    def wanted(cls, task: str | None, settings: Mapping[str, Any]) -> bool:
        return task == "pointnav"

    def spaces(self, max_text: int, charset: frozenset[str]) -> dict[str, spaces.Space]:
        return {OBSERVATION: spaces.Box(np.array([0.0, -math.pi], dtype=np.float32),
                                        np.array([np.inf, math.pi], dtype=np.float32), dtype=np.float32)}

    def observe(self) -> dict[str, Any]:
        pose, goal = self.env.sim.pose, self.env.episode.goals[0].position
        dx, dy = float(goal[0]) - pose.x, float(goal[1]) - pose.y
        return {OBSERVATION: np.array([math.hypot(dx, dy), wrap_angle(math.atan2(dy, dx) - pose.yaw)],
                                      dtype=np.float32)}
