"""Per-room point lights that do not leak through walls.

Each room gets a ceiling light over its floor's centroid, and every lamp of the scene
(objects whose category names a lamp or light) a warm light of its own. Rendering is
shadowless, so light is *confined per room*: a top-down room map (each cell: the room whose
floor covers it, gaps filled with the nearest room) tells the shader which room a surface
faces, and only that room's lights reach it. A scene without rooms is one room.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from vlnverse.cache import ProcessMemo
from vlnverse.scene.types import Scene

#: Room map cell size (metres).
ROOM_MAP_RESOLUTION = 0.05
#: Light falls off as ``power / (d² + LIGHT_SOFTNESS)`` at ``d`` metres (no singular hot spots).
LIGHT_SOFTNESS = 4.0
#: Ceiling light height above the room's floor (metres), and its brightness at a typical
#: wall distance (half the side of a square room of the same area): bigger rooms get brighter lights.
CEILING_LIGHT_HEIGHT = 2.2
CEILING_BRIGHTNESS = 0.8
#: A lamp's power and colour (linear RGB); ceiling lights are neutral white.
LAMP_POWER = 2.0
LAMP_COLOUR = (1.0, 0.85, 0.65)
#: Words of lamp categories.
LAMP_WORDS = ("lamp", "light", "chandelier", "sconce")
#: Scenes whose lighting a process keeps (:func:`scene_lighting`).
LIGHTINGS_KEPT = 4

_lightings = ProcessMemo(LIGHTINGS_KEPT)


@dataclass(frozen=True)
class RoomLighting:
    """Lights grouped by room, and the map that says which room a point belongs to.

    Attributes:
        room_map: (H, W) uint8: 1 + the room index of each cell (row = y, column = x).
        origin: World ``(x, y)`` of cell (0, 0)'s corner; ``resolution``: cell size.
        lights: (L, 4) float32 ``(x, y, z, power)``, grouped by room; ``colours``: (L, 3).
        ranges: (rooms + 1, 2) int32 ``(first light, count)`` per room-map value (0 = none).
    """

    room_map: np.ndarray
    origin: tuple[float, float]
    resolution: float
    lights: np.ndarray
    colours: np.ndarray
    ranges: np.ndarray


def _room_map(scene: Scene, origin: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    from scipy import ndimage
    from skimage.draw import polygon

    grid = np.zeros(shape, dtype=np.uint8)
    for index, room in enumerate(scene.rooms[:254]):
        for triangle in scene.triangles[room.floor_triangle_indices]:
            cells = (triangle[:, :2] - origin) / ROOM_MAP_RESOLUTION
            rows, cols = polygon(cells[:, 1], cells[:, 0], shape)
            grid[rows, cols] = index + 1
    if not grid.any():
        return np.ones(shape, dtype=np.uint8)
    _, (rows, cols) = ndimage.distance_transform_edt(grid == 0, return_indices=True)
    return grid[rows, cols]


def scene_lighting(scene: Scene) -> RoomLighting:
    """:func:`room_lighting` of ``scene``, shared by the renderers of this scene object in one
    process (its room map is a third of setting up a renderer); its arrays are read-only."""
    def build() -> tuple[weakref.ref, RoomLighting]:
        lighting = room_lighting(scene)
        for array in (lighting.room_map, lighting.lights, lighting.colours, lighting.ranges):
            array.flags.writeable = False
        return weakref.ref(scene), lighting

    return _lightings.get(id(scene), build, fresh=lambda kept: kept[0]() is scene)[1]


def room_lighting(scene: Scene) -> RoomLighting:
    """The lights of ``scene`` and its room map (deterministic)."""
    low, high = scene.bounds
    origin = np.floor(low[:2] / ROOM_MAP_RESOLUTION) * ROOM_MAP_RESOLUTION - ROOM_MAP_RESOLUTION
    shape = tuple(int(v) for v in np.ceil((high[:2] - origin) / ROOM_MAP_RESOLUTION) + 2)[::-1]
    room_map = _room_map(scene, origin, shape)
    per_room: dict[int, list[tuple[tuple[float, ...], tuple[float, ...]]]] = {}
    for value in np.unique(room_map).tolist():
        cells = np.argwhere(room_map == value)
        area = len(cells) * ROOM_MAP_RESOLUTION**2
        centre = origin + (cells[:, ::-1].mean(axis=0) + 0.5) * ROOM_MAP_RESOLUTION
        floor = _floor_height(scene, value - 1, low[2])
        power = CEILING_BRIGHTNESS * (area / 4.0 + LIGHT_SOFTNESS)
        per_room[value] = [((*centre, floor + CEILING_LIGHT_HEIGHT, power), (1.0, 1.0, 1.0))]
    for obj in scene.objects:
        if any(word in obj.category for word in LAMP_WORDS):
            x, y = obj.center[:2]
            cell = np.clip(((np.array([y, x]) - origin[::-1]) / ROOM_MAP_RESOLUTION).astype(int), 0,
                           np.array(shape) - 1)
            top = float(obj.aabb_max[2]) - 0.1
            per_room.setdefault(int(room_map[cell[0], cell[1]]), []).append(((x, y, top, LAMP_POWER), LAMP_COLOUR))
    lights, colours = [], []
    ranges = np.zeros((int(room_map.max()) + 1, 2), dtype=np.int32)
    for value in sorted(per_room):
        ranges[value] = (len(lights), len(per_room[value]))
        for light, colour in per_room[value]:
            lights.append(light)
            colours.append(colour)
    return RoomLighting(room_map, (float(origin[0]), float(origin[1])), ROOM_MAP_RESOLUTION,
                        np.array(lights, dtype=np.float32), np.array(colours, dtype=np.float32), ranges)


def _floor_height(scene: Scene, room: int, default: float) -> float:
    """Highest point of the room's floor (the scene's lowest point for unannotated rooms)."""
    if 0 <= room < len(scene.rooms) and len(scene.rooms[room].floor_triangle_indices):
        return float(scene.triangles[scene.rooms[room].floor_triangle_indices][..., 2].max())
    return float(default)
