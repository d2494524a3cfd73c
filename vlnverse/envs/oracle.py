"""The oracle: the next action along the shortest path, for each action space.

It descends the goal's geodesic distance field (the same field that gives the reward and
``geodesic_distance``), penalising points close to obstacles so that following it does
not brush walls. Imitation learning and online fine-tuning (paper §5.5) read it from
``info["oracle_action"]``.
"""

from __future__ import annotations

import functools
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


@functools.lru_cache(maxsize=8)
def _turn_steps(turn_deg: float) -> tuple[np.ndarray, np.ndarray]:
    """Whole turns of ``turn_deg`` the agent can face, fewest first (stable on ties), and
    their angles (radians): constant per action space, so made once."""
    turn = math.radians(turn_deg)
    steps = np.arange(-int(math.pi // turn), int(math.pi // turn) + 1)
    steps = steps[np.argsort(np.abs(steps), kind="stable")]
    turns = steps * turn
    steps.flags.writeable = turns.flags.writeable = False
    return steps, turns


@functools.lru_cache(maxsize=64)
def _fractions(n: int) -> np.ndarray:
    """``n`` evenly spaced fractions of a segment, shaped to broadcast over (segments, samples, xy)."""
    fractions = np.linspace(0.0, 1.0, n)[None, :, None]
    fractions.flags.writeable = False
    return fractions


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

    def reachable_cost(self, start: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """The cost of each of ``ends`` (geodesic distance plus a penalty for low clearance)
        whose straight segment from ``start`` stays on navigable cells; ``inf`` for the others.

        The segments' samples and the ends share one cell lookup (this runs every step)."""
        ends = np.asarray(ends, dtype=np.float64).reshape(-1, 2)
        occ = self.occupancy
        length = np.linalg.norm(ends - start, axis=1).max(initial=0.0)
        n = max(2, int(math.ceil(length / (0.5 * occ.resolution))) + 1)
        samples = start[None, None, :] + (ends[:, None, :] - start[None, None, :]) * _fractions(n)
        rows, cols, inside = occ.cell_indices(np.concatenate([samples.reshape(-1, 2), ends]))
        split = len(ends) * n
        clear = (inside[:split] & occ.navigable[rows[:split], cols[:split]]).reshape(len(ends), n).all(axis=1)
        reached = clear & inside[split:]
        return np.where(reached, self._cost_grid[rows[split:], cols[split:]], np.inf)

    def _baseline(self, pose: Pose, here: float) -> float:
        """The cost a move must beat: the current pose's own cost (distance plus its
        clearance penalty), so that a start close to a wall is not a false local minimum."""
        own = float(self.occupancy.lookup(self._cost_grid, pose.xy, np.inf))
        return own if math.isfinite(own) else here

    def action(self, pose: Pose, distance: float | None = None) -> Any:
        """The oracle action at ``pose`` (an element of the env's action space); ``distance``
        is the field's distance at ``pose`` when the caller has it already."""
        here = float(self.field.distance_at(pose.xy)) if distance is None else distance
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
        steps, turns = _turn_steps(space.turn_deg)
        headings = pose.yaw + turns
        ends = pose.xy + space.forward_m * np.stack([np.cos(headings), np.sin(headings)], axis=1)
        cost = self.reachable_cost(pose.xy, ends)
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
        cost = self.reachable_cost(pose.xy, ends)
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
        cost = self.reachable_cost(pose.xy, ends)
        best = int(np.argmin(cost))
        if not math.isfinite(cost[best]):
            return np.array([0.0, w_max, 0.0], dtype=np.float32)
        error = float(rel[best])
        angular = float(np.clip(error / space.period_s, -w_max, w_max))
        # Drive only when roughly facing the way; slow down to stop near the goal.
        facing = max(0.0, math.cos(error)) ** 8 if abs(error) < math.radians(30.0) else 0.0
        linear = min(v_max, here / space.period_s) * facing
        return np.array([linear, angular, 0.0], dtype=np.float32)
