"""Gymnasium environments of VLNVerse.

``import vlnverse`` registers ``VLNVerse/Nav-v0`` with gymnasium; :func:`make` is the short path::

    env = vlnverse.make(scene="assets/scenes/house_0/scene.usda", physics="strict")
    env = vlnverse.make(dataset="data/vlnverse", split="val_unseen", task="long_horizon")
"""

from __future__ import annotations

from typing import Any

import gymnasium

from vlnverse.errors import ConfigError
from vlnverse.gym_registration import NAV_ENV_ID


def make(
    scene: Any = None,
    *,
    dataset: Any = None,
    split: str | None = None,
    task: str | None = None,
    backend: str = "bullet",
    renderer: str = "auto",
    physics: Any = None,
    action_space: Any = "discrete",
    sensors: Any = None,
    start: Any = None,
    goal: Any = None,
    instruction: str = "",
    protocol: str | None = None,
    **kwargs: Any,
) -> gymnasium.Env:
    """Create ``VLNVerse/Nav-v0`` (every option: :class:`vlnverse.envs.config.NavEnvConfig`).

    ``start`` is ``(x, y, yaw)`` and ``goal`` ``(x, y)``; either defaults to a random
    navigable point drawn from the reset seed. With ``dataset`` (a dataset directory or
    ``.jsonl(.gz)`` file), ``reset()`` plays the episodes of ``split`` and ``task`` in order
    and ``scene`` may be left out. ``protocol`` names one of the paper's protocols
    (:mod:`vlnverse.envs.protocols`: ``offline_training``, ``online_training``) whose
    settings apply unless given here; otherwise physics is ``strict`` and the sensors an
    RGB-D front camera. ``max_episode_steps`` is the env's own step budget as well as the
    gymnasium time limit. ``renderer`` picks the embedded backend's camera renderer:
    ``"gl"`` (textured, lit OpenGL on the CPU), ``"tiny"`` or ``"auto"``.
    """
    from vlnverse.envs.protocols import protocol_settings

    settings = protocol_settings(protocol) if protocol is not None else {}
    settings.update({k: v for k, v in kwargs.items()})
    if physics is not None:
        settings["physics"] = physics
    if sensors is not None:
        settings["sensors"] = sensors
    settings.setdefault("physics", "strict")
    settings.setdefault("sensors", ("rgb", "depth"))
    if dataset is not None:
        settings.update(dataset=dataset, split=split, task=task)
    elif split is not None or task is not None:
        settings.update(split=split, task=task)
    steps = settings.pop("max_episode_steps", None)
    if steps is not None and (not isinstance(steps, int) or isinstance(steps, bool) or steps < 1):
        raise ConfigError(f"max_episode_steps must be a positive integer, got {steps!r}")
    env = gymnasium.make(NAV_ENV_ID, max_episode_steps=steps, scene=scene, backend=backend,
                         renderer=renderer, action_space=action_space, start=start, goal=goal,
                         instruction=instruction, **settings)
    if steps is not None:
        env.unwrapped.max_episode_steps = steps  # the env's budget agrees with the time limit
    return env


__all__ = ["NAV_ENV_ID", "make"]
