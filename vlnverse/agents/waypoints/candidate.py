"""A candidate waypoint: one place around the agent it could drive to next, as every
predictor (:mod:`vlnverse.agents.waypoints.depth`, :mod:`vlnverse.agents.waypoints.learned`)
proposes it and the agents' prompts and maps show it; and the turning options offered when a
predictor proposes no place to move to (:func:`turn_options`: ``L`` and ``R``, 90 degrees each
way), so a model that follows its options can look elsewhere rather than being left with STOP
alone."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from vlnverse.agents.panorama import Panorama, direction_phrase


@dataclass(frozen=True)
class Candidate:
    """One reachable-looking place around the agent.

    Attributes:
        id: Stable letter id of its heading slot.
        heading: Relative heading (radians, CCW positive, 0 = straight ahead).
        distance: How far to drive (m).
        view: Index of the panorama view looking toward it.
    """

    id: str
    heading: float
    distance: float
    view: int

    @property
    def heading_deg(self) -> float:
        return round(math.degrees(self.heading), 1)

    @property
    def turn(self) -> bool:
        """Whether this is a turn in place (no distance), not a place to move to."""
        return self.distance == 0.0

    @property
    def phrase(self) -> str:
        """``"forward-left, 1.2 m"``, or ``"turn in place, 90 deg left"``."""
        if self.turn:
            return f"turn in place, {abs(self.heading_deg):.0f} deg {'left' if self.heading > 0 else 'right'}"
        return f"{direction_phrase(self.heading)}, {self.distance:.1f} m"

    @property
    def offset(self) -> np.ndarray:
        """End point in the agent frame (x forward, y left)."""
        return self.distance * np.array([math.cos(self.heading), math.sin(self.heading)])

    def to_dict(self) -> dict[str, object]:
        """The JSON form in traces."""
        return {"id": self.id, "heading_deg": self.heading_deg, "distance_m": round(self.distance, 2),
                "phrase": self.phrase}


TURN_IDS = ("L", "R")
TURN_DEG = 90.0


def turn_options(panorama: Panorama) -> list[Candidate]:
    """Turning in place, ``L`` (90 degrees left) and ``R`` (90 degrees right): the options
    offered when the predictor proposes no place to move to."""
    headings = (math.radians(TURN_DEG), -math.radians(TURN_DEG))
    return [Candidate(i, h, 0.0, panorama.view_toward(h)) for i, h in zip(TURN_IDS, headings, strict=True)]
