"""The env's dense reward, and its settings."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vlnverse.config import config_from_mapping
from vlnverse.errors import ConfigError
from vlnverse.sim.physics import PhysicsConfig


@dataclass(frozen=True)
class RewardConfig:
    """Dense reward: progress along the geodesic, success bonus, collision and time penalties.

    Attributes:
        progress_weight: Reward per metre of geodesic distance gained.
        success_bonus: Reward for stopping within the goal radius.
        collision_penalty: Penalty per collision event.
        step_penalty: Penalty per step (favours short episodes).
    """

    progress_weight: float = 1.0
    success_bonus: float = 10.0
    collision_penalty: float = 0.5
    step_penalty: float = 0.01

    def __post_init__(self) -> None:
        for name in ("progress_weight", "success_bonus", "collision_penalty", "step_penalty"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ConfigError(f"RewardConfig.{name} must be a finite number, got {value!r}")

    def reward(self, before: float, after: float, collided: bool, success: bool) -> float:
        """A step's reward: geodesic progress from ``before`` to ``after`` (none when either is
        infinite), the step penalty, the collision penalty and the success bonus."""
        progress = before - after if math.isfinite(before) and math.isfinite(after) else 0.0
        reward = self.progress_weight * progress - self.step_penalty
        if collided:
            reward -= self.collision_penalty
        if success:
            reward += self.success_bonus
        return float(reward)


def coerce(cls: type, value: Any, what: str) -> Any:
    if value is None:
        return cls()
    if isinstance(value, cls):
        return value
    if isinstance(value, Mapping):
        return config_from_mapping(cls, value, where=what)
    raise ConfigError(f"{what}: expected {cls.__name__} or a mapping, got {value!r}")


def physics_config(value: Any) -> PhysicsConfig:
    if isinstance(value, str):
        return PhysicsConfig(mode=value)
    return coerce(PhysicsConfig, value, "physics")
