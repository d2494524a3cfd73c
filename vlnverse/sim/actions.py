"""Action spaces: discrete (VLN-CE), continuous velocity, and polar waypoints.

Each action space turns an agent's action into a motion command that the same
physics-aware controller executes (``vlnverse.sim.controller``); ``None`` means STOP.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces

from vlnverse.errors import ConfigError, InvalidActionError
from vlnverse.sim.agent import AgentSpec


@dataclass(frozen=True)
class Displacement:
    """Turn in place by ``turn`` radians (CCW positive), then drive ``forward`` metres."""

    turn: float = 0.0
    forward: float = 0.0


@dataclass(frozen=True)
class VelocityCommand:
    """Track a body-frame linear (m/s) and yaw-rate (rad/s) target for ``duration`` seconds."""

    linear: float
    angular: float
    duration: float


MotionCommand = Displacement | VelocityCommand


@dataclass(frozen=True)
class ActionSpaceSpec:
    """Base of the action-space configs."""

    name: ClassVar[str] = ""

    def gym_space(self, agent: AgentSpec) -> spaces.Space:
        """The gymnasium space of actions."""
        raise TypeError(f"{type(self).__name__} is abstract")

    def to_command(self, action: Any, agent: AgentSpec) -> MotionCommand | None:
        """The motion command for ``action``; ``None`` for STOP."""
        raise TypeError(f"{type(self).__name__} is abstract")

    @property
    def default_max_steps(self) -> int:
        """The step budget an env uses unless told otherwise."""
        return 500


@dataclass(frozen=True)
class DiscreteActions(ActionSpaceSpec):
    """VLN-CE actions: 0 STOP, 1 MOVE_FORWARD, 2 TURN_LEFT, 3 TURN_RIGHT.

    Attributes:
        forward_m: Length of MOVE_FORWARD in metres (0.25 in VLN-CE).
        turn_deg: Angle of TURN_LEFT/TURN_RIGHT in degrees (15 in VLN-CE).
    """

    name: ClassVar[str] = "discrete"
    STOP: ClassVar[int] = 0
    MOVE_FORWARD: ClassVar[int] = 1
    TURN_LEFT: ClassVar[int] = 2
    TURN_RIGHT: ClassVar[int] = 3
    forward_m: float = 0.25
    turn_deg: float = 15.0

    def __post_init__(self) -> None:
        if not 0.0 < self.forward_m <= 5.0:
            raise ConfigError(f"DiscreteActions.forward_m must be in (0, 5], got {self.forward_m!r}")
        if not 0.0 < self.turn_deg <= 180.0:
            raise ConfigError(f"DiscreteActions.turn_deg must be in (0, 180], got {self.turn_deg!r}")

    def gym_space(self, agent: AgentSpec) -> spaces.Space:
        return spaces.Discrete(4)

    def to_command(self, action: Any, agent: AgentSpec) -> MotionCommand | None:
        if isinstance(action, (bool, np.bool_)):  # True == 1 in Python, but it is no action
            raise InvalidActionError(f"discrete action must be an integer 0-3, got {action!r}")
        try:
            index = int(action)
        except (TypeError, ValueError) as exc:
            raise InvalidActionError(f"discrete action must be an integer 0-3, got {action!r}") from exc
        if index != action or not 0 <= index <= 3:
            raise InvalidActionError(f"discrete action must be an integer 0-3, got {action!r}")
        if index == self.STOP:
            return None
        if index == self.MOVE_FORWARD:
            return Displacement(forward=self.forward_m)
        turn = math.radians(self.turn_deg)
        return Displacement(turn=turn if index == self.TURN_LEFT else -turn)


def _box_action(action: Any, size: int, what: str) -> np.ndarray:
    arr = np.asarray(action, dtype=np.float64).reshape(-1)
    if arr.shape != (size,) or not np.all(np.isfinite(arr)):
        raise InvalidActionError(f"{what} action must be {size} finite numbers, got {action!r}")
    return arr


@dataclass(frozen=True)
class VelocityActions(ActionSpaceSpec):
    """Continuous control: ``(linear m/s, angular rad/s, stop)`` held for one control period.

    ``stop >= 0.5`` means STOP. Velocities are clipped to the agent's limits and the
    controller respects its acceleration limits, so motion carries over between steps.

    Attributes:
        period_s: Simulated seconds each action lasts.
        allow_backward: Whether negative linear velocities are allowed.
    """

    name: ClassVar[str] = "velocity"
    period_s: float = 0.5
    allow_backward: bool = False

    def __post_init__(self) -> None:
        if not 0.0 < self.period_s <= 10.0:
            raise ConfigError(f"VelocityActions.period_s must be in (0, 10], got {self.period_s!r}")

    def gym_space(self, agent: AgentSpec) -> spaces.Space:
        v, w = agent.max_linear_speed, agent.max_angular_speed
        low = np.array([-v if self.allow_backward else 0.0, -w, 0.0], dtype=np.float32)
        return spaces.Box(low, np.array([v, w, 1.0], dtype=np.float32), dtype=np.float32)

    def to_command(self, action: Any, agent: AgentSpec) -> MotionCommand | None:
        linear, angular, stop = _box_action(action, 3, "velocity")
        if stop >= 0.5:
            return None
        v, w = agent.max_linear_speed, agent.max_angular_speed
        linear = float(np.clip(linear, -v if self.allow_backward else 0.0, v))
        return VelocityCommand(linear, float(np.clip(angular, -w, w)), self.period_s)

    @property
    def default_max_steps(self) -> int:
        return 500


@dataclass(frozen=True)
class WaypointActions(ActionSpaceSpec):
    """Polar waypoints relative to the agent: ``(r metres, theta radians, stop)``.

    The agent turns by ``theta`` (CCW positive) and drives ``r`` metres; ``stop >= 0.5``
    means STOP. This is the action of waypoint-predictor and LLM agents (DSCD-Nav).

    Attributes:
        max_distance: Largest allowed ``r`` in metres.
        candidate_headings: Number of evenly spaced headings of the oracle's candidates.
        candidate_distances: Radii of the oracle's candidates in metres.
    """

    name: ClassVar[str] = "waypoint"
    max_distance: float = 3.0
    candidate_headings: int = 12
    candidate_distances: tuple[float, ...] = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0)

    def __post_init__(self) -> None:
        if not 0.0 < self.max_distance <= 20.0:
            raise ConfigError(f"WaypointActions.max_distance must be in (0, 20], got {self.max_distance!r}")
        if not isinstance(self.candidate_headings, int) or self.candidate_headings < 1:
            raise ConfigError(f"WaypointActions.candidate_headings must be a positive integer, got {self.candidate_headings!r}")
        if not self.candidate_distances or any(
            not 0.0 < d <= self.max_distance for d in self.candidate_distances
        ):
            raise ConfigError(
                f"WaypointActions.candidate_distances must be non-empty, each in (0, max_distance], got {self.candidate_distances!r}"
            )

    def gym_space(self, agent: AgentSpec) -> spaces.Space:
        low = np.array([0.0, -math.pi, 0.0], dtype=np.float32)
        high = np.array([self.max_distance, math.pi, 1.0], dtype=np.float32)
        return spaces.Box(low, high, dtype=np.float32)

    def to_command(self, action: Any, agent: AgentSpec) -> MotionCommand | None:
        r, theta, stop = _box_action(action, 3, "waypoint")
        if stop >= 0.5:
            return None
        r = float(np.clip(r, 0.0, self.max_distance))
        return Displacement(turn=math.remainder(float(theta), 2.0 * math.pi), forward=r)

    @property
    def default_max_steps(self) -> int:
        return 50


ACTION_SPACES: dict[str, type[ActionSpaceSpec]] = {
    cls.name: cls for cls in (DiscreteActions, VelocityActions, WaypointActions)
}


def make_action_space(spec: Any) -> ActionSpaceSpec:
    """An action-space config from a name, a mapping ``{"name": ..., **params}`` or a spec.

    Raises:
        ConfigError: Unknown action space or parameter.
    """
    if isinstance(spec, ActionSpaceSpec):
        return spec
    params: dict[str, Any] = {}
    if isinstance(spec, dict):
        params = dict(spec)
        spec = params.pop("name", None)
    if spec not in ACTION_SPACES:
        raise ConfigError(f"unknown action space {spec!r}; valid: {', '.join(sorted(ACTION_SPACES))}")
    from vlnverse.config import config_from_mapping

    return config_from_mapping(ACTION_SPACES[spec], params, where=f"action_space {spec}")
