"""Visual reference: the goal's picture as the ``reference_image`` observation.

With ``reference_image=True`` (the default for ``task="visual_reference"``) the env observes
an RGB image of ``reference_image_size`` ``(height, width)``: the ``reference_image`` reset
option's file when given, else the dataset's stored image of the episode, else a view
rendered at the final goal towards its target object (or along the last approach).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from vlnverse.envs.tasks.base import TaskComponent
from vlnverse.errors import ConfigError, DatasetError
from vlnverse.sim.types import CameraRequest, Pose


class ReferenceImageTask(TaskComponent):
    """The ``reference_image`` observation (see the module docs)."""

    def __init__(self, env: Any, settings: Mapping[str, Any]) -> None:
        super().__init__(env, settings)
        self.size = settings["reference_image_size"]
        self.image: np.ndarray | None = None

    @classmethod
    def configure(cls, settings: dict[str, Any]) -> None:
        value = settings.setdefault("reference_image_size", (224, 224))
        try:
            size = tuple(int(v) for v in value)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"reference_image_size must be (height, width), got {value!r}") from exc
        if len(size) != 2 or min(size) < 1:
            raise ConfigError(f"reference_image_size must be (height, width), got {value!r}")
        settings["reference_image_size"] = size

    @classmethod
    def wanted(cls, task: str | None, settings: Mapping[str, Any]) -> bool:
        flag = settings.get("reference_image")
        return task == "visual_reference" if flag is None else bool(flag)

    def spaces(self, max_text: int, charset: frozenset[str]) -> dict[str, spaces.Space]:
        height, width = self.size
        return {"reference_image": spaces.Box(0, 255, (height, width, 3), dtype=np.uint8)}

    def reset(self, options: Mapping[str, Any]) -> None:
        env, given = self.env, options.get("reference_image")
        source, image = env.episode.source, None
        if given is not None:
            from PIL import Image

            try:
                with Image.open(given) as picture:
                    image = np.asarray(picture.convert("RGB"))
            except OSError as exc:
                raise DatasetError(f"cannot read reference image {given}: {exc}") from exc
        elif source is not None and env.dataset is not None and source.reference_image:
            image = env.dataset.reference_image(source)
        if image is None:
            image = self._render()
        height, width = self.size
        if image.shape[:2] != (height, width):
            from PIL import Image

            image = np.asarray(Image.fromarray(image).resize((width, height), Image.BILINEAR))
        self.image = np.ascontiguousarray(image[..., :3], dtype=np.uint8)

    def _render(self) -> np.ndarray:
        """The view from the final goal towards its target (or along the last approach)."""
        env = self.env
        goal, source = env.episode.goals[-1], env.episode.source
        floor = env.occupancy.floor_height
        gx, gy = float(goal.position[0]), float(goal.position[1])
        target = None
        object_id = source.goals[-1].object_id if source is not None else None
        if object_id is not None:
            target = next((0.5 * (np.asarray(o.aabb_min) + np.asarray(o.aabb_max))
                           for o in env.scene.objects if o.object_id == object_id), None)
        height, width = self.size
        camera_z = floor + env.agent_spec.camera_height
        if target is not None:
            yaw = math.atan2(float(target[1]) - gy, float(target[0]) - gx)
            horizontal = max(math.hypot(float(target[0]) - gx, float(target[1]) - gy), 0.3)
            pitch = float(np.clip(math.atan2(float(target[2]) - camera_z, horizontal), -math.pi / 4, math.pi / 4))
        else:
            sx, sy = env.episode.start[:2]
            yaw = math.atan2(gy - sy, gx - sx) if math.hypot(gx - sx, gy - sy) > 1e-6 else 0.0
            pitch = 0.0
        env.sim.backend.set_agent_pose(Pose(gx, gy, float(floor), yaw))
        request = CameraRequest((gx, gy, camera_z), yaw, pitch, width, height, 90.0, 0.05, 30.0)
        return np.asarray(env.sim.backend.render([request])[0].rgb)

    def observe(self) -> dict[str, Any]:
        return {"reference_image": self.image.copy()}
