"""The env's dataset player: which episode each ``reset()`` plays.

Given episodes (and a dataset's) are played in their stored order, one per reset;
``reset(seed=...)`` restarts that order, ``options={"episode_id": ...}`` picks one,
``options={"episode_index": k}`` the k-th, ``options={"episode": ...}`` plays one given
episode. Without episodes, a missing start and/or goal is drawn from the reset seed.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vlnverse.envs.episode import Goal, NavEpisode, goal_from
from vlnverse.errors import ConfigError
from vlnverse.scene.occupancy import require_on_map
from vlnverse.sim.types import Pose

logger = logging.getLogger(__name__)

#: Random episodes: tries to find a goal at least ``min_goal_distance`` away.
SAMPLE_TRIES = 64


def open_dataset(dataset: Any, split: str | None, task: str | None,
                 scenes_dir: str | Path | None) -> tuple[Any, list[NavEpisode]]:
    """The :class:`~vlnverse.tasks.dataset.EpisodeDataset` of ``dataset`` and its selected episodes."""
    from vlnverse.tasks.dataset import EpisodeDataset

    if not isinstance(dataset, EpisodeDataset):
        dataset = EpisodeDataset.open(dataset, scenes_dir=scenes_dir)
    elif scenes_dir is not None:
        dataset.scenes_dir = Path(scenes_dir)
    records = dataset.episodes(split, task)
    return dataset, [NavEpisode.from_task_episode(r, str(dataset.scene_file(r))) for r in records]


def parse_start(start: Sequence[float] | None) -> tuple[float, float, float] | None:
    """``(x, y, yaw)`` from ``(x, y[, yaw])`` (None stays None)."""
    if start is None:
        return None
    try:
        values = tuple(float(v) for v in start)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"start must be (x, y, yaw), got {start!r}") from exc
    if len(values) not in (2, 3) or not all(math.isfinite(v) for v in values):
        raise ConfigError(f"start must be (x, y, yaw), got {start!r}")
    return values if len(values) == 3 else (*values, 0.0)


def start_pose(occ: Any, episode: NavEpisode) -> tuple[Pose, float]:
    """Where ``episode`` starts on the map, and how far (m) its start had to move to get there.

    A start off the floor (in a wall, in furniture) goes to reachable floor: the nearest
    navigable point of the largest component, never a sealed pocket.
    """
    x, y, yaw = episode.start
    start, snap = np.array([x, y, occ.floor_height]), 0.0
    require_on_map(occ, start, f"episode {episode.episode_id}: start")
    if not occ.is_navigable(start):
        start = np.asarray(occ.nearest_navigable(start, component=occ.largest_component), dtype=np.float64)
        snap = float(math.hypot(start[0] - x, start[1] - y))
        logger.warning("episode %s: start (%.2f, %.2f) is not navigable; moved %.2f m to (%.2f, %.2f)",
                       episode.episode_id, x, y, snap, start[0], start[1])
    return Pose(float(start[0]), float(start[1]), float(occ.floor_height), float(yaw)), snap


class EpisodePlayer:
    """The episode of each reset (see the module docs).

    Args:
        env: The env (its ``episodes``, dataset, occupancy map, navigator and ``np_random``
            are used; no ``episodes``: random ones).
        start, goal, instruction: The single-episode form's fixed parts.
    """

    def __init__(self, env: Any, start: tuple[float, float, float] | None, goal: Goal | None,
                 instruction: str) -> None:
        self.env = env
        self.start, self.goal, self.instruction = start, goal, instruction
        self.cursor = 0

    def next(self, options: Mapping[str, Any], seed: int | None) -> NavEpisode:
        env, episodes = self.env, self.env.episodes
        if "episode" in options:
            episode = options["episode"]
            if isinstance(episode, NavEpisode):
                return episode
            if isinstance(episode, Mapping):
                return NavEpisode.from_mapping(episode)
            scene = str(env.dataset.scene_file(episode)) if env.dataset is not None else None
            return NavEpisode.from_task_episode(episode, scene)
        if "episode_id" in options:
            wanted = str(options["episode_id"])
            for index, episode in enumerate(episodes):
                if episode.episode_id == wanted:
                    self.cursor = index + 1
                    return episode
            raise ConfigError(f"no episode {wanted!r} among the env's {len(episodes)} episodes")
        if episodes:
            if seed is not None and "episode_index" not in options:
                self.cursor = 0  # a seeded reset restarts the episode order
            index = int(options.get("episode_index", self.cursor)) % len(episodes)
            self.cursor = index + 1
            return episodes[index]
        start = parse_start(options.get("start")) or self.start
        goal = goal_from(options["goal"], env.goal_radius) if "goal" in options else self.goal
        return self._random(start, goal)

    def _random(self, start: tuple[float, float, float] | None, goal: Goal | None) -> NavEpisode:
        """Fill in a missing start and/or goal with random navigable points from ``np_random``."""
        env = self.env
        occ, rng = env.occupancy, env.np_random
        radius = goal.radius if goal else env.goal_radius
        if start is None and goal is None:
            component = occ.largest_component
            start_xy = self._sample(component, 1)[0]
        elif start is None:
            component = occ.component_of(occ.nearest_navigable(goal.position))
            start_xy = self._sample(component, 1)[0]
        else:
            start_xy = np.asarray(start[:2])
            component = occ.component_of(occ.nearest_navigable(start_xy))
        yaw = start[2] if start is not None else float(rng.uniform(-math.pi, math.pi))
        if goal is None:
            field = env.navigator.distance_field(start_xy)
            candidates = self._sample(component, SAMPLE_TRIES)
            distances = np.asarray(field.distance_at(candidates), dtype=np.float64)
            ok = np.flatnonzero(np.isfinite(distances) & (distances >= env.min_goal_distance))
            pick = ok[0] if len(ok) else int(np.nanargmax(np.where(np.isfinite(distances), distances, -1.0)))
            goal = Goal(tuple(candidates[pick]), radius)
        return NavEpisode(f"random-{int(rng.integers(1 << 31))}", (float(start_xy[0]), float(start_xy[1]), yaw),
                          (goal,), self.instruction)

    def _sample(self, component: int, n: int) -> np.ndarray:
        """``n`` random navigable xy points of ``component``, away from walls when possible."""
        occ = self.env.occupancy
        mask = occ.components == component
        roomy = mask & (occ.clearance >= occ.agent_radius + 0.1)
        cells = np.argwhere(roomy if roomy.any() else mask)
        picks = cells[self.env.np_random.integers(0, len(cells), size=n)]
        return occ.cell_to_world(picks)[:, :2]
