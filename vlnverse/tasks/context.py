"""Per-scene facts the samplers and instruction writers share, computed once per scene.

A :class:`SceneContext` wraps a :class:`~vlnverse.scene.inspect.PreparedScene` and adds the
main navigable component, per-room navigable cells, per-object rooms, landmark
eligibility and the goal viewpoints of each object (navigable cells within
``viewpoint_distance`` of its footprint).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from vlnverse.errors import SceneError
from vlnverse.scene.inspect import PreparedScene
from vlnverse.scene.scene_graph import describe_object, support_of
from vlnverse.scene.types import SceneObject

#: Categories never used as landmarks or targets (structure, not furniture).
STRUCTURAL = frozenset({"door", "wall", "floor", "ceiling", "window", "doorway", "stairs"})
MIN_LANDMARK_SIZE = 0.35  # metres: the largest horizontal extent of a landmark


def room_name(room_type: str) -> str:
    """``living_room`` → ``living room``."""
    name = room_type.replace("_", " ").strip()
    return "room" if name in ("", "unknown") else name


@dataclass(frozen=True)
class ObjectInfo:
    """What instruction writers need of one object.

    Attributes:
        object_id, category: Identity.
        room_id: Room the object stands in (None outside every room).
        center: AABB centre (3,).
        aabb_min, aabb_max: Bounds.
        phrase: ``"red ceramic cup"``-style noun phrase without article.
        color: The authored colour, if any.
        landmark: Large enough to be a landmark along a path.
    """

    object_id: str
    category: str
    room_id: str | None
    center: np.ndarray
    aabb_min: np.ndarray
    aabb_max: np.ndarray
    phrase: str
    color: str | None
    landmark: bool


class SceneContext:
    """A prepared scene plus the derived tables task sampling needs."""

    def __init__(self, prepared: PreparedScene, *, viewpoint_distance: float = 1.0) -> None:
        self.prepared = prepared
        self.scene = prepared.scene
        self.occupancy = prepared.occupancy
        self.navigator = prepared.navigator
        self.graph = prepared.graph
        self.viewpoint_distance = viewpoint_distance
        occ = self.occupancy
        if not occ.navigable.any():
            raise SceneError(f"{self.scene.path}: no navigable floor for the agent")
        self.component = occ.largest_component
        self.main_mask = occ.components == self.component
        self.room_ids = [room.room_id for room in occ.rooms]
        self.room_types = {room.room_id: room.room_type for room in occ.rooms}
        self.objects: dict[str, ObjectInfo] = {}
        for obj in self.scene.objects:
            if obj.category in STRUCTURAL or obj.object_id not in self.graph:
                continue
            node = self.graph.nodes[obj.object_id]
            self.objects[obj.object_id] = ObjectInfo(
                object_id=obj.object_id, category=obj.category, room_id=node.get("room"),
                center=np.asarray(obj.center, float), aabb_min=np.asarray(obj.aabb_min, float),
                aabb_max=np.asarray(obj.aabb_max, float), phrase=_phrase(self.graph, obj),
                color=obj.color, landmark=float(np.max(obj.size[:2])) >= MIN_LANDMARK_SIZE,
            )
        self._viewpoints: dict[str, np.ndarray] = {}

    # -- rooms -------------------------------------------------------------------------
    @property
    def scene_id(self) -> str:
        return self.scene.scene_id

    def room_at(self, point) -> str | None:
        index = self.occupancy.room_at(point)
        return self.room_ids[index] if index >= 0 else None

    def rooms_along(self, points: np.ndarray) -> np.ndarray:
        """Room index (-1 outside rooms) of each point (N, 2|3), vectorized."""
        return self.occupancy.lookup(self.occupancy.room_map, points, -1).astype(np.int64)

    def room_label(self, room_id: str | None) -> str:
        return room_name(self.room_types.get(room_id, "unknown")) if room_id else "room"

    @cached_property
    def room_cells(self) -> dict[int, np.ndarray]:
        """Navigable cells of the main component per room index (``-1``: outside rooms)."""
        cells = np.argwhere(self.main_mask)
        rooms = self.occupancy.room_map[cells[:, 0], cells[:, 1]]
        return {int(r): cells[rooms == r] for r in np.unique(rooms)}

    @cached_property
    def main_cells(self) -> np.ndarray:
        return np.argwhere(self.main_mask)

    # -- objects -----------------------------------------------------------------------
    def objects_in_room(self, room_id: str | None) -> list[ObjectInfo]:
        return [o for o in self.objects.values() if o.room_id == room_id]

    def support(self, object_id: str) -> str | None:
        support = support_of(self.graph, object_id)
        return support if support in self.objects else None

    def neighbours(self, object_id: str) -> list[tuple[str, str, float]]:
        """``(other_id, relation, gap)`` for ``next_to``/``near`` edges, closest first."""
        out = []
        for _, other, key, data in self.graph.out_edges(object_id, keys=True, data=True):
            if key in ("next_to", "near") and other in self.objects:
                out.append((other, key, float(data.get("distance", 0.0))))
        return sorted(out, key=lambda item: (item[2], item[0]))

    def viewpoints(self, object_id: str) -> np.ndarray:
        """Navigable main-component cells whose centre lies within ``viewpoint_distance``
        of the object's footprint, as (K, 3) world points (cached)."""
        if object_id in self._viewpoints:
            return self._viewpoints[object_id]
        info = self.objects[object_id]
        occ = self.occupancy
        reach = self.viewpoint_distance
        lo = np.clip(occ.world_to_cell(info.aabb_min[:2] - reach), 0, np.array(occ.shape) - 1)
        hi = np.clip(occ.world_to_cell(info.aabb_max[:2] + reach), 0, np.array(occ.shape) - 1)
        window = self.main_mask[lo[0]:hi[0] + 1, lo[1]:hi[1] + 1]
        cells = np.argwhere(window) + lo
        points = occ.cell_to_world(cells) if len(cells) else np.zeros((0, 3))
        if len(points):
            gap = np.maximum(0.0, np.maximum(info.aabb_min[:2] - points[:, :2], points[:, :2] - info.aabb_max[:2]))
            points = points[np.hypot(gap[:, 0], gap[:, 1]) <= reach]
        self._viewpoints[object_id] = points
        return points


def _phrase(graph, obj: SceneObject) -> str:
    node = graph.nodes[obj.object_id]
    words = [w for w in (node.get("color"), node.get("category")) if w]
    return " ".join(words).replace("_", " ") or describe_object(graph, obj.object_id).replace("_", " ")
