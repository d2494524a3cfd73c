"""Finding the scenes of a corpus directory and their splits.

A folder holding ``scene.usd[a|c|z]`` is one scene (id = folder name); any other USD file
is a scene named by its stem, unless it lies inside such a folder. The split of a scene
comes, in order, from a ``splits.json`` (``{"train": [ids], "val_unseen": [...], "test": [...]}``,
as procedural corpora write it; a ``val_seen`` entry is ignored since those are train scenes)
at the corpus root, from a path component named ``train``/``val_unseen``/``test``, or else
from a deterministic hash-ordered assignment in the proportions of the paper's corpus
(177 / 33 / 53 scenes, §3.5).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from vlnverse.errors import DatasetError

USD_SUFFIXES = (".usd", ".usda", ".usdc", ".usdz")
SCENE_SPLITS = ("train", "val_unseen", "test")
PAPER_SCENE_COUNTS = {"train": 177, "val_unseen": 33, "test": 53}
SPLIT_ALIASES = {"val": "val_unseen"}


@dataclass(frozen=True)
class SceneEntry:
    """One scene of a corpus.

    Attributes:
        scene_id: Scene identifier.
        path: Absolute file path.
        rel_path: Path relative to the corpus root (POSIX).
        split: ``train``, ``val_unseen`` or ``test`` (train scenes also give ``val_seen``).
    """

    scene_id: str
    path: Path
    rel_path: str
    split: str


def stable_hash(text: str) -> int:
    """A 32-bit hash of ``text`` that is the same in every process and Python version."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:4], "big")


def _scene_files(root: Path) -> list[tuple[str, Path]]:
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in USD_SUFFIXES)
    scene_dirs = {p.parent for p in files if p.stem == "scene"}
    out = []
    for path in files:
        if path.stem == "scene":
            out.append((path.parent.name, path))
        elif not any(d == path.parent or d in path.parents for d in scene_dirs):
            out.append((path.stem, path))
    return out


def discover_scenes(root: str | Path) -> list[SceneEntry]:
    """The scenes under ``root`` with their splits, sorted by id.

    Raises:
        DatasetError: ``root`` is not a directory, holds no scene, two scenes share an id,
            or ``splits.json`` is malformed or names a split we do not know.
    """
    root = Path(root)
    if not root.is_dir():
        raise DatasetError(f"scene directory {root} does not exist")
    found = _scene_files(root)
    if not found:
        raise DatasetError(f"no USD scenes (*{', *'.join(USD_SUFFIXES)}) under {root}")
    ids: dict[str, Path] = {}
    for scene_id, path in found:
        if scene_id in ids:
            raise DatasetError(f"two scenes share the id {scene_id!r}: {ids[scene_id]} and {path}")
        ids[scene_id] = path
    explicit = _splits_file(root)
    splits: dict[str, str] = {}
    for scene_id, path in ids.items():
        if scene_id in explicit:
            splits[scene_id] = explicit[scene_id]
            continue
        for part in path.relative_to(root).parts[:-1]:
            name = SPLIT_ALIASES.get(part, part)
            if name in SCENE_SPLITS:
                splits[scene_id] = name
    rest = sorted((i for i in ids if i not in splits), key=lambda i: (stable_hash(i), i))
    splits.update(assign_splits(rest))
    return [SceneEntry(i, ids[i].resolve(), ids[i].relative_to(root).as_posix(), splits[i]) for i in sorted(ids)]


def _splits_file(root: Path) -> dict[str, str]:
    path = root / "splits.json"
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DatasetError(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise DatasetError(f"{path}: expected an object {{split: [scene ids]}}")
    out = {}
    for split, scene_ids in data.items():
        if split == "val_seen":  # train scenes serve val_seen too (procgen corpora list them)
            continue
        name = SPLIT_ALIASES.get(split, split)
        if name not in SCENE_SPLITS or not isinstance(scene_ids, list):
            raise DatasetError(f"{path}: unknown split {split!r} or not a list; valid: {', '.join(SCENE_SPLITS)}")
        for scene_id in scene_ids:
            out[str(scene_id)] = name
    return out


def assign_splits(scene_ids: list[str]) -> dict[str, str]:
    """Split ``scene_ids`` (already in a fixed order) in the paper's proportions.

    With three or more scenes every split gets at least one.
    """
    n = len(scene_ids)
    total = sum(PAPER_SCENE_COUNTS.values())
    n_test = round(n * PAPER_SCENE_COUNTS["test"] / total)
    n_val = round(n * PAPER_SCENE_COUNTS["val_unseen"] / total)
    if n >= 3:
        n_test, n_val = max(n_test, 1), max(n_val, 1)
    n_train = n - n_test - n_val
    labels = ["train"] * n_train + ["val_unseen"] * n_val + ["test"] * n_test
    return dict(zip(scene_ids, labels, strict=False))
