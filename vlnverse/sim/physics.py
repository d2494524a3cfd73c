"""Physics settings, including the evaluation modes Strict, Slide and Tel-Hop (paper §5.3).

- ``strict``: full physics; a noticeable collision (an obstacle displacing the agent by at
  least ``collision_threshold`` from its commanded motion, accumulated over consecutive
  actions in contact, see :mod:`vlnverse.sim.simulator`) fails the episode.
- ``slide``: full physics; the agent slides along obstacles, collisions are counted and
  the episode goes on (the paper's online-training setting, ``ALLOW_SLIDING``).
- ``tel_hop``: the agent teleports to the end of each action; an end pose in collision is
  moved to the nearest free location of the same navigable component, and a move of at
  least ``collision_threshold`` counts as a collision.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from vlnverse.errors import ConfigError

PHYSICS_MODES = ("strict", "slide", "tel_hop")


def physics_mode(name: str) -> str:
    """The canonical name of a physics mode, accepting any case and ``-`` for ``_``
    (``Tel-Hop``, ``tel-hop`` and ``tel_hop`` are all ``tel_hop``).

    Raises:
        ConfigError: not a physics mode (the message lists the valid ones).
    """
    mode = name.strip().lower().replace("-", "_") if isinstance(name, str) else name
    if mode not in PHYSICS_MODES:
        raise ConfigError(f"unknown physics mode {name!r}; valid: {', '.join(PHYSICS_MODES)} "
                          "(any case, '-' for '_': Tel-Hop is tel_hop)")
    return mode


@dataclass(frozen=True)
class PhysicsConfig:
    """How actions are simulated and judged.

    Attributes:
        mode: ``"strict"``, ``"slide"`` or ``"tel_hop"`` (any spelling :func:`physics_mode` takes).
        collision_threshold: Displacement (metres) that makes a collision event (0.10 in the paper).
        physics_hz: Physics steps per simulated second: 60 by default, Isaac Sim's
            ``physics_dt = 1/60``, so both backends step at the same rate (120 and other
            multiples of ``control_hz`` remain available).
        control_hz: Controller updates per simulated second (divides ``physics_hz``).
        gravity: Gravitational acceleration in m/s² (acts on movable objects).
        contact_tolerance: Penetration (metres) below which a touch is not a contact.
    """

    mode: str = "strict"
    collision_threshold: float = 0.10
    physics_hz: float = 60.0
    control_hz: float = 30.0
    gravity: float = 9.81
    contact_tolerance: float = 0.002

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", physics_mode(self.mode))
        if not 0.0 < self.collision_threshold <= 5.0:
            raise ConfigError(f"PhysicsConfig.collision_threshold must be in (0, 5], got {self.collision_threshold!r}")
        if not 0.0 < self.control_hz <= self.physics_hz <= 10000.0:
            raise ConfigError(
                f"PhysicsConfig: need 0 < control_hz <= physics_hz <= 10000, got {self.control_hz!r}, {self.physics_hz!r}"
            )
        ratio = self.physics_hz / self.control_hz
        if abs(ratio - round(ratio)) > 1e-6:
            raise ConfigError(
                f"PhysicsConfig.physics_hz ({self.physics_hz}) must be a multiple of control_hz ({self.control_hz})"
            )
        if not math.isfinite(self.gravity) or self.gravity < 0:
            raise ConfigError(f"PhysicsConfig.gravity must be >= 0, got {self.gravity!r}")
        if not 0.0 <= self.contact_tolerance < self.collision_threshold:
            raise ConfigError(f"PhysicsConfig.contact_tolerance must be in [0, collision_threshold), got {self.contact_tolerance!r}")

    @property
    def control_dt(self) -> float:
        return 1.0 / self.control_hz

    @property
    def substeps(self) -> int:
        """Physics sub-steps per control tick."""
        return int(round(self.physics_hz / self.control_hz))

    @property
    def fails_on_collision(self) -> bool:
        """Whether a collision event ends the episode as a failure."""
        return self.mode == "strict"

    @property
    def teleports(self) -> bool:
        return self.mode == "tel_hop"
