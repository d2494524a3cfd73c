"""Gymnasium environments of VLNVerse.

Importing this package registers ``VLNVerse/Nav-v0``; :func:`make` is the short path::

    env = vlnverse.make(scene="assets/scenes/house_0/scene.usda", physics="strict")
    env = vlnverse.make(dataset="data/vlnverse", split="val_unseen", task="long_horizon")
"""

from __future__ import annotations

from typing import Any

import gymnasium
from gymnasium.envs.registration import register, registry

NAV_ENV_ID = "VLNVerse/Nav-v0"

if NAV_ENV_ID not in registry:
    register(id=NAV_ENV_ID, entry_point="vlnverse.envs.nav_env:NavEnv")


def make(
    scene: Any = None,
    *,
    dataset: Any = None,
    split: str | None = None,
    task: str | None = None,
    backend: str = "bullet",
    physics: Any = "strict",
    action_space: Any = "discrete",
    sensors: Any = ("rgb", "depth"),
    start: Any = None,
    goal: Any = None,
    instruction: str = "",
    **kwargs: Any,
) -> gymnasium.Env:
    """Create ``VLNVerse/Nav-v0`` (see :class:`vlnverse.envs.nav_env.NavEnv` for every option).

    ``start`` is ``(x, y, yaw)`` and ``goal`` ``(x, y)``; either defaults to a random
    navigable point drawn from the reset seed. With ``dataset`` (a dataset directory or
    ``.jsonl(.gz)`` file), ``reset()`` plays the episodes of ``split`` and ``task`` in order
    and ``scene`` may be left out.
    """
    if dataset is not None:
        kwargs.update(dataset=dataset, split=split, task=task)
    elif split is not None or task is not None:
        kwargs.update(split=split, task=task)
    return gymnasium.make(
        NAV_ENV_ID, scene=scene, backend=backend, physics=physics, action_space=action_space,
        sensors=sensors, start=start, goal=goal, instruction=instruction, **kwargs,
    )


__all__ = ["NAV_ENV_ID", "make"]
