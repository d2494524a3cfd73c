"""Images for the dataset through the simulator layer's backend (paper §3.5, C.2.1).

* the visual-reference image: rendered at the goal viewpoint, looking at the target;
* Describer frames: first-person views at points along a fine path.

Rendering is optional (``--render``); prior-only generation never touches a backend.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from vlnverse.errors import ConfigError
from vlnverse.scene.types import Scene

MAX_PITCH = math.radians(45.0)


@dataclass(frozen=True)
class RenderConfig:
    """Camera settings of dataset images (paper C.2.1: 224×224, 90° FoV).

    Attributes:
        width, height: Image size in pixels.
        hfov_deg: Horizontal field of view.
        camera_height: Camera height above the floor (m).
        backend: Simulator backend name (``bullet`` renders on the CPU).
        renderer: The ``bullet`` backend's renderer: ``auto``, ``gl`` or ``tiny``.
        path_frames: Frames rendered along a fine path for the Describer.
    """

    width: int = 224
    height: int = 224
    hfov_deg: float = 90.0
    camera_height: float = 1.25
    backend: str = "bullet"
    renderer: str = "auto"
    path_frames: int = 6

    def __post_init__(self) -> None:
        for name in ("width", "height", "path_frames"):
            value = getattr(self, name)
            if not (isinstance(value, int) and value > 0):
                raise ConfigError(f"render.{name} must be a positive integer, got {value!r}")
        if not 0 < self.hfov_deg < 180:
            raise ConfigError(f"render.hfov_deg must be in (0, 180), got {self.hfov_deg!r}")
        if not self.camera_height > 0:
            raise ConfigError(f"render.camera_height must be positive, got {self.camera_height!r}")


class SceneRenderer:
    """Renders views of one scene (owns a simulator; close it, or use ``with``)."""

    def __init__(self, scene: Scene, config: RenderConfig | None = None) -> None:
        from vlnverse.sim.simulator import Simulator

        self.config = config or RenderConfig()
        self.scene = scene
        self._sim = Simulator(scene, sensors=(), backend=self.config.backend, renderer=self.config.renderer)

    def close(self) -> None:
        self._sim.close()

    def __enter__(self) -> SceneRenderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def view(self, position, yaw: float, pitch: float = 0.0) -> np.ndarray:
        """RGB (H, W, 3) uint8 seen by an agent standing at ``position`` (floor point)."""
        from vlnverse.sim.types import CameraRequest, Pose

        cfg = self.config
        x, y, z = (float(v) for v in position)
        self._sim.backend.set_agent_pose(Pose(x, y, z, float(yaw)))
        request = CameraRequest(position=(x, y, z + cfg.camera_height), yaw=float(yaw), pitch=float(pitch),
                                width=cfg.width, height=cfg.height, hfov_deg=cfg.hfov_deg, near=0.05, far=30.0)
        return self._sim.backend.render([request])[0].rgb

    def target_view(self, viewpoint, target_center) -> np.ndarray:
        """The visual reference: from ``viewpoint`` looking at ``target_center``."""
        vx, vy, vz = (float(v) for v in viewpoint)
        tx, ty, tz = (float(v) for v in target_center)
        yaw = math.atan2(ty - vy, tx - vx)
        horizontal = max(math.hypot(tx - vx, ty - vy), 0.3)
        pitch = float(np.clip(math.atan2(tz - (vz + self.config.camera_height), horizontal), -MAX_PITCH, MAX_PITCH))
        return self.view((vx, vy, vz), yaw, pitch)

    def path_frames(self, points: np.ndarray) -> list[np.ndarray]:
        """Views at evenly spaced points along a path, facing along it."""
        points = np.asarray(points, dtype=np.float64)
        seg = np.linalg.norm(np.diff(points[:, :2], axis=0), axis=1)
        cumulative = np.concatenate([[0.0], np.cumsum(seg)])
        total = cumulative[-1]
        frames = []
        n = self.config.path_frames
        for s in np.linspace(0.0, total, n, endpoint=n == 1):
            i = int(np.clip(np.searchsorted(cumulative, s, side="right") - 1, 0, len(seg) - 1))
            t = 0.0 if seg[i] == 0 else (s - cumulative[i]) / seg[i]
            point = points[i] + (points[i + 1] - points[i]) * t
            yaw = math.atan2(points[i + 1][1] - points[i][1], points[i + 1][0] - points[i][0])
            frames.append(self.view(point, yaw))
        return frames
