"""The room program of a house: which rooms it has and how big they should be.

A program is sampled per seed before any geometry exists; the layout packs it into a
footprint. Room types follow the environment-layer vocabulary
(``vlnverse:roomType``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vlnverse.errors import ConfigError

ROOM_TYPES = (
    "living_room", "kitchen", "dining_room", "bedroom", "bathroom",
    "hallway", "study", "laundry", "storage",
)

#: Target floor area range (m²) per room type (hallways are sized by the layout), those
#: of real apartments and houses: homes of 4-12 rooms come out at about 60-200 m² of
#: floor (the paper's homes; see README "comparability with the paper").
ROOM_AREA = {
    "living_room": (20.0, 38.0),
    "kitchen": (10.0, 17.0),
    "dining_room": (11.0, 18.0),
    "bedroom": (11.0, 20.0),
    "bathroom": (5.0, 8.5),
    "study": (9.0, 13.0),
    "laundry": (5.0, 7.0),
    "storage": (3.5, 6.0),
}

#: Smallest width (m) along the band a room may get.
ROOM_MIN_WIDTH = {
    "living_room": 3.6, "kitchen": 2.6, "dining_room": 2.8, "bedroom": 2.9, "bathroom": 2.0,
    "study": 2.5, "laundry": 2.0, "storage": 1.9, "hallway": 1.2,
}

#: Optional rooms added beyond the core, with how many a house may hold in total.
_EXTRA_CAPS = {"bedroom": 4, "bathroom": 3, "study": 1, "laundry": 1, "storage": 1}
_EXTRA_WEIGHTS = {"bedroom": 4.0, "bathroom": 2.0, "study": 1.5, "laundry": 1.0, "storage": 1.0}

MIN_ROOMS, MAX_ROOMS = 3, 12


@dataclass(frozen=True)
class RoomSpec:
    """One room of the program.

    Attributes:
        room_id: Unique id, ``<type>_<k>`` (k counts rooms of that type).
        room_type: One of :data:`ROOM_TYPES`.
        area: Target area in m² (0 for a hallway: the layout sizes it).
    """

    room_id: str
    room_type: str
    area: float


def sample_program(rng: np.random.Generator, num_rooms: int) -> list[RoomSpec]:
    """Sample the rooms of a house with ``num_rooms`` rooms.

    Core rooms come first (living room; bedroom and bathroom; kitchen from 4 rooms;
    dining room from 5; a hallway from 6 rooms, sometimes from 5 in place of the dining room), then optional rooms
    are drawn by weight until the count is reached.
    """
    if not MIN_ROOMS <= num_rooms <= MAX_ROOMS:
        raise ConfigError(f"num_rooms must be in [{MIN_ROOMS}, {MAX_ROOMS}], got {num_rooms}")
    types = ["living_room", "bedroom", "bathroom"]
    if num_rooms >= 4:
        types.append("kitchen")
    if num_rooms >= 5:
        types.append("dining_room")
    if num_rooms >= 6 or (num_rooms == 5 and rng.random() < 0.3):
        types.append("hallway")
        if len(types) > num_rooms:  # a 5-room home with a hallway eats in the kitchen
            types.remove("dining_room")
    while len(types) < num_rooms:
        options = [t for t, cap in _EXTRA_CAPS.items() if types.count(t) < cap]
        weights = np.array([_EXTRA_WEIGHTS[t] for t in options])
        types.append(options[int(rng.choice(len(options), p=weights / weights.sum()))])
    specs: list[RoomSpec] = []
    counters: dict[str, int] = {}
    for room_type in types:
        k = counters.get(room_type, 0)
        counters[room_type] = k + 1
        if room_type == "hallway":
            area = 0.0
        else:
            lo, hi = ROOM_AREA[room_type]
            if room_type == "bedroom" and k == 0:
                lo = (lo + hi) / 2.0  # the main bedroom is the large one
            area = round(float(rng.uniform(lo, hi)), 1)
        specs.append(RoomSpec(f"{room_type}_{k}", room_type, area))
    return specs
