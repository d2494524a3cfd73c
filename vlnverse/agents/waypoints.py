"""Candidate waypoints: where the agent could drive next, from its own panoramic depth.

:class:`DepthWaypoints` is the non-learned predictor: headings at a fixed spacing, each
as far as the free space goes minus a safety margin (capped to ``[min, max]`` metres),
near-duplicates merged, at most N. Anything with ``predict(panorama) -> [Candidate]``
(:class:`WaypointPredictor`) can replace it; the LLM agents' default is the trained one of
:mod:`vlnverse.agents.learned_waypoints.predictor`. Unlike that one, this predictor keeps the
body clear of what it sees (embodiment-aware), which is not the paper's setting.

Ids are letters fixed by the heading slot (``A`` straight ahead, then counter-clockwise),
so the same free space always gets the same id and an id never names two candidates.

When a predictor proposes no place to move to, the agents are offered turning in place
instead (:func:`turn_options`: ``L`` and ``R``, 90 degrees each way), so a model that follows
its options can look elsewhere rather than being left with STOP alone.
"""

from __future__ import annotations

import math
import string
from typing import Protocol

import numpy as np

from vlnverse.agents.candidate import Candidate
from vlnverse.agents.config import WaypointConfig
from vlnverse.agents.panorama import Panorama, free_distances


class WaypointPredictor(Protocol):
    """Anything that proposes candidates from a panorama."""

    def predict(self, panorama: Panorama) -> list[Candidate]:
        """The candidates of this step, in id order."""


class DepthWaypoints:
    """Candidates from the free space seen in the panoramic depth (see the module docs)."""

    def __init__(self, config: WaypointConfig | None = None) -> None:
        self.config = config or WaypointConfig()
        slots = round(360.0 / self.config.spacing_deg)
        self.headings = np.remainder(np.radians(np.arange(slots) * 360.0 / slots) + math.pi,
                                     2.0 * math.pi) - math.pi
        self.ids = string.ascii_uppercase[:slots]

    def free_space(self, panorama: Panorama, headings: np.ndarray | None = None) -> np.ndarray:
        """Free travel distance of the body's centre along each heading slot, or along
        ``headings`` (radians) when given (m)."""
        cfg = self.config
        obstacles = panorama.obstacle_points(cfg.step_height, cfg.body_height)
        return free_distances(obstacles, self.headings if headings is None else np.asarray(headings),
                              cfg.body_radius, cfg.max_distance + cfg.safety_margin)

    def reach(self, panorama: Panorama, heading: float) -> float:
        """How far a move along any ``heading`` may go: free space minus the safety margin,
        capped at ``max_distance`` (m, >= 0); a candidate's distance is this at its slot."""
        cfg = self.config
        free = float(self.free_space(panorama, np.array([heading]))[0]) - cfg.safety_margin
        return float(np.clip(free, 0.0, cfg.max_distance))

    def describe(self) -> dict[str, object]:
        """What ``run.json`` records: the name and the candidates' range and spacing."""
        cfg = self.config
        return {"name": "depth", "embodiment_aware": True, "range_m": [cfg.min_distance, cfg.max_distance],
                "spacing_deg": cfg.spacing_deg, "safety_margin_m": cfg.safety_margin}

    def predict(self, panorama: Panorama) -> list[Candidate]:
        cfg = self.config
        reach = self.free_space(panorama) - cfg.safety_margin
        reach = np.minimum(reach, cfg.max_distance)
        order = np.argsort(-reach, kind="stable")  # longest first: merging keeps the far ones
        kept: list[int] = []
        for slot in order:
            if reach[slot] < cfg.min_distance or len(kept) >= cfg.max_candidates:
                break
            end = self._end(slot, reach[slot])
            if all(np.linalg.norm(end - self._end(k, reach[k])) >= cfg.merge_distance for k in kept):
                kept.append(int(slot))
        return [Candidate(self.ids[s], float(self.headings[s]), round(float(reach[s]), 2),
                          panorama.view_toward(float(self.headings[s]))) for s in sorted(kept)]

    def _end(self, slot: int, distance: float) -> np.ndarray:
        h = self.headings[slot]
        return distance * np.array([math.cos(h), math.sin(h)])


TURN_IDS = ("L", "R")
TURN_DEG = 90.0


def turn_options(panorama: Panorama) -> list[Candidate]:
    """Turning in place, ``L`` (90 degrees left) and ``R`` (90 degrees right): the options
    offered when the predictor proposes no place to move to."""
    headings = (math.radians(TURN_DEG), -math.radians(TURN_DEG))
    return [Candidate(i, h, 0.0, panorama.view_toward(h)) for i, h in zip(TURN_IDS, headings, strict=True)]


def predictor_named(name: str, config: WaypointConfig, checkpoint: str | None = None) -> WaypointPredictor:
    """The predictor ``name`` names: ``learned`` (``checkpoint``, default the shipped one;
    needs torch), ``depth`` or a ``module:attr`` factory called with ``config``."""
    if name == "depth":
        return DepthWaypoints(config)
    if name == "learned":
        from vlnverse.agents.learned_waypoints.predictor import LearnedWaypoints

        return LearnedWaypoints(config, checkpoint)
    from vlnverse.registry import load_entry_point

    return load_entry_point(name)(config)


def describe_predictor(predictor: WaypointPredictor, name: str) -> dict[str, object]:
    """What ``run.json`` records of a predictor (its own ``describe()`` when it has one)."""
    describe = getattr(predictor, "describe", None)
    return dict(describe()) if callable(describe) else {"name": name}
