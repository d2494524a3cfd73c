"""ARNA's navigation (Algorithm 1's inner loop): a goal from a tool driven to, one waypoint
action per environment step.

The path is A* over the agent's own occupancy grid with the body radius plus ``clearance``,
replanned every step as the map grows and after bumps; under Strict physics (a collision
ends the episode) it keeps to seen floor. A move goes as far along the path as a straight
line keeps that clearance (at most ``waypoint_step``). Navigation ends at the goal (within
``goal_tolerance``), at the reachable point nearest it, when the goal is unreachable on the
map, or after ``max_nav_steps``; then the memory is updated from the observation buffer.
"""

from __future__ import annotations

import math

import numpy as np

from vlnverse.agents.arna.state import Part
from vlnverse.agents.arna.worldmodel import UNKNOWN_COST


class Navigator(Part):
    """Drives the robot to the goal of ``state.nav``."""

    def action(self, pose: np.ndarray, bump: bool) -> np.ndarray | None:
        """The next waypoint toward the navigation goal, or None once it ended."""
        nav, cfg = self.state.nav, self.config
        goal = nav.goal
        if goal.rotate is not None:
            if nav.steps:
                nav.done = f"rotated {math.degrees(goal.rotate):.0f} deg"
                return None
            nav.steps += 1
            return np.array([0.0, math.remainder(goal.rotate, 2 * math.pi), 0.0], dtype=np.float32)
        if np.linalg.norm(goal.point - pose[:2]) <= cfg.goal_tolerance:
            nav.done = f"reached {goal.label}"
            return None
        if nav.steps >= cfg.max_nav_steps:
            nav.done = f"gave up on {goal.label} after {nav.steps} steps"
            return None
        strict = self.state.episode.physics == "strict"   # a collision ends the episode: stay on seen floor
        path = self.state.graph.grid.plan(pose, goal.point, cfg.waypoints.body_radius + cfg.clearance,
                                          unknown_cost=math.inf if strict else UNKNOWN_COST)
        if path is None:
            nav.done = f"{goal.label} is unreachable on the current map"
            return None
        if not path or np.linalg.norm(path[-1] - pose[:2]) <= cfg.goal_tolerance:
            nav.done = f"reached the reachable point nearest {goal.label}"
            return None
        target = self.state.graph.grid.straight(pose, path, cfg.waypoint_step)
        dx, dy = target - pose[:2]
        nav.steps += 1
        return np.array([min(math.hypot(dx, dy), cfg.waypoint_step),
                         math.remainder(math.atan2(dy, dx) - pose[3], 2 * math.pi), 0.0], dtype=np.float32)

    def arrive(self) -> str:
        """Close the navigation: MEMORYUPDATE from the observation buffer; how it ended."""
        state = self.state
        nav, state.nav = state.nav, None
        if nav.new_images or nav.new_objects:
            self.agent.memory_writer.after_navigation(nav)
        return nav.done or "ended"
