"""The agent's panoramic rig and what its own depth says about the space around it.

View ``i`` of the rig looks ``i * 360 / views`` degrees to the left of the heading (the
convention of :meth:`vlnverse.sim.rig.SensorRig.add_panorama`). Geometry is in the agent
frame: x forward, y left, metres; headings are radians, counter-clockwise positive.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vlnverse.agents.config import PanoramaConfig
from vlnverse.errors import SimulationError

KINDS = ("rgb", "depth", "semantic")
OBSTACLE_CELL = 0.05  # metres: obstacle points are thinned to one per square of this side


def view_name(kind: str, index: int) -> str:
    """The observation key of view ``index`` of ``kind`` (``depth_pano_03``)."""
    return f"{kind}_pano_{index:02d}"


def make_rig(config: PanoramaConfig, kinds: Sequence[str]) -> Any:
    """The :class:`~vlnverse.sim.rig.SensorRig` of ``kinds`` panoramas (same intrinsics, so
    the simulator renders each view once for all kinds)."""
    from vlnverse.sim.rig import SensorRig
    from vlnverse.sim.sensors import make_sensor

    rig = SensorRig()
    size = config.image_size
    for kind in kinds:
        params: dict[str, Any] = {"width": size, "height": size, "hfov_deg": config.hfov_deg,
                                  "mount_height": config.camera_height}
        if kind == "depth":
            params.update(max_depth=config.max_depth, normalize=False)  # metres: geometry needs them
        rig.add_panorama(make_sensor(kind, params), views=config.views, step_deg=config.step_deg,
                         prefix=f"{kind}_pano")
    return rig


def direction_phrase(heading: float) -> str:
    """``forward``, ``forward-left``, ``left``, ``back-left``, ``behind`` ... for a relative heading."""
    deg = math.degrees(math.remainder(heading, 2.0 * math.pi))
    side = "left" if deg > 0 else "right"
    magnitude = abs(deg)
    if magnitude <= 22.5:
        return "forward"
    if magnitude <= 67.5:
        return f"forward-{side}"
    if magnitude <= 112.5:
        return side
    if magnitude <= 157.5:
        return f"back-{side}"
    return "behind"


@dataclass(frozen=True)
class Panorama:
    """One step's panoramic views.

    Attributes:
        config: The rig's settings.
        depth: Per view ``(H, W)`` metric depth (distance to the image plane).
        rgb: Per view ``(H, W, 3)`` images, or None.
        semantic: Per view ``(H, W)`` instance ids, or None.
    """

    config: PanoramaConfig
    depth: tuple[np.ndarray, ...]
    rgb: tuple[np.ndarray, ...] | None = None
    semantic: tuple[np.ndarray, ...] | None = None
    _memo: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_observation(cls, observation: Mapping[str, Any], config: PanoramaConfig) -> Panorama:
        """Collect the views of ``observation`` (depth is required, RGB/semantic optional).

        Raises:
            SimulationError: a depth view is missing (the env was built without the rig).
        """
        views: dict[str, tuple[np.ndarray, ...] | None] = {}
        for kind in KINDS:
            names = [view_name(kind, i) for i in range(config.views)]
            present = [name in observation for name in names]
            if all(present):
                views[kind] = tuple(np.asarray(observation[n]) for n in names)
            elif kind == "depth":
                raise SimulationError(
                    f"the observation lacks the agent's depth panorama ({names[0]}...); "
                    "build the env with the agent's sensors")
            else:
                views[kind] = None
        depth = tuple(d[..., 0] if d.ndim == 3 else d for d in views["depth"])
        return cls(config, depth, views["rgb"], views["semantic"])

    @property
    def yaws(self) -> np.ndarray:
        """Heading of each view relative to the agent (radians, CCW)."""
        return np.radians(np.arange(self.config.views) * self.config.step_deg)

    def view_toward(self, heading: float) -> int:
        """The index of the view whose axis is nearest ``heading``."""
        gaps = np.abs(np.remainder(self.yaws - heading + math.pi, 2.0 * math.pi) - math.pi)
        return int(np.argmin(gaps))

    def rays(self, view: int, stride: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(x, y, height, hit)`` of every ``stride``-th pixel of view ``view`` (agent frame),
        flattened in the order of ``image[stride // 2::stride, stride // 2::stride].ravel()``."""
        depth = self.depth[view]
        height, width = depth.shape
        focal = (width / 2.0) / math.tan(math.radians(self.config.hfov_deg) / 2.0)
        rows = np.arange(stride // 2, height, stride)
        cols = np.arange(stride // 2, width, stride)
        d = depth[np.ix_(rows, cols)].astype(np.float64)
        left = (width / 2.0 - (cols[None, :] + 0.5)) / focal * d
        up = (height / 2.0 - (rows[:, None] + 0.5)) / focal * d
        yaw = self.yaws[view]
        c, s = math.cos(yaw), math.sin(yaw)
        x, y = d * c - left * s, d * s + left * c
        hit = d < self.config.max_depth * 0.999
        return x.ravel(), y.ravel(), (self.config.camera_height + up).ravel(), hit.ravel()

    def obstacle_points(self, step_height: float, body_height: float) -> np.ndarray:
        """``(N, 2)`` agent-frame points of surfaces the body would hit (between the step
        height and the body's top), thinned to one per :data:`OBSTACLE_CELL` square.
        Computed once per panorama and band."""
        key = (step_height, body_height)
        if key not in self._memo:
            chunks = []
            for view in range(self.config.views):
                x, y, z, hit = self.rays(view, self.config.depth_stride)
                keep = hit & (z > step_height) & (z < body_height)
                chunks.append(np.stack([x[keep], y[keep]], axis=1))
            self._memo[key] = _thin(np.concatenate(chunks))
        return self._memo[key]


def _thin(points: np.ndarray) -> np.ndarray:
    """One point per occupied :data:`OBSTACLE_CELL` square (the cell centre)."""
    if len(points) == 0:
        return points
    cells = np.floor(points / OBSTACLE_CELL).astype(np.int64)
    keys = np.unique((cells[:, 0] << 32) + (cells[:, 1] & 0xFFFFFFFF))
    rows, cols = keys >> 32, (keys & 0xFFFFFFFF).astype(np.int64)
    cols = np.where(cols >= 1 << 31, cols - (1 << 32), cols)
    return (np.stack([rows, cols], axis=1) + 0.5) * OBSTACLE_CELL


def free_distances(obstacles: np.ndarray, headings: np.ndarray, body_radius: float,
                   horizon: float) -> np.ndarray:
    """How far the body's centre can travel along each heading before touching an obstacle.

    A point blocks heading ``h`` when it lies ahead within ``body_radius`` of the line;
    the body stops where its disc first reaches it. ``horizon`` where nothing blocks.
    """
    if len(obstacles) == 0:
        return np.full(len(headings), float(horizon))
    directions = np.stack([np.cos(headings), np.sin(headings)], axis=1)
    along = obstacles @ directions.T                                   # (N, H)
    across = np.abs(obstacles[:, :1] * directions[:, 1] - obstacles[:, 1:] * directions[:, 0])
    blocked = (along > 0) & (across < body_radius)
    reach = along - np.sqrt(np.maximum(body_radius**2 - across**2, 0.0))
    return np.minimum(np.where(blocked, reach, np.inf).min(axis=0), horizon).clip(min=0.0)
