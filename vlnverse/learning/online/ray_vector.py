"""Rollout sub-envs on a Ray cluster (``vlnverse train waypoint_bert --online --executor ray``).

:class:`RayVectorEnv` offers what :func:`~vlnverse.learning.online.rollout.rollout` uses of
a gymnasium vector env (``num_envs``, ``reset``, ``step``, ``close``): each sub-env is a
1-CPU Ray actor, every step sends each actor its action and stacks the replies. The
Ray session is started as ``vlnverse eval --executor ray`` starts it
(:func:`vlnverse.parallel.ray_session`: usage statistics off unless the user enables
them; a local instance when no address is given).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


class EnvActor:
    """One sub-env in a Ray worker (its renderer set up for a fresh process first)."""

    def __init__(self, make: Callable[[], Any]) -> None:
        from vlnverse.sim.gl.context import worker_setup

        worker_setup()
        self.env = make()

    def reset(self, options: dict[str, Any] | None) -> tuple[Any, dict[str, Any]]:
        return self.env.reset(options=options)

    def step(self, action: int) -> tuple[Any, ...]:
        return self.env.step(action)

    def close(self) -> None:
        self.env.close()


def stack(items: Sequence[dict[str, Any]]) -> dict[str, np.ndarray]:
    """Per-env dicts → one array per key that every env has (env-major)."""
    return {key: np.stack([np.asarray(item[key]) for item in items]) for key in items[0]
            if all(key in item for item in items)}


class RayVectorEnv:
    """Sub-envs made by ``env_fns`` as Ray actors (see the module docs).

    Args:
        env_fns: Picklable env factories, one per sub-env.
        address: Ray cluster address (``None``: a local instance, shut down on ``close``).

    Raises:
        DependencyNotInstalled: Ray is not installed (``pip install 'vlnverse[ray]'``).
    """

    def __init__(self, env_fns: Sequence[Callable[[], Any]], address: str | None = None) -> None:
        from vlnverse.parallel import ray_session

        self.num_envs = len(env_fns)
        self._session = contextlib.ExitStack()
        self._ray = ray = self._session.enter_context(ray_session(self.num_envs, address))
        try:
            actor = ray.remote(num_cpus=1)(EnvActor)
            self.actors = [actor.remote(fn) for fn in env_fns]
        except BaseException:
            self._session.close()
            raise

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        replies = self._ray.get([a.reset.remote(options) for a in self.actors])
        observations, infos = zip(*replies, strict=True)
        return stack(observations), stack(infos)

    def step(self, actions: Sequence[int]):
        replies = self._ray.get([a.step.remote(int(x)) for a, x in zip(self.actors, actions, strict=True)])
        observations, rewards, terminated, truncated, infos = zip(*replies, strict=True)
        return (stack(observations), np.asarray(rewards, dtype=np.float64), np.asarray(terminated),
                np.asarray(truncated), stack(infos))

    def close(self) -> None:
        """Close the sub-envs and end the Ray session if this started it (idempotent)."""
        actors, self.actors = getattr(self, "actors", []), []
        try:
            self._ray.get([a.close.remote() for a in actors])
            for a in actors:
                self._ray.kill(a)
        finally:
            self._session.close()
