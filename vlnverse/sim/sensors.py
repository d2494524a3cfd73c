"""Sensor specifications: RGB, depth, semantic, LiDAR and pose (paper §3.1, A.2.4, C.2.1).

Every parameter is exposed. A spec is a frozen description; the simulator renders it
through its backend and the rig turns the results into observations. Camera sensors
that share a pose and intrinsics are rendered together in one backend call.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces

from vlnverse.errors import ConfigError


def _check_rate(owner: str, rate_hz: float | None) -> None:
    if rate_hz is not None and (not math.isfinite(rate_hz) or rate_hz <= 0):
        raise ConfigError(f"{owner}.rate_hz must be positive or None (every step), got {rate_hz!r}")


def _check_mount(owner: str, mount_height: float | None, pitch_deg: float) -> None:
    if mount_height is not None and mount_height <= 0:
        raise ConfigError(f"{owner}.mount_height must be positive or None, got {mount_height!r}")
    if not -90.0 <= pitch_deg <= 90.0:
        raise ConfigError(f"{owner}.pitch_deg must be in [-90, 90], got {pitch_deg!r}")


@dataclass(frozen=True)
class SensorSpec:
    """Base of all sensor specs.

    Attributes:
        rate_hz: Sampling frequency in simulated Hz; ``None`` samples at every step.
            Between samples the previous reading is returned.
        mount_height: Height of the sensor above the floor (metres); ``None`` uses the
            agent's ``camera_height``.
        mount_forward, mount_left: Offset of the sensor from the agent's axis (metres,
            in the agent frame).
        pitch_deg: Elevation of the optical axis (positive looks up).
        yaw_deg: Heading offset from the agent's heading (positive turns left).
    """

    kind: ClassVar[str] = ""
    rate_hz: float | None = None
    mount_height: float | None = None
    mount_forward: float = 0.0
    mount_left: float = 0.0
    pitch_deg: float = 0.0
    yaw_deg: float = 0.0

    def __post_init__(self) -> None:
        owner = type(self).__name__
        _check_rate(owner, self.rate_hz)
        _check_mount(owner, self.mount_height, self.pitch_deg)

    def observation_space(self, n_instances: int) -> spaces.Space:
        """The gymnasium space of this sensor's observation."""
        raise TypeError(f"{type(self).__name__} has no observation space")


@dataclass(frozen=True)
class CameraSpec(SensorSpec):
    """A pinhole camera with square pixels.

    Attributes:
        width, height: Resolution in pixels.
        hfov_deg: Horizontal field of view in degrees, in (0, 180).
        near, far: Clipping planes in metres.
    """

    width: int = 224
    height: int = 224
    hfov_deg: float = 90.0
    near: float = 0.05
    far: float = 30.0

    def __post_init__(self) -> None:
        super().__post_init__()
        owner = type(self).__name__
        for name in ("width", "height"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= 4096:
                raise ConfigError(f"{owner}.{name} must be an integer in [1, 4096], got {value!r}")
        if not 0.0 < self.hfov_deg < 180.0:
            raise ConfigError(f"{owner}.hfov_deg must be in (0, 180), got {self.hfov_deg!r}")
        if not 0.0 < self.near < self.far:
            raise ConfigError(f"{owner}: need 0 < near < far, got near={self.near!r} far={self.far!r}")

    @property
    def vfov_deg(self) -> float:
        """Vertical field of view in degrees (square pixels)."""
        half = math.tan(math.radians(self.hfov_deg) / 2.0) * self.height / self.width
        return math.degrees(2.0 * math.atan(half))

    def intrinsics(self) -> np.ndarray:
        """The 3×3 pinhole matrix K (pixels; principal point at the image centre)."""
        f = (self.width / 2.0) / math.tan(math.radians(self.hfov_deg) / 2.0)
        return np.array(
            [[f, 0.0, self.width / 2.0], [0.0, f, self.height / 2.0], [0.0, 0.0, 1.0]]
        )

    def camera_key(self) -> tuple:
        """Cameras with equal keys see the same image and are rendered once."""
        return (
            self.width, self.height, self.hfov_deg, self.near, self.far, self.mount_height,
            self.mount_forward, self.mount_left, self.pitch_deg, self.yaw_deg,
        )


@dataclass(frozen=True)
class RGBSensor(CameraSpec):
    """Colour camera: (H, W, 3) uint8. Defaults: 224×224, HFOV 90° (paper A.2.4)."""

    kind: ClassVar[str] = "rgb"

    def observation_space(self, n_instances: int) -> spaces.Space:
        return spaces.Box(0, 255, (self.height, self.width, 3), np.uint8)


@dataclass(frozen=True)
class DepthSensor(CameraSpec):
    """Depth camera: (H, W, 1) float32 distance to the image plane.

    Defaults as in the paper: 256×256, HFOV 90° (A.2.4), clipped at 10 m and normalized to
    [0, 1] (C.2.1: "clip and normalize pixels exceeding a depth of 10 meters"). Set
    ``normalize=False`` for metres (geometry, waypoint prediction).

    Attributes:
        min_depth, max_depth: Readings are clipped to this range (metres); pixels that
            see nothing read ``max_depth``.
        normalize: Map the clipped range linearly to [0, 1] (default); ``False`` keeps metres.
    """

    kind: ClassVar[str] = "depth"
    width: int = 256
    height: int = 256
    min_depth: float = 0.0
    max_depth: float = 10.0
    normalize: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.min_depth < self.max_depth:
            raise ConfigError(
                f"DepthSensor: need 0 <= min_depth < max_depth, got {self.min_depth!r}, {self.max_depth!r}"
            )

    def observation_space(self, n_instances: int) -> spaces.Space:
        low, high = (0.0, 1.0) if self.normalize else (self.min_depth, self.max_depth)
        return spaces.Box(low, high, (self.height, self.width, 1), np.float32)

    def convert(self, depth: np.ndarray) -> np.ndarray:
        """Clip (and normalize) a metric depth image into the observation format."""
        out = np.clip(depth, self.min_depth, self.max_depth).astype(np.float32, copy=False)
        if self.normalize:
            # In place: the same float32 arithmetic without two more image-sized arrays per
            # step (subtracting a zero minimum changes no value, so it is skipped).
            if self.min_depth:
                np.subtract(out, np.float32(self.min_depth), out=out)
            np.multiply(out, np.float32(1.0 / (self.max_depth - self.min_depth)), out=out)
            np.clip(out, 0.0, 1.0, out=out)
        return out[..., None]


@dataclass(frozen=True)
class SemanticSensor(CameraSpec):
    """Instance segmentation: (H, W) int32 instance id per pixel (0 = nothing).

    Ids index the simulator's instance table, which maps each id to a scene object id
    and its category (``Simulator.instances``).
    """

    kind: ClassVar[str] = "semantic"

    def observation_space(self, n_instances: int) -> spaces.Space:
        return spaces.Box(0, max(n_instances, 1), (self.height, self.width), np.int32)


@dataclass(frozen=True)
class LidarSensor(SensorSpec):
    """A scanning range finder simulated with batched ray casts.

    Output: (channels, horizontal rays) float32 ranges in metres; ``max_range`` where
    nothing is hit within range.

    Attributes:
        hfov_deg: Horizontal field of view in degrees, in (0, 360], centred on the heading.
        h_resolution_deg: Angle between horizontal rays in degrees.
        channels: Number of vertical beams.
        vfov_deg: Vertical spread of the beams in degrees (0 with one channel).
        min_range, max_range: Valid range in metres; hits closer than ``min_range`` are ignored.
    """

    kind: ClassVar[str] = "lidar"
    mount_height: float | None = 0.40
    hfov_deg: float = 360.0
    h_resolution_deg: float = 1.0
    channels: int = 1
    vfov_deg: float = 0.0
    min_range: float = 0.05
    max_range: float = 10.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 < self.hfov_deg <= 360.0:
            raise ConfigError(f"LidarSensor.hfov_deg must be in (0, 360], got {self.hfov_deg!r}")
        if not 0.0 < self.h_resolution_deg <= self.hfov_deg:
            raise ConfigError(
                f"LidarSensor.h_resolution_deg must be in (0, hfov_deg], got {self.h_resolution_deg!r}"
            )
        if not isinstance(self.channels, int) or not 1 <= self.channels <= 256:
            raise ConfigError(f"LidarSensor.channels must be an integer in [1, 256], got {self.channels!r}")
        if not 0.0 <= self.vfov_deg < 180.0 or (self.channels > 1 and self.vfov_deg == 0.0):
            raise ConfigError(
                f"LidarSensor.vfov_deg must be in [0, 180) and positive with several channels, got {self.vfov_deg!r}"
            )
        if not 0.0 <= self.min_range < self.max_range:
            raise ConfigError(
                f"LidarSensor: need 0 <= min_range < max_range, got {self.min_range!r}, {self.max_range!r}"
            )

    @property
    def n_rays(self) -> int:
        """Horizontal rays per channel."""
        full_circle = self.hfov_deg >= 360.0
        n = self.hfov_deg / self.h_resolution_deg
        return max(1, int(round(n)) if full_circle else int(math.floor(n + 1e-9)) + 1)

    def ray_directions(self) -> np.ndarray:
        """(channels, n_rays, 3) unit directions in the sensor frame (+X forward)."""
        if self.hfov_deg >= 360.0:
            az = np.arange(self.n_rays) * math.radians(self.h_resolution_deg) - math.pi
        else:
            half = math.radians(self.hfov_deg) / 2.0
            az = np.linspace(-half, half, self.n_rays)
        if self.channels == 1:
            el = np.zeros(1)
        else:
            half_v = math.radians(self.vfov_deg) / 2.0
            el = np.linspace(-half_v, half_v, self.channels)
        el_g, az_g = np.meshgrid(el, az, indexing="ij")
        return np.stack(
            [np.cos(el_g) * np.cos(az_g), np.cos(el_g) * np.sin(az_g), np.sin(el_g)], axis=-1
        )

    def observation_space(self, n_instances: int) -> spaces.Space:
        return spaces.Box(0.0, self.max_range, (self.channels, self.n_rays), np.float32)


@dataclass(frozen=True)
class PoseSensor(SensorSpec):
    """Pose and compass: ``(x, y, z, yaw)`` float32 in the world frame (yaw in radians)."""

    kind: ClassVar[str] = "pose"

    def observation_space(self, n_instances: int) -> spaces.Space:
        return pose_space()


#: Largest world coordinate a pose observation may hold (metres).
WORLD_LIMIT = 1.0e4


def pose_space() -> spaces.Box:
    """The space of ``(x, y, z, yaw)`` pose observations."""
    low = np.array([-WORLD_LIMIT, -WORLD_LIMIT, -WORLD_LIMIT, -math.pi], dtype=np.float32)
    high = np.array([WORLD_LIMIT, WORLD_LIMIT, WORLD_LIMIT, math.pi], dtype=np.float32)
    return spaces.Box(low, high, dtype=np.float32)


SENSOR_TYPES: dict[str, type[SensorSpec]] = {
    cls.kind: cls for cls in (RGBSensor, DepthSensor, SemanticSensor, LidarSensor, PoseSensor)
}


def make_sensor(kind: str, params: Mapping[str, Any] | None = None) -> SensorSpec:
    """Build a sensor spec of ``kind`` from keyword parameters, strictly.

    Raises:
        ConfigError: Unknown kind or parameter, or an invalid value.
    """
    if kind not in SENSOR_TYPES:
        raise ConfigError(f"unknown sensor {kind!r}; valid sensors: {', '.join(sorted(SENSOR_TYPES))}")
    cls = SENSOR_TYPES[kind]
    params = dict(params or {})
    valid = {f.name for f in fields(cls)}
    unknown = sorted(set(params) - valid)
    if unknown:
        raise ConfigError(f"{cls.__name__}: unknown parameter(s) {', '.join(unknown)}; valid: {', '.join(sorted(valid))}")
    return cls(**params)
