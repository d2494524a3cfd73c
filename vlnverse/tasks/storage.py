"""Episode storage: JSON Lines shards (optionally gzipped) plus a dataset ``manifest.json``.

Layout of a dataset directory::

    manifest.json                 splits, counts, scenes, per-file SHA-256 checksums
    shards/<scene_id>.jsonl.gz    one episode per line, all tasks and splits of a scene
    images/<scene_id>/*.png       visual-reference images (relative paths in episodes)

Shards are written atomically with deterministic gzip headers (no timestamp, no name),
so equal episodes give byte-identical files.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from vlnverse.errors import CorruptDataError, DatasetError
from vlnverse.fileio import write_bytes_atomic, write_json_atomic
from vlnverse.redact import scrub
from vlnverse.tasks.episode import SPLITS, TASKS, Episode

MANIFEST = "manifest.json"
SHARD_DIR = "shards"
FORMAT_VERSION = 1


def dumps_episode(episode: Episode) -> str:
    """One canonical JSON line (sorted keys, no spaces, no newline; known secret values
    masked, :func:`vlnverse.redact.scrub`)."""
    return scrub(json.dumps(episode.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False))


def encode_jsonl(episodes: Iterable[Episode], *, compress: bool = True) -> bytes:
    """The bytes of a shard holding ``episodes`` (gzip with a fixed header when ``compress``)."""
    text = "".join(dumps_episode(e) + "\n" for e in episodes).encode("utf-8")
    if not compress:
        return text
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=6) as handle:
        handle.write(text)
    return buffer.getvalue()


def write_episodes(path: str | Path, episodes: Iterable[Episode]) -> str:
    """Write a JSONL shard atomically (gzipped when the name ends in ``.gz``); return its SHA-256."""
    path = Path(path)
    data = encode_jsonl(episodes, compress=path.suffix == ".gz")
    write_bytes_atomic(path, data)
    return hashlib.sha256(data).hexdigest()


def read_episodes(path: str | Path) -> list[Episode]:
    """All episodes of a JSONL(.gz) shard.

    Raises:
        CorruptDataError: the file's bytes are damaged (bad gzip stream, not UTF-8).
        DatasetError: the file is missing or unreadable, or a line is not a valid episode
            (the message names the file and line).
    """
    return list(iter_episodes(path))


def iter_episodes(path: str | Path) -> Iterator[Episode]:
    """Stream the episodes of a JSONL(.gz) shard (see :func:`read_episodes`)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
        text = (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode("utf-8")
    except FileNotFoundError:
        raise DatasetError(f"episode file not found: {path}") from None
    except (EOFError, UnicodeDecodeError, gzip.BadGzipFile, zlib.error) as exc:
        raise CorruptDataError(f"cannot read episode file {path}: corrupt data") from exc
    except OSError as exc:
        raise DatasetError(f"cannot read episode file {path}: {exc.strerror or exc}") from exc
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield Episode.from_dict(json.loads(line))
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
        except DatasetError as exc:
            raise DatasetError(f"{path}:{number}: {exc}") from None


def sha256_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def count_episodes(episodes: Iterable[Episode]) -> dict[str, dict[str, int]]:
    """``{split: {task: count}}`` in canonical order, zero entries omitted."""
    counter = Counter((e.split, e.task) for e in episodes)
    return {s: {t: counter[(s, t)] for t in TASKS if counter[(s, t)]} for s in SPLITS
            if any(counter[(s, t)] for t in TASKS)}


def build_manifest(root: str | Path, shards: dict[str, dict[str, Any]], *, extra: dict[str, Any] | None = None
                   ) -> dict[str, Any]:
    """The manifest of a dataset from its shard records.

    Args:
        root: Dataset directory.
        shards: ``{scene_id: {"file": relative path, "sha256", "counts": {split: {task: n}},
            "images": [relative paths]}}``.
        extra: More top-level entries (e.g. the generation config, skipped scenes).
    """
    totals: Counter = Counter()
    scenes: dict[str, dict[str, set]] = {}
    files: dict[str, str] = {}
    for scene_id, record in sorted(shards.items()):
        files[record["file"]] = record["sha256"]
        for split, tasks in record["counts"].items():
            for task, n in tasks.items():
                totals[(split, task)] += n
                scenes.setdefault(split, {}).setdefault(task, set()).add(scene_id)
        for image in record.get("images", []):
            files[image] = sha256_file(Path(root) / image)
    splits = {s: {t: {"episodes": totals[(s, t)], "scenes": len(scenes[s][t])}
                  for t in TASKS if totals[(s, t)]} for s in SPLITS if s in scenes}
    manifest = {
        "format": "vlnverse-episodes",
        "format_version": FORMAT_VERSION,
        "splits": splits,
        "total_episodes": sum(totals.values()),
        "shards": {sid: {"file": r["file"], "counts": r["counts"]} for sid, r in sorted(shards.items())},
        "files": dict(sorted(files.items())),
    }
    manifest.update(extra or {})
    return manifest


def write_manifest(root: str | Path, manifest: dict[str, Any]) -> None:
    write_json_atomic(Path(root) / MANIFEST, manifest)


def read_manifest(root: str | Path) -> dict[str, Any]:
    """The manifest of the dataset at ``root``.

    Raises:
        DatasetError: no manifest, or it is not a VLNVerse episode manifest.
    """
    path = Path(root) / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DatasetError(f"{root} is not a VLNVerse dataset (no {MANIFEST})") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise DatasetError(f"cannot read {path}: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != "vlnverse-episodes":
        raise DatasetError(f"{path} is not a VLNVerse episode manifest")
    shards, files = manifest.get("shards"), manifest.get("files", {})
    if not isinstance(shards, dict) or not all(isinstance(r, dict) and _inside(r.get("file")) for r in shards.values()):
        raise DatasetError(f"{path}: 'shards' must map each scene to {{'file': a path inside the dataset, ...}}")
    if not isinstance(files, dict) or not all(_inside(k) and isinstance(v, str) for k, v in files.items()):
        raise DatasetError(f"{path}: 'files' must map paths inside the dataset to SHA-256 checksums")
    return manifest


def _inside(rel: Any) -> bool:
    """Whether ``rel`` is a relative path that stays inside the dataset folder."""
    return isinstance(rel, str) and bool(rel) and not Path(rel).is_absolute() and ".." not in Path(rel).parts


def verify_dataset(root: str | Path) -> list[str]:
    """Files whose checksum disagrees with the manifest (missing files included)."""
    root = Path(root)
    bad = []
    for rel, digest in read_manifest(root).get("files", {}).items():
        path = root / rel
        if not path.is_file() or sha256_file(path) != digest:
            bad.append(rel)
    return bad


def check_dataset(root: str | Path) -> None:
    """Refuse a dataset whose files disagree with the checksums of its manifest.

    Raises:
        CorruptDataError: a file is missing or was changed (the first few are named).
    """
    bad = verify_dataset(root)
    if bad:
        more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
        raise CorruptDataError(f"dataset {root} does not match its manifest (missing or modified: "
                               f"{', '.join(str(Path(root) / rel) for rel in bad[:3])}{more})")


def write_dataset(root: str | Path, episodes: Iterable[Episode], *, extra: dict[str, Any] | None = None
                  ) -> dict[str, Any]:
    """Write ``episodes`` as per-scene shards plus a manifest; return the manifest.

    Episodes keep their order within each scene. Used by importers and tools that hold a
    whole dataset in memory (datagen writes shards incrementally instead).
    """
    root = Path(root)
    by_scene: dict[str, list[Episode]] = {}
    for episode in episodes:
        by_scene.setdefault(episode.scene_id, []).append(episode)
    ids = Counter(e.episode_id for group in by_scene.values() for e in group)
    dupes = sorted(k for k, n in ids.items() if n > 1)
    if dupes:
        raise DatasetError(f"duplicate episode ids: {', '.join(dupes[:5])}")
    shards = {}
    for scene_id, group in by_scene.items():
        rel = f"{SHARD_DIR}/{scene_id}.jsonl.gz"
        digest = write_episodes(root / rel, group)
        images = sorted({e.reference_image for e in group if e.reference_image and (root / e.reference_image).is_file()})
        shards[scene_id] = {"file": rel, "sha256": digest, "counts": count_episodes(group), "images": images}
    manifest = build_manifest(root, shards, extra=extra)
    write_manifest(root, manifest)
    return manifest
