"""The episode viewer's map of a scene, written once per scene under ``viewer/maps/``:
``<scene>.png`` (walls and furniture dark, free floor light, navigable floor tinted by room)
and ``<scene>.json`` (the picture's extent in metres, room labels, object footprints), which
the pages draw under the agent's path."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np

from vlnverse.fileio import write_bytes_atomic, write_text_atomic

MAPS_DIR = "maps"


def _safe(scene_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in str(scene_id))


def map_paths(viewer_dir: Path, scene_id: str) -> tuple[Path, Path]:
    """The (picture, description) files of ``scene_id``'s map."""
    stem = Path(viewer_dir) / MAPS_DIR / _safe(scene_id)
    return stem.with_suffix(".png"), stem.with_suffix(".json")


def write_scene_map(viewer_dir: Path, scene_id: str, scene: Any, occupancy: Any) -> None:
    """Write the map of ``scene_id`` unless it is there already."""
    import matplotlib.image

    from vlnverse.scene.bev import footprint, map_image

    picture, description = map_paths(viewer_dir, scene_id)
    if description.is_file():
        return
    buffer = io.BytesIO()
    matplotlib.image.imsave(buffer, np.clip(np.flipud(map_image(occupancy)), 0.0, 1.0), format="png")
    write_bytes_atomic(picture, buffer.getvalue())
    x0, y0 = (float(v) for v in occupancy.origin[:2])
    rows, cols = occupancy.shape
    rooms = []
    for index, room in enumerate(occupancy.rooms):
        cells = np.argwhere(occupancy.room_map == index)
        if len(cells):
            x, y = occupancy.cell_to_world(cells.mean(axis=0))[:2]
            rooms.append({"id": room.room_id, "type": room.room_type, "x": round(float(x), 2), "y": round(float(y), 2)})
    objects = [{"id": obj.object_id, "category": obj.category,
                "corners": np.round(footprint(obj), 3).tolist()} for obj in scene.objects]
    write_text_atomic(description, json.dumps({
        "picture": picture.name,
        "extent": [x0, x0 + cols * occupancy.resolution, y0, y0 + rows * occupancy.resolution],
        "rooms": rooms, "objects": objects}))


def read_scene_map(viewer_dir: Path, scene_id: str) -> dict[str, Any] | None:
    """The description of ``scene_id``'s map, or None when none was written."""
    _, description = map_paths(viewer_dir, scene_id)
    try:
        return json.loads(description.read_text())
    except (OSError, ValueError):
        return None
