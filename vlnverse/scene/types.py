"""The in-memory scene: world-space triangles, labelled objects and rooms (Z-up, meters).

A :class:`Scene` is what :func:`vlnverse.scene.load_scene` returns for any USD stage.
Geometry is flat arrays indexed per triangle (fast to rasterize and to hand to a
physics engine); per-prim records say where each triangle came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class PrimGeometry:
    """One geometry prim of the stage (a mesh or a tessellated implicit shape).

    Attributes:
        path: USD prim path.
        color: Linear RGB display colour in [0, 1] (bound material, else displayColor).
        collides: Whether the prim takes part in collision (see ``Scene`` docs).
        object_index: Index into ``Scene.objects`` of the labelled object owning it, or -1.
        room_index: Index into ``Scene.rooms`` of the room owning it, or -1.
        movable: Whether the prim belongs to a rigid body (``UsdPhysics.RigidBodyAPI``).
        triangle_slice: The prim's triangles in ``Scene.triangles``.
        name: The prim's name (e.g. ``Floor``, ``Ceiling``, ``Wall_0``).
        material: Name of the bound material (e.g. ``wood_dark_brown``), "" when none.
    """

    path: str
    color: tuple[float, float, float]
    collides: bool
    object_index: int
    room_index: int
    movable: bool
    triangle_slice: slice
    name: str
    material: str = ""


@dataclass(frozen=True)
class OrientedBox:
    """An oriented bounding box: ``center`` + ``rotation @ (±half_extents)``."""

    center: np.ndarray
    half_extents: np.ndarray
    rotation: np.ndarray


@dataclass(frozen=True)
class SceneObject:
    """A semantically labelled prim (``UsdSemantics.LabelsAPI`` ``class`` or legacy Isaac semantics).

    Attributes:
        object_id: Stable id (the prim name, made unique within the scene).
        prim_path: USD path of the labelled prim.
        category: Semantic class, lower case (e.g. ``"chair"``).
        aabb_min, aabb_max: World axis-aligned bounds (3,).
        obb: World oriented bounding box from the prim's own frame.
        color, material, state: Values of ``vlnverse:color/material/state`` if authored.
        movable: Whether the object is a rigid body.
        triangle_indices: Indices of the triangles it owns in ``Scene.triangles``.
    """

    object_id: str
    prim_path: str
    category: str
    aabb_min: np.ndarray
    aabb_max: np.ndarray
    obb: OrientedBox
    color: str | None = None
    material: str | None = None
    state: str | None = None
    movable: bool = False
    triangle_indices: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def center(self) -> np.ndarray:
        return (self.aabb_min + self.aabb_max) / 2.0

    @property
    def size(self) -> np.ndarray:
        return self.aabb_max - self.aabb_min


@dataclass(frozen=True)
class Room:
    """A room: annotated with ``vlnverse:roomType`` or segmented from the occupancy map.

    Attributes:
        room_id: Stable id (prim name, or ``room_<k>`` when segmented).
        room_type: e.g. ``"bedroom"``; ``"unknown"`` when segmented.
        prim_path: USD path of the room prim ("" when segmented).
        floor_triangle_indices: Triangles of the room's floor in ``Scene.triangles``
            (empty for segmented rooms, whose extent lives in the occupancy room map).
    """

    room_id: str
    room_type: str
    prim_path: str = ""
    floor_triangle_indices: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


@dataclass
class Scene:
    """A loaded stage in Z-up meters.

    Attributes:
        path: Source file.
        triangles: (N, 3, 3) float64 world-space triangle vertices, counter-clockwise
            seen from the outside (normals point out).
        triangle_prim: (N,) int32 index into ``prims`` for each triangle.
        prims: Geometry prims in traversal order.
        objects: Labelled objects.
        rooms: Annotated rooms (segmented rooms are added by the occupancy layer).
        doors: Doorways authored with ``vlnverse:connects``.
        source_meters_per_unit, source_up_axis: The stage's own metadata before normalization.
        sources: The files the stage was composed from (its layers and their assets).
    """

    path: Path
    triangles: np.ndarray
    triangle_prim: np.ndarray
    prims: list[PrimGeometry]
    objects: list[SceneObject]
    rooms: list[Room]
    doors: list[Door] = field(default_factory=list)
    source_meters_per_unit: float = 1.0
    source_up_axis: str = "Z"
    sources: tuple[str, ...] = ()

    @property
    def scene_id(self) -> str:
        """The scene's id: its folder name for ``<id>/scene.usd*``, else the file stem."""
        return self.path.parent.name if self.path.stem == "scene" else self.path.stem

    @property
    def collision_mask(self) -> np.ndarray:
        """(N,) bool: which triangles collide."""
        flags = np.array([p.collides for p in self.prims], dtype=bool)
        return flags[self.triangle_prim] if len(self.prims) else np.zeros(0, dtype=bool)

    @property
    def triangle_object(self) -> np.ndarray:
        """(N,) int: owning object index per triangle, -1 for none."""
        owners = np.array([p.object_index for p in self.prims], dtype=np.int64)
        return owners[self.triangle_prim] if len(self.prims) else np.zeros(0, dtype=np.int64)

    @property
    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """World AABB (min, max) of all geometry."""
        flat = self.triangles.reshape(-1, 3)
        return flat.min(axis=0), flat.max(axis=0)

    def object_by_id(self, object_id: str) -> SceneObject:
        for obj in self.objects:
            if obj.object_id == object_id:
                return obj
        raise KeyError(object_id)


@dataclass(frozen=True)
class Door:
    """A doorway between rooms, from a prim carrying ``vlnverse:connects``.

    Attributes:
        door_id: Prim name.
        prim_path: USD path.
        position: World centre of the opening (3,).
        width: Opening width in meters (``vlnverse:doorWidth``; 0 if not authored).
        connects: Ids of the rooms the doorway joins (usually two; one for an exterior door).
        state: ``"open"``/``"closed"``/``None`` (``vlnverse:state``).
        open_plan: True for a wall-less opening between rooms (``vlnverse:openPlan``).
    """

    door_id: str
    prim_path: str
    position: np.ndarray
    width: float
    connects: tuple[str, ...]
    state: str | None = None
    open_plan: bool = False
