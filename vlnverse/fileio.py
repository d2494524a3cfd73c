"""Atomic file writing and small JSON helpers shared by every writer in the project."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", **kwargs: Any) -> Iterator[IO]:
    """Open a temp file beside ``path``; on success rename it over ``path``.

    Readers never see a half-written file, and a crash leaves the old file intact.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.chmod(tmp, 0o666 & ~_current_umask())  # mkstemp makes 0600; give the usual file mode
    try:
        with os.fdopen(fd, mode, **kwargs) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically (UTF-8)."""
    with atomic_open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_open(path, "wb") as handle:
        handle.write(data)


def write_json_atomic(path: str | os.PathLike, obj: Any, *, indent: int | None = 2) -> None:
    """Write ``obj`` as JSON (sorted keys, so equal objects give equal bytes)."""
    write_text_atomic(path, json.dumps(obj, indent=indent, sort_keys=True) + "\n")
