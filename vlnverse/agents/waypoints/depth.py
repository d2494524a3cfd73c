"""The non-learned waypoint predictor: candidates from the agent's own panoramic depth.

:class:`DepthWaypoints` takes headings at a fixed spacing, each as far as the free space goes
minus a safety margin (capped to ``[min, max]`` metres), merges near-duplicates and keeps at
most N. Unlike the trained predictor (:mod:`vlnverse.agents.waypoints.learned`, the LLM
agents' default), it keeps the body clear of what it sees (embodiment-aware), which is not the
paper's setting.

Ids are letters fixed by the heading slot (``A`` straight ahead, then counter-clockwise),
so the same free space always gets the same id and an id never names two candidates.
"""

from __future__ import annotations

import math
import string

import numpy as np

from vlnverse.agents.config import WaypointConfig
from vlnverse.agents.panorama import Panorama, free_distances
from vlnverse.agents.waypoints.candidate import Candidate


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
