"""The embodied agent: a physical cylinder with kinematic limits (paper §3.1)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from vlnverse.errors import ConfigError


def _positive(owner: str, **values: float) -> None:
    for name, value in values.items():
        if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise ConfigError(f"{owner}.{name} must be a positive number, got {value!r}")


@dataclass(frozen=True)
class AgentSpec:
    """A cylindrical agent body and its motion limits.

    Defaults follow the R2R-CE agent the paper uses (radius 0.30 m, height 1.50 m).

    Attributes:
        radius: Cylinder radius in metres.
        height: Cylinder height in metres (top of the body above the floor).
        mass: Body mass in kg; obstacles deflect the agent according to it.
        max_linear_speed: Forward/backward speed limit in m/s.
        max_linear_accel: Linear acceleration limit in m/s².
        max_angular_speed_deg: Yaw-rate limit in deg/s.
        max_angular_accel_deg: Yaw acceleration limit in deg/s².
        camera_height: Height of the default camera mount above the floor (metres).
        step_height: Clearance under the collider (metres): obstacles lower than this
            are stepped over, matching the occupancy map's ``step_height``.
        friction: Friction coefficient of the body against scene geometry; 0 lets the
            agent slide along walls it brushes.
    """

    radius: float = 0.30
    height: float = 1.50
    mass: float = 40.0
    max_linear_speed: float = 1.0
    max_linear_accel: float = 4.0
    max_angular_speed_deg: float = 120.0
    max_angular_accel_deg: float = 720.0
    camera_height: float = 1.25
    step_height: float = 0.10
    friction: float = 0.0

    def __post_init__(self) -> None:
        _positive(
            "AgentSpec",
            radius=self.radius,
            height=self.height,
            mass=self.mass,
            max_linear_speed=self.max_linear_speed,
            max_linear_accel=self.max_linear_accel,
            max_angular_speed_deg=self.max_angular_speed_deg,
            max_angular_accel_deg=self.max_angular_accel_deg,
            camera_height=self.camera_height,
        )
        if not 0.0 <= self.step_height < self.height:
            raise ConfigError(
                f"AgentSpec.step_height must be in [0, height={self.height}), got {self.step_height!r}"
            )
        if not 0.0 <= self.friction <= 10.0:
            raise ConfigError(f"AgentSpec.friction must be in [0, 10], got {self.friction!r}")

    @property
    def max_angular_speed(self) -> float:
        """Yaw-rate limit in rad/s."""
        return math.radians(self.max_angular_speed_deg)

    @property
    def max_angular_accel(self) -> float:
        """Yaw acceleration limit in rad/s²."""
        return math.radians(self.max_angular_accel_deg)
