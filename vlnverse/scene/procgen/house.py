"""One procedural house: plan + furniture + looks, accepted only if every room is reachable.

:func:`generate_house` is deterministic in ``(seed, options)``: attempt ``k`` draws from
``numpy.random.default_rng([seed, k])``, so a rejected attempt never shifts the
randomness of the next scene in a corpus.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from vlnverse.errors import ConfigError, SceneError
from vlnverse.scene.procgen.appearance import FLOOR_FINISHES, WALL_PAINTS
from vlnverse.scene.procgen.floorplan import DoorPlan, FloorPlan, sample_floorplan
from vlnverse.scene.procgen.placement import Furnisher, PlacedObject
from vlnverse.scene.procgen.program import MAX_ROOMS, MIN_ROOMS
from vlnverse.scene.procgen.rules import furnish

logger = logging.getLogger(__name__)

GENERATOR_VERSION = "procgen-2"


@dataclass(frozen=True)
class HouseOptions:
    """Options of the house generator.

    Attributes:
        min_rooms, max_rooms: Inclusive range the room count is drawn from (default 4..12,
            as real apartments and houses; 3 is allowed).
        agent_radius: Radius (m) of the agent every room must be reachable for.
        max_attempts: Resampling attempts before giving up on a seed.
        min_room_navigable: Smallest navigable area (m²) a room must keep.
    """

    min_rooms: int = 4
    max_rooms: int = 12
    agent_radius: float = 0.30
    max_attempts: int = 30
    min_room_navigable: float = 0.5

    def __post_init__(self) -> None:
        if not (MIN_ROOMS <= self.min_rooms <= self.max_rooms <= MAX_ROOMS):
            raise ConfigError(
                f"rooms range {self.min_rooms}-{self.max_rooms} is invalid: need "
                f"{MIN_ROOMS} <= MIN <= MAX <= {MAX_ROOMS}"
            )
        if not 0.05 <= self.agent_radius <= 0.6:
            raise ConfigError(f"agent_radius must be in [0.05, 0.6] m, got {self.agent_radius}")
        if self.max_attempts < 1:
            raise ConfigError(f"max_attempts must be >= 1, got {self.max_attempts}")
        if self.min_room_navigable < 0:
            raise ConfigError(f"min_room_navigable must be >= 0, got {self.min_room_navigable}")


@dataclass(frozen=True)
class House:
    """A furnished, reachability-checked house ready to be written as USD.

    Attributes:
        seed, attempt: Where its randomness came from.
        plan: Floor plan.
        doors: Doors with leaves resolved against the furniture.
        objects: Placed objects.
        wall_looks, floor_looks: (colour, material) per room index.
        navigable_area: Navigable area (m²) per room for the option's agent radius.
    """

    seed: int
    attempt: int
    plan: FloorPlan
    doors: tuple[DoorPlan, ...]
    objects: tuple[PlacedObject, ...]
    wall_looks: tuple[tuple[str, str], ...]
    floor_looks: tuple[tuple[str, str], ...]
    navigable_area: tuple[float, ...]
    options: HouseOptions = field(default_factory=HouseOptions)

    def summary(self) -> dict:
        """JSON-ready facts about the house (for meta.json and statistics)."""
        cats = Counter(o.category for o in self.objects)
        return {
            "generator": GENERATOR_VERSION,
            "seed": self.seed,
            "attempt": self.attempt,
            "num_rooms": len(self.plan.rooms),
            "rooms": [{"id": r.room_id, "type": r.room_type, "area_m2": round(r.area, 2),
                       "navigable_m2": self.navigable_area[r.index]} for r in self.plan.rooms],
            "num_objects": len(self.objects),
            "num_doors": sum(1 for d in self.doors if not d.open_plan),
            "num_open_plan": sum(1 for d in self.doors if d.open_plan),
            "num_on_relations": sum(1 for o in self.objects if o.support is not None),
            "categories": dict(sorted(cats.items())),
            "footprint_m2": round(self.plan.footprint_area, 2),
            "navigable_area_m2": round(float(sum(self.navigable_area)), 2),
            "wall_height_m": self.plan.wall_height,
            "floorplan_signature": self.plan.room_graph_signature(),
        }


LAYOUT_KEYS = ("num_rooms", "rooms", "num_objects", "num_doors", "num_open_plan", "num_on_relations", "categories",
               "footprint_m2", "navigable_area_m2", "wall_height_m", "floorplan_signature")
"""The parts of :meth:`House.summary` that describe the home itself, not where its randomness came from."""


def layout_digest(summary: dict) -> str:
    """A content hash of a home from its summary (``meta.json``): its rooms with their types and
    areas, objects by category, doors, footprint, navigable area and room graph. Two homes
    with one digest are the same home whatever their seeds."""
    facts = {key: summary[key] for key in LAYOUT_KEYS}
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode("utf-8")).hexdigest()

def _attempt(seed: int, attempt: int, options: HouseOptions) -> House | None:
    rng = np.random.default_rng([seed, attempt])
    num_rooms = int(rng.integers(options.min_rooms, options.max_rooms + 1))
    plan = sample_floorplan(rng, num_rooms)
    furnisher = Furnisher(plan, rng, options.agent_radius)
    furnish(furnisher)
    points = [p for pts in furnisher.approach.values() for p in pts]
    if not furnisher.grid.connected(points, furnisher.radius):
        logger.debug("seed %d attempt %d rejected: rooms not all reachable", seed, attempt)
        return None
    nav = furnisher.grid.navigable_area_per_room(options.agent_radius, len(plan.rooms))
    if min(nav) < options.min_room_navigable:
        logger.debug("seed %d attempt %d rejected: a room has too little navigable area", seed, attempt)
        return None
    wall_looks = tuple((WALL_PAINTS[int(rng.integers(len(WALL_PAINTS)))], "plaster") for _ in plan.rooms)
    floor_looks = []
    for room in plan.rooms:
        finishes = FLOOR_FINISHES.get(room.room_type, FLOOR_FINISHES["default"])
        floor_looks.append(finishes[int(rng.integers(len(finishes)))])
    return House(seed, attempt, plan, tuple(furnisher.doors), tuple(furnisher.objects), wall_looks,
                 tuple(floor_looks), tuple(nav), options)


def generate_house(seed: int, options: HouseOptions | None = None) -> House:
    """Generate the house of ``seed`` (resampling until every room is reachable).

    Raises:
        SceneError: If no attempt produced a valid house.
    """
    options = options or HouseOptions()
    if seed < 0:
        raise ConfigError(f"seed must be >= 0, got {seed}")
    for attempt in range(options.max_attempts):
        try:
            house = _attempt(seed, attempt, options)
        except SceneError as exc:
            logger.debug("seed %d attempt %d rejected: %s", seed, attempt, exc)
            continue
        if house is not None:
            return house
    raise SceneError(f"no valid house for seed {seed} after {options.max_attempts} attempts")
