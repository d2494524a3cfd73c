"""Scene listing for the window's scene picker: bundled scenes, a corpus folder, any file."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from vlnverse.data import data_path
from vlnverse.errors import SceneError

USD_SUFFIXES = (".usd", ".usda", ".usdc", ".usdz")


@dataclass(frozen=True)
class SceneEntry:
    """One scene the user can open.

    Attributes:
        name: Display name (the file stem, or ``<folder>/<stem>`` for corpus scenes in subfolders).
        path: Absolute path of the USD file.
        source: Where it was found: ``"bundled"``, ``"corpus"`` or ``"file"``.
        size_bytes: File size, for the listing.
    """

    name: str
    path: Path
    source: str
    size_bytes: int


def bundled_scene_dir() -> Path:
    """The scenes bundled with the package (package data, so also in the built extension)."""
    return data_path("scenes")


def _is_scene_file(path: Path) -> bool:
    return path.is_file() and path.suffix.lower() in USD_SUFFIXES and not path.name.startswith(".")


def scan_folder(folder: str | Path, source: str, recursive: bool = True) -> list[SceneEntry]:
    """All USD files under ``folder`` (sorted by name); a missing folder gives no entries."""
    root = Path(folder).expanduser().resolve()
    if not root.is_dir():
        return []
    files = root.rglob("*") if recursive else root.iterdir()
    entries = [
        SceneEntry(
            name=path.relative_to(root).with_suffix("").as_posix(),
            path=path,
            source=source,
            size_bytes=path.stat().st_size,
        )
        for path in files
        if _is_scene_file(path)
    ]
    return sorted(entries, key=lambda e: e.name)


def scene_entry_for_file(path: str | Path) -> SceneEntry:
    """An entry for a single user-chosen USD file (raises ``SceneError`` if unusable)."""
    file = Path(path).expanduser().resolve()
    if not file.is_file():
        raise SceneError(f"scene file {file} does not exist")
    if file.suffix.lower() not in USD_SUFFIXES:
        raise SceneError(f"{file} is not a USD file (expected one of {', '.join(USD_SUFFIXES)})")
    return SceneEntry(file.stem, file, "file", file.stat().st_size)


def list_scenes(
    bundled: str | Path | None = None,
    corpus_folders: Iterable[str | Path] = (),
) -> list[SceneEntry]:
    """Bundled scenes first, then each corpus folder's scenes (duplicates by path dropped)."""
    entries = scan_folder(bundled if bundled is not None else bundled_scene_dir(), "bundled", False)
    for folder in corpus_folders:
        entries.extend(scan_folder(folder, "corpus"))
    seen: set[Path] = set()
    unique = []
    for entry in entries:
        if entry.path not in seen:
            seen.add(entry.path)
            unique.append(entry)
    return unique
