"""Small in-memory scenes made of boxes, for tests, benchmarks and examples.

They are :class:`~vlnverse.scene.types.Scene` objects built directly (no USD file), laid
out like the procedural houses: a floor slab whose top is at z = 0, walls, a ceiling and
labelled furniture.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vlnverse.scene.types import OrientedBox, PrimGeometry, Room, Scene, SceneObject

# Outward-facing (counter-clockwise seen from outside) faces of a unit box's 8 corners.
_BOX_FACES = np.array([
    [0, 2, 1], [0, 3, 2], [4, 5, 6], [4, 6, 7], [0, 1, 5], [0, 5, 4],
    [1, 2, 6], [1, 6, 5], [2, 3, 7], [2, 7, 6], [3, 0, 4], [3, 4, 7],
])


def box_triangles(lo: Sequence[float], hi: Sequence[float]) -> np.ndarray:
    """(12, 3, 3) outward-facing triangles of the axis-aligned box ``lo``–``hi``."""
    (x0, y0, z0), (x1, y1, z1) = lo, hi
    corners = np.array([
        [x0, y0, z0], [x1, y0, z0], [x1, y1, z0], [x0, y1, z0],
        [x0, y0, z1], [x1, y0, z1], [x1, y1, z1], [x0, y1, z1],
    ], dtype=np.float64)
    return corners[_BOX_FACES]


@dataclass(frozen=True)
class Box:
    """One box prim.

    Attributes:
        name: Prim name (and object id when ``category`` is set).
        lo, hi: Opposite corners (metres).
        color: Linear RGB in [0, 1].
        category: Semantic class; ``None`` makes it unlabelled structure (wall, floor…).
        movable: A rigid body (dynamic in the simulator).
        collides: Takes part in collision.
        group: Path segment under the room (``"Walls"``, ``"Objects"``…).
    """

    name: str
    lo: tuple[float, float, float]
    hi: tuple[float, float, float]
    color: tuple[float, float, float] = (0.8, 0.8, 0.8)
    category: str | None = None
    movable: bool = False
    collides: bool = True
    group: str = "Objects"


def scene_from_boxes(boxes: Sequence[Box], *, room_id: str = "room_0", room_type: str = "living_room",
                     path: str = "box_scene.usda") -> Scene:
    """A one-room :class:`Scene` made of ``boxes``."""
    triangles, triangle_prim, prims, objects = [], [], [], []
    floor_triangles: list[int] = []
    count = 0
    for box in boxes:
        tris = box_triangles(box.lo, box.hi)
        object_index = -1
        prim_path = f"/World/Rooms/{room_id}/{box.group}/{box.name}"
        if box.category is not None:
            object_index = len(objects)
            lo, hi = np.array(box.lo, dtype=float), np.array(box.hi, dtype=float)
            objects.append(SceneObject(
                object_id=box.name, prim_path=prim_path, category=box.category, aabb_min=lo,
                aabb_max=hi, obb=OrientedBox((lo + hi) / 2, (hi - lo) / 2, np.eye(3)),
                movable=box.movable, triangle_indices=np.arange(count, count + len(tris)),
            ))
        if box.group == "Floor":
            up = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])[:, 2] > 0
            floor_triangles.extend((count + np.flatnonzero(up)).tolist())
        prims.append(PrimGeometry(
            path=prim_path, color=tuple(box.color), collides=box.collides, object_index=object_index,
            room_index=0, movable=box.movable, triangle_slice=slice(count, count + len(tris)), name=box.name,
        ))
        triangles.append(tris)
        triangle_prim.append(np.full(len(tris), len(prims) - 1, dtype=np.int32))
        count += len(tris)
    room = Room(room_id, room_type, f"/World/Rooms/{room_id}", np.array(floor_triangles, dtype=np.int64))
    return Scene(
        path=Path(path), triangles=np.concatenate(triangles), triangle_prim=np.concatenate(triangle_prim),
        prims=prims, objects=objects, rooms=[room],
    )


def box_room(width: float = 6.0, depth: float = 4.0, *, height: float = 2.5, thickness: float = 0.1,
             furniture: Sequence[Box] = (), extra_walls: Sequence[Box] = (), ceiling: bool = True) -> Scene:
    """A closed rectangular room ``[0, width] × [0, depth]`` with optional furniture.

    Walls are light and differently tinted; the floor is wood-brown.
    """
    t = thickness
    boxes = [
        Box("Floor", (-t, -t, -0.1), (width + t, depth + t, 0.0), (0.45, 0.30, 0.18), group="Floor"),
        Box("Wall_0", (-t, -t, 0.0), (0.0, depth + t, height), (0.80, 0.78, 0.70), group="Walls"),
        Box("Wall_1", (width, -t, 0.0), (width + t, depth + t, height), (0.80, 0.78, 0.70), group="Walls"),
        Box("Wall_2", (0.0, -t, 0.0), (width, 0.0, height), (0.75, 0.80, 0.85), group="Walls"),
        Box("Wall_3", (0.0, depth, 0.0), (width, depth + t, height), (0.75, 0.80, 0.85), group="Walls"),
    ]
    if ceiling:
        boxes.append(Box("Ceiling", (-t, -t, height), (width + t, depth + t, height + 0.1),
                         (0.95, 0.95, 0.95), group="Ceiling"))
    return scene_from_boxes([*boxes, *extra_walls, *furniture])
