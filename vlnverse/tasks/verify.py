"""``vlnverse dataset stats --verify``: check everything a dataset's readers read.

Checksums cover the episode shards and images, but not the files that describe them, so a
dataset can pass its checksums and still be read wrong. :func:`verify_dataset_folder`
checks, besides every checksum in ``manifest.json`` (:func:`~vlnverse.tasks.storage.verify_dataset`):

- ``manifest.json`` itself: every shard it names is checksummed; each shard's counts are
  those of the episodes in the file (whose scene is the shard's, with no episode id seen
  twice in the dataset); its ``splits`` and ``total_episodes`` add up from the shards;
- the per-scene records ``shards/<scene_id>.json`` (datagen's; its resume trusts them): each
  parses and agrees with the manifest (file, checksum, counts), and every shard has one.

Each disagreement is one sentence in ``problems``; damaged episode files are listed in
``corrupt_files`` and left out of the counts.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlnverse.errors import DatasetError
from vlnverse.tasks.episode import Episode
from vlnverse.tasks.storage import (
    MANIFEST,
    SHARD_DIR,
    count_episodes,
    iter_episodes,
    verify_dataset,
)


@dataclass
class Verification:
    """What :func:`verify_dataset_folder` found.

    Attributes:
        episodes: The episodes of the intact shards.
        corrupt_files: Files whose checksum disagrees with the manifest (or missing).
        problems: Every other disagreement, one sentence each.
    """

    episodes: list[Episode] = field(default_factory=list)
    corrupt_files: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def verify_dataset_folder(root: str | Path, manifest: Mapping[str, Any]) -> Verification:
    """Check the dataset at ``root`` whose (already read) manifest is ``manifest``."""
    root = Path(root)
    found = Verification(corrupt_files=verify_dataset(root))
    damaged = set(found.corrupt_files)
    checksummed = manifest.get("files", {})
    ids: Counter = Counter()
    for scene_id, shard in sorted(manifest["shards"].items()):
        rel = shard["file"]
        if rel not in checksummed:
            found.problems.append(f"{MANIFEST}: shard {rel} has no checksum in 'files'")
        if rel in damaged:
            continue
        try:
            episodes = list(iter_episodes(root / rel))
        except DatasetError as exc:
            found.problems.append(str(exc))
            continue
        held = count_episodes(episodes)
        if held != shard.get("counts"):
            found.problems.append(f"{MANIFEST}: shard {scene_id} counts {shard.get('counts')} but {rel} holds {held}")
        strangers = sorted({e.scene_id for e in episodes} - {scene_id})
        if strangers:
            found.problems.append(f"{rel}: episodes of other scenes ({', '.join(strangers[:3])}) in shard {scene_id}")
        ids.update(e.episode_id for e in episodes)
        found.episodes += episodes
    twice = sorted(i for i, n in ids.items() if n > 1)
    if twice:
        found.problems.append(f"episode ids seen more than once: {', '.join(twice[:5])}"
                              + (f" and {len(twice) - 5} more" if len(twice) > 5 else ""))
    found.problems += _totals(manifest)
    found.problems += _scene_records(root, manifest)
    return found


def _totals(manifest: Mapping[str, Any]) -> list[str]:
    """Disagreements of ``splits`` / ``total_episodes`` with the shards' counts."""
    episodes: Counter = Counter()
    scenes: dict[tuple[str, str], set[str]] = {}
    for scene_id, shard in manifest["shards"].items():
        for split, tasks in (shard.get("counts") or {}).items():
            for task, n in tasks.items():
                episodes[(split, task)] += n
                scenes.setdefault((split, task), set()).add(scene_id)
    expected = {s: {t: {"episodes": episodes[(s, t)], "scenes": len(scenes[(s, t)])}
                    for (s2, t) in sorted(episodes) if s2 == s} for s in sorted({s for s, _ in episodes})}
    problems = []
    splits = manifest.get("splits")
    if not isinstance(splits, Mapping) or {s: dict(v) for s, v in splits.items()} != expected:
        problems.append(f"{MANIFEST}: 'splits' does not add up from the shards' counts (expected {expected})")
    if manifest.get("total_episodes") != sum(episodes.values()):
        problems.append(f"{MANIFEST}: total_episodes is {manifest.get('total_episodes')}, the shards' counts add up "
                        f"to {sum(episodes.values())}")
    return problems


def _scene_records(root: Path, manifest: Mapping[str, Any]) -> list[str]:
    """Disagreements of the per-scene records ``shards/<scene_id>.json`` with the manifest
    (none when the dataset has no records, as imported datasets)."""
    paths = sorted((root / SHARD_DIR).glob("*.json"))
    if not paths:
        return []
    shards, checksummed = manifest["shards"], manifest.get("files", {})
    problems = []
    for path in paths:
        rel = f"{SHARD_DIR}/{path.name}"
        scene_id = path.name[: -len(".json")]
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            problems.append(f"{rel}: not readable JSON ({exc})")
            continue
        shard = shards.get(scene_id)
        if shard is None:
            problems.append(f"{rel}: a record of scene {scene_id}, which {MANIFEST} does not list")
        elif not isinstance(record, dict):
            problems.append(f"{rel}: not a JSON object")
        else:
            wrong = [key for key, want in (("file", shard["file"]), ("sha256", checksummed.get(shard["file"])),
                                           ("counts", shard.get("counts"))) if record.get(key) != want]
            if wrong:
                problems.append(f"{rel}: {', '.join(wrong)} disagree(s) with {MANIFEST}")
    missing = sorted(set(shards) - {p.name[: -len(".json")] for p in paths})
    if missing:
        problems.append(f"{SHARD_DIR}/: no record of scene(s) {', '.join(missing[:5])}")
    return problems
