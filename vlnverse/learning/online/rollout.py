"""Batched rollouts of the teacher env in a gymnasium vector env (one episode per sub-env)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from vlnverse.errors import ConfigError
from vlnverse.learning.online.inputs import InputSpec
from vlnverse.learning.online.teacher_env import WaypointTeacherEnv

VECTOR_KINDS = ("async", "sync", "ray")


class RolloutPolicy(Protocol):
    """What drives a rollout: actions for a batch of observations."""

    def begin(self, observations: dict[str, np.ndarray], rows: np.ndarray) -> None:
        """New episodes start in sub-envs ``rows``."""

    def act(self, observations: dict[str, np.ndarray], info: dict[str, Any], done: np.ndarray) -> np.ndarray:
        """One action per sub-env (ignored for sub-envs whose episodes are all ``done``)."""


@dataclass
class RolloutStats:
    """What one batch of episodes did."""

    episodes: int
    successes: int
    env_steps: int
    seconds: float = 0.0


def _make_env(rank: int, **kwargs: Any) -> WaypointTeacherEnv:
    return WaypointTeacherEnv(rank=rank, **kwargs)


def make_vector_env(kind: str, num_envs: int, *, dataset: str, split: str, task: str | None, physics: str,
                    spec: InputSpec, vocab: dict[str, int], max_steps: int, backend: str = "bullet",
                    ray_address: str | None = None) -> Any:
    """``num_envs`` teacher envs in worker processes (``async``), in this one (``sync``) or as
    Ray actors (``ray``, on the cluster at ``ray_address``; ``None``: a local instance);
    episodes never auto-reset (each rollout resets them)."""
    import gymnasium as gym
    from gymnasium.vector import AutoresetMode

    from vlnverse.envs.vector import async_vector_env

    if kind not in VECTOR_KINDS:
        raise ConfigError(f"unknown vector env {kind!r}; valid: {', '.join(VECTOR_KINDS)}")
    fns = [functools.partial(_make_env, rank, dataset=dataset, split=split, task=task, physics=physics, spec=spec,
                             vocab=vocab, max_steps=max_steps, backend=backend, hold_episode_end=True)
           for rank in range(num_envs)]
    if kind == "ray":
        from vlnverse.learning.online.ray_vector import RayVectorEnv

        return RayVectorEnv(fns, ray_address)
    if kind == "sync":
        return gym.vector.SyncVectorEnv(fns, autoreset_mode=AutoresetMode.DISABLED)
    return async_vector_env(fns, autoreset_mode=AutoresetMode.DISABLED)  # observations in shared memory


def rollout(vec: Any, policy: RolloutPolicy, episode_indices: Sequence[int], max_steps: int) -> RolloutStats:
    """Play the episodes ``episode_indices`` (at least one per sub-env), each for at most
    ``max_steps`` steps: sub-env ``r`` plays ``episode_indices[r::n]`` in turn, starting the
    next as soon as one ends, so that no sub-env idles while another still has episodes
    (a batch of one episode per sub-env waits for its longest episode)."""
    import time

    started = time.perf_counter()
    n = vec.num_envs
    queues = [[int(i) for i in episode_indices[r::n]] for r in range(n)]
    if not all(queues):
        raise ConfigError(f"a rollout needs at least {n} episodes (one per sub-env), got {len(episode_indices)}")
    observations, info = vec.reset(options={"episode_queues": queues})
    policy.begin(observations, np.arange(n))
    remaining = np.array([len(q) for q in queues])
    done = np.zeros(n, dtype=bool)
    successes = env_steps = 0
    for _ in range(max_steps * int(remaining.max())):
        actions = policy.act(observations, info, done)
        observations, _, _, _, info = vec.step(np.asarray(actions, dtype=np.int64))
        env_steps += int((~done).sum())
        over = np.asarray(info["episode_over"], dtype=bool) & ~done
        successes += int((over & np.asarray(info["success"], dtype=bool)).sum())
        remaining -= over
        done |= over & (remaining == 0)
        fresh = over & np.asarray(info["started"], dtype=bool)
        if fresh.any():
            policy.begin(observations, np.flatnonzero(fresh))
        if done.all():
            break
    return RolloutStats(len(episode_indices), successes, env_steps, time.perf_counter() - started)


class TeacherPolicy:
    """The scripted oracle: always the teacher's choice (a turn where there is none)."""

    def begin(self, observations: dict[str, np.ndarray], rows: np.ndarray) -> None:
        pass

    def act(self, observations: dict[str, np.ndarray], info: dict[str, Any], done: np.ndarray) -> np.ndarray:
        return np.maximum(np.asarray(info["teacher"], dtype=np.int64), 0)
