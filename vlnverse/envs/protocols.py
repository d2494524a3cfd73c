"""The paper's experimental protocols as named env settings (§5.2, §5.5, A.2.4, C.2.1).

``vlnverse.envs.make(..., protocol="online_training")`` applies a protocol's settings;
keywords given explicitly win. Without a protocol the env keeps its evaluation defaults
(500 discrete steps, the oracle stopping 0.5 m from the goal, an RGB-D front camera).

- ``offline_training`` (§5.2, A.2.4): the 200-step trajectory cap of offline training,
  front RGB 224×224 and depth 256×256 (HFOV 90°, depth normalized over 10 m).
- ``online_training`` (§5.5, A.2.4, C.2.1): the oracle stops once the geodesic distance
  to the goal is below 1.5 m, the 12 × 30° RGB-D panorama rig, sliding along obstacles
  (``ALLOW_SLIDING: True``) with collisions counted, and the VLN-BERT trajectory cap of
  35 waypoint steps (``MAX_TRAJ_LEN``).
"""

from __future__ import annotations

from typing import Any

from vlnverse.errors import ConfigError

OFFLINE_MAX_STEPS = 200
"""Trajectory cap of offline training (§5.2: "capped at 200 steps")."""
ONLINE_ORACLE_STOP = 1.5
"""Oracle stop distance of online training (§5.5: "less than 1.5 meters")."""

PROTOCOLS: dict[str, dict[str, Any]] = {
    "offline_training": {
        "max_episode_steps": OFFLINE_MAX_STEPS,
        "sensors": {"rgb": {"kind": "rgb", "width": 224, "height": 224},
                    "depth": {"kind": "depth", "width": 256, "height": 256}},
    },
    "online_training": {
        "oracle_stop_distance": ONLINE_ORACLE_STOP,
        "sensors": "panorama",
        "physics": "slide",
        "max_episode_steps": 35,
    },
}


def protocol_settings(name: str) -> dict[str, Any]:
    """The :class:`~vlnverse.envs.nav_env.NavEnv` keywords of protocol ``name`` (a copy).

    Raises:
        ConfigError: unknown protocol (the message lists the valid ones).
    """
    if name not in PROTOCOLS:
        raise ConfigError(f"unknown protocol {name!r}; valid: {', '.join(sorted(PROTOCOLS))}")
    return dict(PROTOCOLS[name])
