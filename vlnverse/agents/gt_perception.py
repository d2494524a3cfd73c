"""Privileged ``gt`` perception: what is visible in each direction, from the semantic sensor.

For text-only models and cheap runs, each panorama view becomes a line of object
categories with rough distances ("sofa 2.5 m"), read from the semantic images through
the env's semantic-id → category table (``info["semantic_categories"]`` at reset). The
table and the room type are privileged; agents using this mode say so in ``run.json``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vlnverse.agents.panorama import Panorama, direction_phrase
from vlnverse.errors import SimulationError

#: Categories that are not landmarks (structure the agent always sees).
NOT_LANDMARKS = frozenset({"nothing", "wall", "floor", "ceiling", "roof", "ground", "structure"})
MIN_PIXEL_FRACTION = 0.002
OBJECTS_PER_VIEW = 6
DISTANCE_STEP = 0.5  # distances are rounded to this (rough, as a person would say)


@dataclass(frozen=True)
class ViewObjects:
    """Objects seen in one view: ``(category, distance m)``, nearest first."""

    view: int
    heading: float
    objects: tuple[tuple[str, float], ...]

    def describe(self) -> str:
        seen = ", ".join(f"{name} {dist:.1f} m" for name, dist in self.objects) or "nothing notable"
        return f"view {self.view} ({direction_phrase(self.heading)}): {seen}"


def visible_objects(panorama: Panorama, categories: Sequence[str]) -> list[ViewObjects]:
    """What each view sees (landmark categories, rough distance, nearest first).

    Raises:
        SimulationError: the panorama has no semantic views or no table was given.
    """
    if panorama.semantic is None or not categories:
        raise SimulationError("gt perception needs the semantic panorama and the env's "
                              "semantic_categories (reset info)")
    result = []
    for view, (ids, depth) in enumerate(zip(panorama.semantic, panorama.depth, strict=True)):
        flat_ids = np.asarray(ids).ravel()
        flat_depth = np.asarray(depth).ravel()
        found: dict[str, float] = {}
        counts = np.bincount(flat_ids, minlength=len(categories))
        for instance in np.flatnonzero(counts >= MIN_PIXEL_FRACTION * flat_ids.size):
            name = categories[instance] if instance < len(categories) else "unknown"
            if name in NOT_LANDMARKS:
                continue
            distance = float(np.median(flat_depth[flat_ids == instance]))
            distance = max(DISTANCE_STEP, round(distance / DISTANCE_STEP) * DISTANCE_STEP)
            found[name] = min(found.get(name, distance), distance)
        nearest = sorted(found.items(), key=lambda item: (item[1], item[0]))[:OBJECTS_PER_VIEW]
        result.append(ViewObjects(view, float(panorama.yaws[view]), tuple(nearest)))
    return result
