"""Reading pre-rendered frames (:mod:`vlnverse.learning.prerender`) one episode at a time.

``.npy`` chunks (the pre-render's default) are memory-mapped, so an episode is a slice of
the page cache; ``.npz`` chunks (``--compress``, and folders pre-rendered before raw chunks
became the default) are decompressed when first touched and kept in a per-process cache of
``CHUNK_CACHE_BYTES``, so a split whose decompressed chunks fit is decompressed once per process
even when batches are drawn in random order.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vlnverse.errors import ConfigError, DatasetError
from vlnverse.learning.prerender import INDEX, RECORD, chunk_name

CHUNK_CACHE_BYTES = 256 << 20


@dataclass(frozen=True)
class EpisodeFrames:
    """Where one episode's frames are: its scene folder and frame range."""

    episode_id: str
    task: str
    instruction: str
    scene_id: str
    start: int
    length: int


class FrameStore:
    """The frames of one pre-rendered split.

    Args:
        root: The pre-render output folder.
        split: The split.

    Raises:
        DatasetError: the split was not pre-rendered (or not completely).
    """

    def __init__(self, root: str | Path, split: str) -> None:
        self.root = Path(root)
        self.split = split
        index_file = self.root / split / INDEX
        if not index_file.is_file():
            raise DatasetError(f"{self.root} holds no pre-rendered split {split!r} (no {split}/{INDEX}); "
                               "run `vlnverse dataset prerender`")
        self.index = json.loads(index_file.read_text(encoding="utf-8"))
        self.sensors = dict(self.index["sensors"])
        self.records: dict[str, dict[str, Any]] = {}
        self.episodes: list[EpisodeFrames] = []
        self._steps: dict[str, dict[str, np.ndarray]] = {}
        for scene_id in self.index["scenes"]:
            path = self.root / split / scene_id / RECORD
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as exc:
                raise DatasetError(f"pre-rendered scene record {path} is unreadable: {exc}") from exc
            self.records[scene_id] = record
            self.episodes.extend(EpisodeFrames(e["episode_id"], e["task"], e["instruction"], scene_id,
                                               e["start"], e["length"]) for e in record["episodes"] if e["length"])
        self._chunks: OrderedDict[tuple[str, str, int], np.ndarray] = OrderedDict()
        self._cached = 0

    def __len__(self) -> int:
        return len(self.episodes)

    @property
    def config(self) -> dict[str, Any]:
        return dict(self.index["config"])

    def steps(self, scene_id: str) -> dict[str, np.ndarray]:
        """``actions`` (N,) and ``poses`` (N, 4) of every frame of a scene."""
        if scene_id not in self._steps:
            with np.load(self.root / self.split / scene_id / "steps.npz") as data:
                self._steps[scene_id] = {k: data[k] for k in data.files}
        return self._steps[scene_id]

    def _chunk(self, scene_id: str, sensor: str, index: int) -> np.ndarray:
        key = (scene_id, sensor, index)
        if key in self._chunks:
            self._chunks.move_to_end(key)
            return self._chunks[key]
        record = self.records[scene_id]
        path = self.root / self.split / scene_id / chunk_name(sensor, index, record["compress"])
        if not record["compress"]:
            return np.load(path, mmap_mode="r")  # opening a mapping costs about what a cache would
        with np.load(path) as data:
            array = data["frames"]
        self._chunks[key] = array
        self._cached += array.nbytes
        while self._cached > CHUNK_CACHE_BYTES and len(self._chunks) > 1:
            self._cached -= self._chunks.popitem(last=False)[1].nbytes
        return array

    def frames(self, scene_id: str, sensor: str, start: int, stop: int) -> np.ndarray:
        """Frames ``[start, stop)`` of a scene's ``sensor`` as one array."""
        size = int(self.records[scene_id]["chunk_frames"])
        parts = []
        position = start
        while position < stop:
            index, offset = divmod(position, size)
            take = min(stop - position, size - offset)
            parts.append(self._chunk(scene_id, sensor, index)[offset:offset + take])
            position += take
        return np.concatenate(parts) if len(parts) > 1 else np.array(parts[0])

    def episode(self, index: int) -> dict[str, Any]:
        """Episode ``index``: its sensors' frames, ``actions``, ``poses`` and ``instruction``."""
        ep = self.episodes[index]
        stop = ep.start + ep.length
        steps = self.steps(ep.scene_id)
        out: dict[str, Any] = {name: self.frames(ep.scene_id, name, ep.start, stop) for name in self.sensors}
        out.update(actions=steps["actions"][ep.start:stop], poses=steps["poses"][ep.start:stop],
                   instruction=ep.instruction, episode_id=ep.episode_id)
        return out


def augment_digest(folder: str | Path) -> str:
    """SHA-256 of an augmentation set's ``SHA256SUMS`` (what the set holds, wherever it lies).

    Raises:
        ConfigError: the folder is not a finished augmentation set.
    """
    sums = Path(folder) / "SHA256SUMS"
    if not sums.is_file():
        raise ConfigError(f"{folder} is not an augmentation set (no SHA256SUMS); build it with "
                          "`vlnverse release augment --track TRACK --homes N --out AUG`")
    return hashlib.sha256(sums.read_bytes()).hexdigest()
