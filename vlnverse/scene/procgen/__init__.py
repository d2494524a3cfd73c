"""Procedural homes: physics-ready, semantically labelled USD scenes on demand (ProcTHOR-style).

Pipeline: :mod:`.program` (which rooms) → :mod:`.layout` (label grid) → :mod:`.floorplan`
(walls, doors, windows) → :mod:`.placement` + :mod:`.rules` (furniture, small objects on
supports) → :mod:`.house` (reachability-checked, resampled) → :mod:`.authoring` (USD) →
:mod:`.validation` (asset validator + our checks); :mod:`.corpus` makes many scenes with
splits, :mod:`.stats` summarizes them. Heavy modules are imported lazily.
"""

from __future__ import annotations

from vlnverse.scene.procgen.house import GENERATOR_VERSION, House, HouseOptions, generate_house

__all__ = ["GENERATOR_VERSION", "House", "HouseOptions", "generate_house", "generate_scene_file"]


def generate_scene_file(path, seed: int, options: HouseOptions | None = None, file_format: str = "usdc"):
    """Generate the house of ``seed`` and write it to ``path``; returns the :class:`House`."""
    from vlnverse.scene.procgen.authoring import write_house

    house = generate_house(seed, options)
    write_house(house, path, file_format)
    return house
