"""Reading datasets: the loader API the gymnasium env and the evaluators use.

>>> ds = EpisodeDataset.open("data/vlnverse")            # a dataset dir or one .jsonl(.gz)
>>> episodes = ds.episodes(split="val_unseen", task="coarse")
>>> it = ds.iterator(split="val_unseen", task="coarse", shuffle=True, seed=0)
>>> episode = next(it)                                   # cycles forever, reshuffling per pass
>>> scene_file = ds.scene_file(episode)                   # absolute scene path
>>> image = ds.reference_image(episode)                   # (H, W, 3) uint8 or None
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vlnverse.errors import DatasetError
from vlnverse.tasks.episode import SPLITS, TASKS, Episode
from vlnverse.tasks.storage import MANIFEST, iter_episodes, read_manifest


class EpisodeDataset:
    """Episodes of a dataset directory (manifest + shards) or of a single JSONL(.gz) file.

    Args:
        root: Dataset directory (or the folder of the single file).
        files: Shard files to read, in order.
        manifest: The manifest (empty for a single file).
        scenes_dir: Where ``Episode.scene_path`` is relative to (default: the manifest's
            ``scenes_dir``, itself relative to ``root`` unless absolute; else ``root``).
    """

    def __init__(self, root: Path, files: Sequence[Path], manifest: dict[str, Any] | None = None,
                 scenes_dir: str | Path | None = None) -> None:
        self.root = root
        self.files = list(files)
        self.manifest = manifest or {}
        chosen = scenes_dir or self.manifest.get("scenes_dir")
        self.scenes_dir = (root / chosen if scenes_dir is None else Path(chosen)) if chosen else root
        self._episodes: list[Episode] | None = None

    @classmethod
    def open(cls, path: str | Path, *, scenes_dir: str | Path | None = None) -> EpisodeDataset:
        """Open a dataset directory (with ``manifest.json``) or a ``.jsonl``/``.jsonl.gz`` file.

        Raises:
            DatasetError: the path does not exist or is not a dataset.
        """
        path = Path(path)
        if path.is_dir():
            if not (path / MANIFEST).is_file():
                raise DatasetError(f"{path} is not a VLNVerse dataset (no {MANIFEST}); "
                                   "import external formats with `vlnverse dataset import`")
            manifest = read_manifest(path)
            files = [path / record["file"] for _, record in sorted(manifest["shards"].items())]
            return cls(path, files, manifest, scenes_dir)
        if path.is_file() and (path.name.endswith(".jsonl") or path.name.endswith(".jsonl.gz")):
            return cls(path.parent, [path], None, scenes_dir)
        raise DatasetError(f"dataset {path} not found (expected a dataset folder or a .jsonl(.gz) file)")

    # -- selection -------------------------------------------------------------------------
    def all_episodes(self) -> list[Episode]:
        """Every episode (loaded once, in shard order)."""
        if self._episodes is None:
            self._episodes = [e for f in self.files for e in iter_episodes(f)]
        return self._episodes

    def stream(self) -> Iterator[Episode]:
        """Every episode, read shard by shard (none kept: for one pass over a large dataset)."""
        if self._episodes is not None:
            yield from self._episodes
            return
        for file in self.files:
            yield from iter_episodes(file)

    def episodes(self, split: str | None = None, task: str | None = None) -> list[Episode]:
        """Episodes of ``split`` and ``task`` (None: any; a comma-separated list such as
        ``"fine,coarse"``: any of those).

        Raises:
            DatasetError: unknown split/task, or no episode matches.
        """
        splits, tasks = _names(split, SPLITS, "split"), _names(task, TASKS, "task")
        chosen = [e for e in self.all_episodes()
                  if (splits is None or e.split in splits) and (tasks is None or e.task in tasks)]
        if not chosen:
            have = sorted({(e.split, e.task) for e in self.all_episodes()})
            listing = ", ".join(f"{s}/{t}" for s, t in have) or "none"
            which = f"{task} episodes" if task else "episodes"
            where = f" in split {split}" if split else ""
            raise DatasetError(f"no {which}{where} in {self.root}; available: {listing}")
        return chosen

    def episode(self, episode_id: str) -> Episode:
        for e in self.all_episodes():
            if e.episode_id == episode_id:
                return e
        raise DatasetError(f"no episode {episode_id!r} in {self.root}")

    def iterator(self, split: str | None = None, task: str | None = None, *, shuffle: bool = False,
                 seed: int | None = None, cycle: bool = True) -> EpisodeIterator:
        """An :class:`EpisodeIterator` over the selected episodes."""
        return EpisodeIterator(self.episodes(split, task), shuffle=shuffle, seed=seed, cycle=cycle)

    # -- files -----------------------------------------------------------------------------
    def scene_file(self, episode: Episode) -> Path:
        """Absolute scene file of ``episode``.

        Raises:
            DatasetError: the file does not exist (names the directory searched).
        """
        path = Path(episode.scene_path)
        path = path if path.is_absolute() else self.scenes_dir / path
        if not path.is_file():
            raise DatasetError(f"scene {episode.scene_id} of episode {episode.episode_id} not found at {path}; "
                               "pass scenes_dir=... (the corpus the dataset was made from)")
        return path

    def reference_image(self, episode: Episode) -> np.ndarray | None:
        """The visual-reference image of ``episode`` (None when it has none)."""
        if not episode.reference_image:
            return None
        from PIL import Image

        path = self.root / episode.reference_image
        try:
            with Image.open(path) as image:
                return np.asarray(image.convert("RGB"))
        except OSError as exc:
            raise DatasetError(f"cannot read reference image {path}: {exc}") from exc


class EpisodeIterator:
    """Deterministic iteration over episodes: in order, or shuffled per pass from ``seed``.

    Attributes:
        episodes: The episodes.
        passes: Completed passes over the episodes.
    """

    def __init__(self, episodes: Sequence[Episode], *, shuffle: bool = False, seed: int | None = None,
                 cycle: bool = True) -> None:
        if not episodes:
            raise DatasetError("an episode iterator needs at least one episode")
        self.episodes = list(episodes)
        self.shuffle = shuffle
        self.cycle = cycle
        self.passes = 0
        self._rng = np.random.default_rng(seed)
        self._order = self._new_order()
        self._pos = 0

    def _new_order(self) -> np.ndarray:
        n = len(self.episodes)
        return self._rng.permutation(n) if self.shuffle else np.arange(n)

    def seed(self, seed: int | None) -> None:
        """Restart from the beginning with a new shuffle seed (env ``reset(seed=...)``)."""
        self._rng = np.random.default_rng(seed)
        self._order = self._new_order()
        self._pos = 0
        self.passes = 0

    def __len__(self) -> int:
        return len(self.episodes)

    def __iter__(self) -> Iterator[Episode]:
        return self

    def __next__(self) -> Episode:
        if self._pos >= len(self._order):
            if not self.cycle:
                raise StopIteration
            self.passes += 1
            self._order = self._new_order()
            self._pos = 0
        episode = self.episodes[int(self._order[self._pos])]
        self._pos += 1
        return episode


def _names(text: str | None, valid: tuple[str, ...], what: str) -> set[str] | None:
    """The names of a comma-separated list, each checked against ``valid`` (``None``: any)."""
    if text is None:
        return None
    names = {name.strip() for name in text.split(",")}
    for name in names:
        if name not in valid:
            raise DatasetError(f"unknown {what} {name!r}; valid: {', '.join(valid)}")
    return names
