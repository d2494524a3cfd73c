"""Import and export of external dataset formats: VLN-CE and the public VLNVerse release."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from vlnverse.errors import ConfigError
from vlnverse.tasks.episode import Episode
from vlnverse.tasks.formats.release import export_release, import_release
from vlnverse.tasks.formats.vlnce import export_vlnce, import_vlnce

FORMATS = ("vlnce", "vlnverse")


def _check(fmt: str) -> None:
    if fmt not in FORMATS:
        raise ConfigError(f"unknown dataset format {fmt!r}; valid: {', '.join(FORMATS)}")


def export_episodes(episodes: Sequence[Episode], fmt: str, out: str | Path, **options) -> list[Path]:
    """Write ``episodes`` in format ``fmt`` (``vlnce``: one task; ``vlnverse``: any)."""
    _check(fmt)
    if fmt == "vlnce":
        tasks = sorted({e.task for e in episodes})
        if len(tasks) > 1:
            raise ConfigError(f"the VLN-CE format holds one task per folder; got {', '.join(tasks)} (choose with --task)")
        return export_vlnce(episodes, out)
    return export_release(episodes, out, **options)


def import_episodes(path: str | Path, fmt: str, *, task: str = "fine") -> list[Episode]:
    """Read episodes of format ``fmt`` (``task`` labels VLN-CE episodes, which do not say)."""
    _check(fmt)
    if fmt == "vlnce":
        return import_vlnce(path, task=task)
    return import_release(path)


__all__ = ["FORMATS", "export_episodes", "import_episodes", "export_release", "export_vlnce",
           "import_release", "import_vlnce"]
