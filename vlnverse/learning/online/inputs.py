"""From an observation to the waypoint policy's inputs (shared by training and the agent)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from vlnverse.agents.config import PanoramaConfig, WaypointConfig
from vlnverse.agents.panorama import Panorama, make_rig, view_name
from vlnverse.agents.waypoints.candidate import Candidate
from vlnverse.agents.waypoints.predictor import predictor_named
from vlnverse.tasks.formats.vocab import encode

#: What the waypoint action does when no candidate is free: turn 90° in place (the LLM agents' fallback).
FALLBACK_TURN = math.pi / 2


@dataclass(frozen=True)
class InputSpec:
    """The policy's view of the world.

    Attributes:
        panorama: The panoramic rig (RGB and depth views).
        waypoints: The candidate generator's settings (``max_candidates`` = K).
        max_tokens: Instruction length in tokens.
        predictor: The candidate source (:func:`~vlnverse.agents.waypoints.predictor_named`):
            ``learned`` (the shipped trained predictor, as the LLM agents) or ``depth``.
    """

    panorama: PanoramaConfig
    waypoints: WaypointConfig
    max_tokens: int = 80
    predictor: str = "learned"

    @property
    def max_candidates(self) -> int:
        return self.waypoints.max_candidates

    def sensors(self) -> dict[str, Any]:
        """The env sensors the policy needs."""
        return dict(make_rig(self.panorama, ("rgb", "depth")).items())


@dataclass(frozen=True)
class StepInputs:
    """One step's inputs: ``arrays`` (fixed shapes, batchable) and the candidates behind them."""

    arrays: dict[str, np.ndarray]
    candidates: tuple[Candidate, ...]

    @property
    def stop_index(self) -> int:
        return len(self.arrays["candidate_mask"]) - 1

    def action(self, choice: int) -> np.ndarray:
        """The waypoint action of ``choice`` (a candidate index, or the last index for STOP)."""
        if choice == self.stop_index:
            return np.array([0.0, 0.0, 1.0], dtype=np.float32)
        if not self.candidates:
            return np.array([0.0, FALLBACK_TURN, 0.0], dtype=np.float32)
        chosen = self.candidates[min(choice, len(self.candidates) - 1)]
        return np.array([chosen.distance, chosen.heading, 0.0], dtype=np.float32)

    def world_points(self, pose: np.ndarray) -> np.ndarray:
        """Candidate end points in the world frame, ``(n, 2)``."""
        x, y, yaw = float(pose[0]), float(pose[1]), float(pose[3])
        offsets = np.array([c.offset for c in self.candidates]).reshape(-1, 2)
        c, s = math.cos(yaw), math.sin(yaw)
        return np.stack([x + offsets[:, 0] * c - offsets[:, 1] * s, y + offsets[:, 0] * s + offsets[:, 1] * c], axis=1)


class InputBuilder:
    """Builds :class:`StepInputs` from observations."""

    def __init__(self, spec: InputSpec, vocab: Mapping[str, int]) -> None:
        self.spec = spec
        self.vocab = {"stoi": dict(vocab)}
        self.predictor = predictor_named(spec.predictor, spec.waypoints)

    def array_shapes(self) -> dict[str, tuple[tuple[int, ...], Any]]:
        """Shape and dtype of each array of :class:`StepInputs` (the observation space)."""
        p, k = self.spec.panorama, self.spec.max_candidates
        return {"rgb": ((p.views, p.image_size, p.image_size, 3), np.uint8),
                "depth": ((p.views, p.image_size, p.image_size, 1), np.float32),
                "candidates": ((k, 3), np.float32), "candidate_views": ((k,), np.int64),
                "candidate_mask": ((k + 1,), np.int8), "tokens": ((self.spec.max_tokens,), np.int64)}

    def __call__(self, observation: Mapping[str, Any]) -> StepInputs:
        p, k = self.spec.panorama, self.spec.max_candidates
        panorama = Panorama.from_observation(observation, p)
        candidates = tuple(self.predictor.predict(panorama))[:k]
        features = np.zeros((k, 3), dtype=np.float32)
        views = np.zeros(k, dtype=np.int64)
        mask = np.zeros(k + 1, dtype=np.int8)
        for i, c in enumerate(candidates):
            features[i] = (math.sin(c.heading), math.cos(c.heading), c.distance / self.spec.waypoints.max_distance)
            views[i] = c.view
            mask[i] = 1
        mask[k] = 1  # STOP is always possible
        rgb = np.stack([np.asarray(observation[view_name("rgb", i)]) for i in range(p.views)])
        depth = np.stack([np.asarray(observation[view_name("depth", i)], dtype=np.float32) for i in range(p.views)])
        depth = np.clip(depth.reshape(p.views, p.image_size, p.image_size, 1) / p.max_depth, 0.0, 1.0)
        tokens = np.asarray(encode(str(observation["instruction"]), self.vocab, self.spec.max_tokens), dtype=np.int64)
        arrays = {"rgb": rgb, "depth": depth.astype(np.float32), "candidates": features, "candidate_views": views,
                  "candidate_mask": mask, "tokens": tokens}
        return StepInputs(arrays, candidates)
