"""The env online training steps: choose a candidate (or STOP); ``info`` carries the oracle.

:class:`WaypointTeacherEnv` plays a dataset split in a :class:`~vlnverse.envs.nav_env.NavEnv`
with the ``waypoint`` action space under the configured physics. Its action is an index
into the step's candidates (``K`` = STOP), its observation the arrays of
:class:`~vlnverse.learning.online.inputs.StepInputs`. ``info["teacher"]`` is the oracle
choice of paper §5.5: STOP when the geodesic distance to the goal is below
``stop_distance`` (1.5 m), else the candidate whose end point has the shortest geodesic
distance to the goal (privileged: a teacher signal for training only), ``-1`` when no
candidate is free; ``info["episode_over"]`` says whether the episode has ended. With
``hold_episode_end=True`` (how rollouts use it) the end is reported only there, never as
``terminated``/``truncated``: ``reset(options={"episode_queues": [[...], ...]})`` gives the
env of rank ``r`` the episodes ``episode_queues[r]`` to play in turn; when one ends the next
starts in the same step (its first observation is returned, ``info["started"]`` is set and
``info["success"]`` is the ended episode's), and after the last one later steps repeat its
final observation. A vector env thus keeps every sub-env busy until its queue is empty,
without auto-resetting (and rendering) anything after that.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from vlnverse.learning.online.inputs import InputBuilder, InputSpec, StepInputs

ORACLE_STOP_DISTANCE = 1.5
NO_TEACHER = -1


class WaypointTeacherEnv(gym.Env):
    """See the module docs.

    Args:
        dataset: Dataset folder.
        split: Split to play.
        task: Task (``None``: every task of the split).
        physics: ``strict``, ``slide`` or ``tel_hop``.
        spec: The policy's inputs (panorama, candidate generator).
        vocab: Word → id of the instruction vocabulary.
        max_steps: Step budget of an episode.
        rank: This env's position in a vector env.
        stop_distance: The oracle stops within this geodesic distance (m).
        backend: Simulator backend.
        hold_episode_end: Report the end of an episode in ``info`` only (see the module docs).
    """

    metadata = {"render_modes": []}

    def __init__(self, dataset: str, split: str, task: str | None, physics: str, spec: InputSpec,
                 vocab: dict[str, int], max_steps: int, rank: int = 0,
                 stop_distance: float = ORACLE_STOP_DISTANCE, backend: str = "bullet",
                 hold_episode_end: bool = False) -> None:
        from vlnverse.envs.nav_env import NavEnv

        self.nav = NavEnv(dataset=dataset, split=split, task=task, physics=physics, backend=backend,
                          action_space="waypoint", sensors=spec.sensors(), max_episode_steps=max_steps)
        self.inputs = InputBuilder(spec, vocab)
        self.rank, self.stop_distance, self.hold_episode_end = rank, stop_distance, hold_episode_end
        self.observation_space = spaces.Dict({name: spaces.Box(0 if dtype != np.float32 else -np.inf,
                                                               255 if dtype == np.uint8 else np.inf, shape, dtype)
                                              for name, (shape, dtype) in self.inputs.array_shapes().items()})
        self.action_space = spaces.Discrete(spec.max_candidates + 1)
        self._step: StepInputs | None = None
        self._last: tuple[Any, ...] | None = None
        self._queue: list[int] = []

    @property
    def episodes(self) -> int:
        return len(self.nav.episodes)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        queues = (options or {}).get("episode_queues")
        self._queue = [int(i) for i in queues[self.rank]] if queues is not None else []
        return self._start(seed)

    def _start(self, seed: int | None = None):
        nav_options = {"episode_index": self._queue.pop(0)} if self._queue else {}
        obs, info = self.nav.reset(seed=seed, options=nav_options)
        self._last = None
        return self._observe(obs, info, False)

    def step(self, action: Any):
        if self._last is not None:  # held: the episode is over, repeat its end
            obs, info = self._last
            return obs, 0.0, False, False, info
        obs, reward, terminated, truncated, info = self.nav.step(self._step.action(int(action)))
        over = terminated or truncated
        if over and self.hold_episode_end and self._queue:  # the next episode of the queue starts in this step
            out_obs, out_info = self._start()
            out_info.update(episode_over=True, started=True, success=info["success"])
            return out_obs, reward, False, False, out_info
        out_obs, out_info = self._observe(obs, info, over)
        if over and self.hold_episode_end:
            self._last = (out_obs, out_info)
            return out_obs, reward, False, False, out_info
        return out_obs, reward, terminated, truncated, out_info

    def _observe(self, obs: dict[str, Any], info: dict[str, Any],
                 over: bool) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        self._step = self.inputs(obs)
        out = {k: v for k, v in info.items() if k in ("geodesic_distance", "success", "collision", "fail_reason",
                                                      "episode_id", "path_length", "steps")}
        out["episode_over"], out["started"] = over, False
        out["teacher"] = self.teacher(self._step, info)
        return self._step.arrays, out

    def teacher(self, step: StepInputs, info: dict[str, Any]) -> int:
        """The oracle's choice: STOP near the goal, else the candidate nearest the goal;
        ``NO_TEACHER`` when no candidate is free (the action then turns in place)."""
        if info["geodesic_distance"] < self.stop_distance:
            return step.stop_index
        if not step.candidates:
            return NO_TEACHER
        distances = self.nav.goal_distances(step.world_points(info["pose"]))
        active = distances[info["subgoal_index"]] if self.nav.episode.sequential else distances.min(axis=0)
        return int(np.argmin(np.where(np.isfinite(active), active, np.inf)))

    def close(self) -> None:
        self.nav.close()
