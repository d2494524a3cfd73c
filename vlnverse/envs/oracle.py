"""The oracle: the next action along the shortest path, for each action space.

It descends the goal's geodesic distance field (the same field that gives the reward and
``geodesic_distance``), penalising points close to obstacles so that following it does
not brush walls. Imitation learning and online fine-tuning (paper §5.5) read it from
``info["oracle_action"]``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from vlnverse.scene.navigation import DistanceField
from vlnverse.scene.occupancy import OccupancyMap
from vlnverse.sim.actions import ActionSpaceSpec, DiscreteActions, VelocityActions, WaypointActions
from vlnverse.sim.agent import AgentSpec
from vlnverse.sim.types import Pose, wrap_angle

#: Metres of clearance (beyond the agent radius) below which candidate points are penalised.
CLEARANCE_MARGIN = 0.15
CLEARANCE_WEIGHT = 2.0
#: A candidate must bring the agent at least this much closer (metres).
MIN_PROGRESS = 1e-3


class Oracle:
    """Shortest-path actions towards the goals of one episode.

    Args:
        occupancy: The agent's occupancy map.
        field: Geodesic distance field to the episode's goals.
        action_space: The env's action space.
        agent: The agent spec (speed limits for velocity actions).
        stop_distance: Geodesic distance to the goal at which the oracle stops.
    """

    def __init__(self, occupancy: OccupancyMap, field: DistanceField, action_space: ActionSpaceSpec,
                 agent: AgentSpec, stop_distance: float) -> None:
        self.occupancy = occupancy
        self.field = field
        self.action_space = action_space
        self.agent = agent
        self.stop_distance = stop_distance
        clearance = occupancy.clearance - occupancy.agent_radius
        penalty = CLEARANCE_WEIGHT * np.clip(CLEARANCE_MARGIN - clearance, 0.0, None)
        # One lookup per candidate point per step: the cost of every cell, made once per goal.
        self._cost_grid = np.where(occupancy.navigable, field.distances + penalty, np.inf)

    def cost(self, points: np.ndarray) -> np.ndarray:
        """Geodesic distance plus a penalty for low clearance; ``inf`` off the navigable map."""
        points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        return np.asarray(self.occupancy.lookup(self._cost_grid, points, np.inf))

    def segment_clear(self, start: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """Whether each straight segment ``start → ends[i]`` stays on navigable cells."""
        ends = np.asarray(ends, dtype=np.float64).reshape(-1, 2)
        length = np.linalg.norm(ends - start, axis=1).max(initial=0.0)
        n = max(2, int(math.ceil(length / (0.5 * self.occupancy.resolution))) + 1)
        t = np.linspace(0.0, 1.0, n)[None, :, None]
        samples = start[None, None, :] + (ends[:, None, :] - start[None, None, :]) * t
        ok = np.asarray(self.occupancy.is_navigable(samples.reshape(-1, 2))).reshape(len(ends), n)
        return ok.all(axis=1)

    def _baseline(self, pose: Pose, here: float) -> float:
        """The cost a move must beat: the current pose's own cost (distance plus its
        clearance penalty), so that a start close to a wall is not a false local minimum."""
        own = float(self.cost(pose.xy)[0])
        return own if math.isfinite(own) else here

    def action(self, pose: Pose) -> Any:
        """The oracle action at ``pose`` (an element of the env's action space)."""
        here = float(self.field.distance_at(pose.xy))
        space = self.action_space
        if isinstance(space, DiscreteActions):
            return self._discrete(pose, here, space)
        if isinstance(space, WaypointActions):
            return self._waypoint(pose, here, space)
        if isinstance(space, VelocityActions):
            return self._velocity(pose, here, space)
        raise TypeError(f"no oracle for action space {type(space).__name__}")

    def _discrete(self, pose: Pose, here: float, space: DiscreteActions) -> int:
        if here <= self.stop_distance or not math.isfinite(here):
            return DiscreteActions.STOP
        turn = math.radians(space.turn_deg)
        steps = np.arange(-int(math.pi // turn), int(math.pi // turn) + 1)
        # Headings the agent can face with whole turns; prefer the fewest turns on ties.
        steps = steps[np.argsort(np.abs(steps), kind="stable")]
        headings = pose.yaw + steps * turn
        ends = pose.xy + space.forward_m * np.stack([np.cos(headings), np.sin(headings)], axis=1)
        cost = np.where(self.segment_clear(pose.xy, ends), self.cost(ends), np.inf)
        best = int(np.argmin(cost))
        if not cost[best] < self._baseline(pose, here) - MIN_PROGRESS:
            return DiscreteActions.STOP
        if steps[best] == 0:
            return DiscreteActions.MOVE_FORWARD
        return DiscreteActions.TURN_LEFT if steps[best] > 0 else DiscreteActions.TURN_RIGHT

    def _waypoint(self, pose: Pose, here: float, space: WaypointActions) -> np.ndarray:
        stop = np.array([0.0, 0.0, 1.0], dtype=np.float32)
        if here <= self.stop_distance or not math.isfinite(here):
            return stop
        angles = 2.0 * math.pi * np.arange(space.candidate_headings) / space.candidate_headings
        radii = np.asarray(space.candidate_distances, dtype=np.float64)
        rel = np.repeat(angles, len(radii))
        r = np.tile(radii, len(angles))
        heads = pose.yaw + rel
        ends = pose.xy + r[:, None] * np.stack([np.cos(heads), np.sin(heads)], axis=1)
        cost = np.where(self.segment_clear(pose.xy, ends), self.cost(ends), np.inf)
        best = int(np.argmin(cost))
        if not cost[best] < self._baseline(pose, here) - MIN_PROGRESS:
            return stop
        return np.array([r[best], wrap_angle(float(rel[best])), 0.0], dtype=np.float32)

    def _velocity(self, pose: Pose, here: float, space: VelocityActions) -> np.ndarray:
        if here <= self.stop_distance or not math.isfinite(here):
            return np.array([0.0, 0.0, 1.0], dtype=np.float32)
        v_max, w_max = self.agent.max_linear_speed, self.agent.max_angular_speed
        lookahead = max(2.0 * self.occupancy.resolution, min(v_max * space.period_s, here))
        rel = np.radians(np.arange(-180.0, 180.0, 5.0))
        heads = pose.yaw + rel
        ends = pose.xy + lookahead * np.stack([np.cos(heads), np.sin(heads)], axis=1)
        cost = np.where(self.segment_clear(pose.xy, ends), self.cost(ends), np.inf)
        best = int(np.argmin(cost))
        if not math.isfinite(cost[best]):
            return np.array([0.0, w_max, 0.0], dtype=np.float32)
        error = float(rel[best])
        angular = float(np.clip(error / space.period_s, -w_max, w_max))
        # Drive only when roughly facing the way; slow down to stop near the goal.
        facing = max(0.0, math.cos(error)) ** 8 if abs(error) < math.radians(30.0) else 0.0
        linear = min(v_max, here / space.period_s) * facing
        return np.array([linear, angular, 0.0], dtype=np.float32)
