"""Small value types shared by the simulator layer and its backends."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


def wrap_angle(angle: float) -> float:
    """Wrap an angle in radians to [-pi, pi)."""
    return (angle + math.pi) % (2.0 * math.pi) - math.pi


@dataclass(frozen=True)
class Pose:
    """A planar agent pose: base position (z = floor height under the agent) and yaw.

    Attributes:
        x, y: World position of the agent's base centre (metres).
        z: Height of the floor the agent stands on (metres).
        yaw: Heading about +Z in radians (0 faces +X, counter-clockwise positive).
    """

    x: float
    y: float
    z: float = 0.0
    yaw: float = 0.0

    @property
    def xy(self) -> np.ndarray:
        return np.array([self.x, self.y], dtype=np.float64)

    @property
    def position(self) -> np.ndarray:
        return np.array([self.x, self.y, self.z], dtype=np.float64)

    def as_array(self) -> np.ndarray:
        """``(x, y, z, yaw)`` as float64."""
        return np.array([self.x, self.y, self.z, self.yaw], dtype=np.float64)

    def moved(self, forward: float = 0.0, turn: float = 0.0) -> Pose:
        """The pose after turning by ``turn`` (rad) and then driving ``forward`` (m)."""
        yaw = wrap_angle(self.yaw + turn)
        return Pose(
            self.x + forward * math.cos(yaw), self.y + forward * math.sin(yaw), self.z, yaw
        )

    def distance_xy(self, other: Pose) -> float:
        return math.hypot(self.x - other.x, self.y - other.y)


@dataclass(frozen=True)
class Contact:
    """A contact between the agent and scene geometry, as a backend reports it.

    Attributes:
        prim_index: Index into ``Scene.prims`` of the touched geometry (a representative
            prim of the touched instance), or -1 when unknown.
        position: World contact point (3,).
        normal: Contact normal pointing from the scene geometry towards the agent (3,).
        depth: Penetration depth in metres (>= 0).
    """

    prim_index: int
    position: tuple[float, float, float]
    normal: tuple[float, float, float]
    depth: float


@dataclass(frozen=True)
class CameraRequest:
    """One pinhole camera image a backend is asked to render.

    Attributes:
        position: World camera centre (3,).
        yaw, pitch: Viewing direction in radians (pitch > 0 looks up).
        width, height: Image size in pixels.
        hfov_deg: Horizontal field of view in degrees (square pixels).
        near, far: Clipping planes in metres.
        rgb, depth, instance: Which buffers are wanted.
    """

    position: tuple[float, float, float]
    yaw: float
    pitch: float
    width: int
    height: int
    hfov_deg: float
    near: float
    far: float
    rgb: bool = True
    depth: bool = False
    instance: bool = False


def rgb_of(rgba: np.ndarray) -> np.ndarray:
    """A contiguous ``uint8`` RGB copy of an ``(H, W, 4)`` RGBA image.

    Copied channel by channel: numpy's generic copy of the strided ``[..., :3]`` view is
    about six times slower, which shows in every step of a 224×224 camera.
    """
    rgb = np.empty((*rgba.shape[:2], 3), dtype=np.uint8)
    for channel in range(3):
        rgb[..., channel] = rgba[..., channel]
    return rgb


@dataclass
class CameraFrame:
    """A rendered camera image.

    Attributes:
        rgb: (H, W, 3) uint8 or None.
        depth: (H, W) float32 distance to the image plane in metres (``far`` where
            nothing is hit), or None.
        instance: (H, W) int32 prim index per pixel (-1 for background), or None.
    """

    rgb: np.ndarray | None = None
    depth: np.ndarray | None = None
    instance: np.ndarray | None = None


@dataclass(frozen=True)
class ContactReport:
    """The objects the agent touched during one action, resolved to scene objects.

    Attributes:
        object_ids: Ids of the touched instances (scene object ids, or structural ids
            such as ``"wall@kitchen_0"``), sorted, without duplicates.
        categories: Category of each entry of ``object_ids``.
        max_depth: Deepest penetration observed (metres).
    """

    object_ids: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    max_depth: float = 0.0


@dataclass(frozen=True)
class StepReport:
    """What happened when the simulator executed one action.

    Attributes:
        commanded_pose: Where the action would have put the agent in free space.
        reached_pose: Where the agent actually is afterwards.
        displacement: How far an obstacle displaced the agent from its commanded motion
            (metres): under Strict / Slide the largest offset of this action, counted
            from the offset carried over preceding actions in contact; under Tel-Hop the snap.
        collision: Whether this action counts as a collision event.
        contacts: The touched objects.
        snapped: True when Tel-Hop moved the agent to the nearest free location.
        sim_time: Simulated seconds the action took (0 for teleports).
    """

    commanded_pose: Pose
    reached_pose: Pose
    displacement: float
    collision: bool
    contacts: ContactReport = field(default_factory=ContactReport)
    snapped: bool = False
    sim_time: float = 0.0
