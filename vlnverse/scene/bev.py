"""Bird's-eye-view pictures of a scene (paper Fig. 8): walls, navigable space, rooms
coloured and named, objects outlined and labelled, optional paths."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from vlnverse.fileio import atomic_open
from vlnverse.scene.occupancy import OccupancyMap
from vlnverse.scene.types import Scene

BLOCKED_RGB = (0.22, 0.22, 0.25)
FREE_RGB = (0.80, 0.80, 0.80)
SMALL_OBJECT_M2 = 0.15  # objects with smaller footprints are drawn but not labelled
ROOM_HUES = 20  # rooms take turns through this many hues (a room's index modulo it)


def room_palette() -> np.ndarray:
    """(ROOM_HUES, 3) RGB of the room tints: hues evenly around the colour wheel, neighbours
    in index at alternating saturation so that adjacent rooms stay apart (no matplotlib
    import: workers draw scene maps off this)."""
    import colorsys

    return np.array([colorsys.hsv_to_rgb(i / ROOM_HUES, 0.75 if i % 2 == 0 else 0.45, 0.85)
                     for i in range(ROOM_HUES)])


def bev_figure(scene: Scene, occupancy: OccupancyMap, paths: Sequence[np.ndarray] = (),
               markers: Sequence[tuple[np.ndarray, str, str]] = (), title: str | None = None):
    """A :class:`matplotlib.figure.Figure` of the map (no pyplot); ``paths`` are (K,≥2)
    polylines, ``markers`` are (xy, colour, label) triples."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Polygon

    image = map_image(occupancy)
    extent = (occupancy.origin[0], occupancy.origin[0] + occupancy.shape[1] * occupancy.resolution,
              occupancy.origin[1], occupancy.origin[1] + occupancy.shape[0] * occupancy.resolution)
    width_m, height_m = extent[1] - extent[0], extent[3] - extent[2]
    scale = 10.0 / max(width_m, height_m)
    fig = Figure(figsize=(max(4.0, width_m * scale) + 1, max(4.0, height_m * scale) + 1), dpi=120)
    ax = fig.subplots()
    ax.imshow(image, origin="lower", extent=extent, interpolation="nearest")
    for index, room in enumerate(occupancy.rooms):
        cells = np.argwhere(occupancy.room_map == index)
        if len(cells):
            center = occupancy.cell_to_world(cells.mean(axis=0))
            ax.text(center[0], center[1], room_label(room.room_id, room.room_type), ha="center", va="center",
                    fontsize=7, weight="bold", color="black",
                    bbox=dict(boxstyle="round,pad=0.2", fc="white", alpha=0.6, lw=0))
    for obj in scene.objects:
        corners = footprint(obj)
        ax.add_patch(Polygon(corners, closed=True, fill=False, lw=0.6, ec="#7a3b00"))
        size = obj.size
        if size[0] * size[1] >= SMALL_OBJECT_M2:
            ax.text(obj.center[0], obj.center[1], obj.category, fontsize=5.5, ha="center", va="center", color="#111",
                    bbox=dict(boxstyle="round,pad=0.1", fc="white", alpha=0.75, lw=0))
    for path in paths:
        path = np.asarray(path)
        if len(path):
            ax.plot(path[:, 0], path[:, 1], "-", color="#1f5fd6", lw=1.8)
            ax.plot(path[:, 0], path[:, 1], "o", color="#1f5fd6", ms=2.5)
    for xy, color, label in markers:
        ax.plot(xy[0], xy[1], "*", color=color, ms=12, mec="black", mew=0.5)
        ax.annotate(label, (xy[0], xy[1]), textcoords="offset points", xytext=(5, 5), fontsize=7)
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_aspect("equal")
    ax.set_title(title or f"{scene.scene_id} — navigable {occupancy.navigable_area_m2:.1f} m²", fontsize=9)
    fig.tight_layout()
    return fig


def room_label(room_id: str, room_type: str) -> str:
    """A room's name on the map: ``living room 0`` for ``living_room_0`` of type ``living_room``,
    else the id with its type when the id does not say it."""
    if room_type in ("", "unknown") or room_id.startswith(room_type):
        return room_id.replace("_", " ")
    return f"{room_id.replace('_', ' ')} ({room_type.replace('_', ' ')})"


def map_image(occupancy: OccupancyMap) -> np.ndarray:
    """(rows, cols, 3) float RGB of the grid (row 0 at the lowest y): walls and furniture
    dark, free floor light, navigable floor tinted by room."""
    image = np.empty(occupancy.shape + (3,))
    image[:] = BLOCKED_RGB
    image[occupancy.free] = FREE_RGB
    rooms = occupancy.room_map
    navigable = occupancy.navigable & (rooms >= 0)
    tint = room_palette()[rooms[navigable] % ROOM_HUES]
    image[navigable] = 0.55 * tint + 0.45
    image[occupancy.navigable & (rooms < 0)] = (1.0, 1.0, 1.0)
    return image


def footprint(obj) -> np.ndarray:
    """XY corners of the object's oriented box (falls back to the AABB)."""
    box = obj.obb
    signs = np.array([[-1, -1, -1], [1, -1, -1], [1, 1, -1], [-1, 1, -1]], dtype=float)
    corners = box.center + (signs * box.half_extents) @ box.rotation.T
    return corners[:, :2]


def save_bev(path: str | Path, scene: Scene, occupancy: OccupancyMap, **kwargs) -> Path:
    """Write the BEV PNG atomically and return its path."""
    fig = bev_figure(scene, occupancy, **kwargs)
    path = Path(path)
    with atomic_open(path, "wb") as handle:
        fig.savefig(handle, format="png")
    return path
