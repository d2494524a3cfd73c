"""PointNav: reach a point given relative to the start (Anderson et al., 2018; habitat-lab's PointNav).

An episode's one goal is a navigable point of the scene's main component, with its
success radius ``success_distance`` (0.2 m, habitat's) stored in the goal. The agent is
told where the goal is twice: by ``instruction`` (the goal in the start frame, in words) and,
in the env, by the ``pointgoal_with_gps_compass`` observation
(:mod:`vlnverse.envs.tasks.pointnav`). Starts lie between ``min_distance`` and
``max_distance`` geodesic metres from the goal; goals keep ``goal_clearance`` metres of free
floor around the agent's body, so that a goal is reachable to within the radius without
brushing a wall. Success (env and eval): STOP within the radius, geodesic.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from vlnverse.errors import ConfigError
from vlnverse.tasks.context import SceneContext
from vlnverse.tasks.corpus import stable_hash
from vlnverse.tasks.episode import Episode, Goal, Instruction

POINTNAV = "pointnav"
#: Goals drawn per episode before a scene is declared short of PointNav episodes.
GOAL_TRIES = 16


@dataclass(frozen=True)
class PointNavConfig:
    """PointNav generation settings (``generation.families.pointnav`` of a datagen config).

    Attributes:
        success_distance: Success radius around the goal (m), stored as the goal's radius.
        min_distance: Starts are at least this geodesic distance from the goal (m).
        max_distance: ... and at most this far (m).
        goal_clearance: Free floor around the agent's body at the goal (m).
    """

    success_distance: float = 0.2
    min_distance: float = 1.0
    max_distance: float = 30.0
    goal_clearance: float = 0.2

    def __post_init__(self) -> None:
        values = (self.success_distance, self.min_distance, self.max_distance)
        if not all(isinstance(v, int | float) and math.isfinite(v) and v > 0 for v in values):
            raise ConfigError("pointnav: distances must be positive numbers")
        if not self.success_distance < self.min_distance <= self.max_distance:
            raise ConfigError("pointnav: need success_distance < min_distance <= max_distance")
        if not (isinstance(self.goal_clearance, int | float) and 0 <= self.goal_clearance < math.inf):
            raise ConfigError("pointnav: goal_clearance must be a number >= 0")


def pointnav_episodes(context: SceneContext, config: PointNavConfig, count: int, seed: int,
                      assign_splits: Callable[[int], list[str]], writer: Any) -> list[Episode]:
    """Up to ``count`` PointNav episodes of one scene.

    ``assign_splits(n)`` gives the episodes' splits; ``writer`` builds them
    (:class:`vlnverse.tasks.generate._EpisodeWriter`)."""
    rng = np.random.default_rng([seed, stable_hash(context.scene_id), stable_hash(POINTNAV)])
    occ = context.occupancy
    rows, cols = context.main_cells.T
    cells = occ.cell_to_world(context.main_cells)
    roomy = cells[occ.clearance[rows, cols] >= occ.agent_radius + config.goal_clearance]
    sampled = []
    for _ in range(count if len(roomy) else 0):
        for _ in range(GOAL_TRIES):
            goal = roomy[int(rng.integers(len(roomy)))]
            distance = np.asarray(context.navigator.distance_field(goal).distance_at(cells), dtype=np.float64)
            ok = np.flatnonzero(np.isfinite(distance) & (distance >= config.min_distance)
                                & (distance <= config.max_distance))
            if len(ok):
                start = cells[int(rng.choice(ok))]
                path = context.navigator.shortest_path(start, goal)
                sampled.append((start, float(rng.uniform(-math.pi, math.pi)), goal, path))
                break
    out = []
    for k, ((start, yaw, goal, path), split) in enumerate(zip(sampled, assign_splits(len(sampled)), strict=True)):
        instruction = Instruction(goal_in_words(start, yaw, goal))
        out.append(writer._episode(f"{context.scene_id}-p{k:04d}", POINTNAV, split, start, yaw,
                                   (Goal(position=tuple(goal), radius=config.success_distance),),
                                   path.points, path.length, instruction, writer._provenance(None)))
    return out


def goal_in_words(start: Any, yaw: float, goal: Any) -> str:
    """The goal in the start's frame: "Go to the point 3.2 m ahead and 1.5 m to your left."."""
    dx, dy = float(goal[0]) - float(start[0]), float(goal[1]) - float(start[1])
    ahead = math.cos(yaw) * dx + math.sin(yaw) * dy
    left = -math.sin(yaw) * dx + math.cos(yaw) * dy
    forward = f"{abs(ahead):.1f} m {'ahead' if ahead >= 0 else 'behind you'}"
    side = f"{abs(left):.1f} m to your {'left' if left >= 0 else 'right'}"
    return f"Go to the point {forward} and {side} of where you start, then stop."
