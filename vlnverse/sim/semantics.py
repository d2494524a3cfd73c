"""The instance table: what semantic ids and contacts resolve to.

Id 0 means "nothing"; ids ``1..K`` are the scene's labelled objects in order; further ids
are structural instances (walls, floor, ceiling, …) per room. Backends report prim
indices; :attr:`InstanceTable.prim_instance` maps them to instance ids. Backends may merge
prims that share an instance id into one body (``prim_instance`` is a pure function of
the scene, so every backend agrees).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from vlnverse.scene.types import PrimGeometry, Scene

_STRUCTURE = ("wall", "floor", "ceiling", "door", "window", "stair", "roof", "ground")


@dataclass(frozen=True)
class Instance:
    """One semantic instance.

    Attributes:
        instance_id: The id in semantic images.
        object_id: Scene object id, or ``"<category>@<room_id>"`` for structure.
        category: Semantic class (``"chair"``, ``"wall"``, …).
        object_index: Index into ``Scene.objects``, or -1 for structure.
    """

    instance_id: int
    object_id: str
    category: str
    object_index: int = -1


def structural_category(prim: PrimGeometry) -> str:
    """The class of an unlabelled prim, from its path (``…/Walls/Wall_3`` → ``wall``)."""
    for part in reversed(prim.path.lower().split("/")):
        for word in _STRUCTURE:
            if part.startswith(word):
                return word
    name = re.sub(r"[_\d]+$", "", prim.name.lower()) or "structure"
    return name


@dataclass(frozen=True)
class InstanceTable:
    """Instances of a scene and the prim → instance map.

    Attributes:
        instances: Index ``i`` holds instance id ``i``; entry 0 is "nothing".
        prim_instance: (P,) int32 instance id of each prim of ``Scene.prims``.
    """

    instances: tuple[Instance, ...]
    prim_instance: np.ndarray

    def __len__(self) -> int:
        return len(self.instances)

    @property
    def max_id(self) -> int:
        return len(self.instances) - 1

    def ids_of_prims(self, prim_indices: np.ndarray) -> np.ndarray:
        """Instance ids for an array of prim indices (-1 → 0)."""
        lut = np.concatenate([[0], self.prim_instance]).astype(np.int32)
        return lut[np.asarray(prim_indices) + 1]

    def categories(self) -> list[str]:
        return [inst.category for inst in self.instances]


def build_instance_table(scene: Scene) -> InstanceTable:
    """The instance table of ``scene`` (deterministic)."""
    instances = [Instance(0, "", "nothing")]
    for index, obj in enumerate(scene.objects):
        instances.append(Instance(index + 1, obj.object_id, obj.category, index))
    structural: dict[tuple[str, int], int] = {}
    prim_instance = np.zeros(len(scene.prims), dtype=np.int32)
    for p, prim in enumerate(scene.prims):
        if prim.object_index >= 0:
            prim_instance[p] = prim.object_index + 1
            continue
        category = structural_category(prim)
        key = (category, prim.room_index)
        if key not in structural:
            room = scene.rooms[prim.room_index].room_id if 0 <= prim.room_index < len(scene.rooms) else "scene"
            structural[key] = len(instances)
            instances.append(Instance(len(instances), f"{category}@{room}", category))
        prim_instance[p] = structural[key]
    return InstanceTable(tuple(instances), prim_instance)
