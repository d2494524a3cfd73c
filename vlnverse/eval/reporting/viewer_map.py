"""The episode viewer's map of a scene, written once per scene under ``viewer/maps/``:
``<scene>.png`` (walls and furniture dark, free floor light, navigable floor tinted by room)
and ``<scene>.json`` (the picture's extent in metres, room labels, object footprints), which
the pages draw under the agent's path."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from vlnverse.fileio import write_bytes_atomic, write_text_atomic

logger = logging.getLogger(__name__)

MAPS_DIR = "maps"


def _safe(scene_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in str(scene_id))


def map_paths(viewer_dir: Path, scene_id: str) -> tuple[Path, Path]:
    """The (picture, description) files of ``scene_id``'s map."""
    stem = Path(viewer_dir) / MAPS_DIR / _safe(scene_id)
    return stem.with_suffix(".png"), stem.with_suffix(".json")


def write_scene_map(viewer_dir: Path, scene_id: str, scene: Any, occupancy: Any) -> None:
    """Write the map of ``scene_id`` unless it is there already."""
    from PIL import Image

    from vlnverse.scene.bev import footprint, map_image

    picture, description = map_paths(viewer_dir, scene_id)
    if description.is_file():
        return
    buffer = io.BytesIO()
    pixels = (np.clip(np.flipud(map_image(occupancy)), 0.0, 1.0) * 255).astype(np.uint8)
    Image.fromarray(pixels).save(buffer, format="PNG")
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


class SceneMapWriter:
    """Writes the maps of a worker's scenes on a thread of its own, each scene once, while no
    episode is starting (:meth:`starting`).

    Drawing a map takes CPU time that would hold up the starts of a worker's first episodes
    (their env builds share one core and the GIL).
    """

    def __init__(self, viewer_dir: str | Path) -> None:
        self._viewer_dir = Path(viewer_dir)
        self._changed = threading.Condition()
        self._starting = 0
        self._queued: list[tuple[str, Any, Any]] = []
        self._asked: set[str] = set()
        self._closing = False
        self._thread = threading.Thread(target=self._write_queued, name="vlnverse-scene-maps", daemon=True)
        self._thread.start()

    @contextlib.contextmanager
    def starting(self) -> Iterator[None]:
        """Hold map writing back while the caller starts an episode."""
        with self._changed:
            self._starting += 1
        try:
            yield
        finally:
            with self._changed:
                self._starting -= 1
                self._changed.notify_all()

    def add(self, scene_id: str, scene: Any, occupancy: Any) -> None:
        """Write ``scene_id``'s map (unless asked before, or there already)."""
        with self._changed:
            if scene_id not in self._asked:
                self._asked.add(scene_id)
                self._queued.append((scene_id, scene, occupancy))
                self._changed.notify_all()

    def _write_queued(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._closing or bool(self._queued) and not self._starting)
                if not self._queued:
                    return
                scene_id, scene, occupancy = self._queued.pop(0)
            try:
                write_scene_map(self._viewer_dir, scene_id, scene, occupancy)
            except Exception as exc:  # noqa: BLE001 - a picture is not worth a run
                logger.warning("scene %s: viewer map failed: %s", scene_id, exc)

    def close(self) -> None:
        """Write the maps still queued, whoever is starting, and end the thread."""
        with self._changed:
            self._closing = True
            self._changed.notify_all()
        self._thread.join()


def read_scene_map(viewer_dir: Path, scene_id: str) -> dict[str, Any] | None:
    """The description of ``scene_id``'s map, or None when none was written."""
    _, description = map_paths(viewer_dir, scene_id)
    try:
        return json.loads(description.read_text())
    except (OSError, ValueError):
        return None
