"""Atomic file writing, output folders and small JSON helpers shared by every writer.

Operating-system failures of writers (read-only file system, disk full, permissions) are
raised as :class:`~vlnverse.errors.OutputError` with one line naming the path, so the CLI
prints ``error: cannot write PATH: read-only file system`` instead of a traceback.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from vlnverse.errors import OutputError

_WRITE_ERRNOS = frozenset({errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EACCES, errno.EPERM,
                           errno.EEXIST, errno.EISDIR, errno.ENOTDIR})


def os_reason(exc: OSError) -> str:
    """The lower-case reason of an OS error (``read-only file system``, ``no space left on device``)."""
    text = os.strerror(exc.errno) if exc.errno else (str(exc) or type(exc).__name__)
    return text[:1].lower() + text[1:]


def describe_os_error(exc: OSError, path: str | os.PathLike | None = None) -> str:
    """One line for an OS error: ``cannot write PATH: reason`` (``cannot access`` when it is
    not a writing failure)."""
    where = path if path is not None else (exc.filename if exc.filename is not None else "a file")
    verb = "write" if exc.errno in _WRITE_ERRNOS else "access"
    return f"cannot {verb} {where}: {os_reason(exc)}"


def write_failure(exc: OSError, path: str | os.PathLike) -> OutputError:
    """The :class:`OutputError` of ``exc`` raised while writing ``path``."""
    return OutputError(f"cannot write {path}: {os_reason(exc)}")


def prepare_output_dir(path: str | os.PathLike) -> Path:
    """Create the output folder ``path`` (with parents) and check that it can be written.

    Raises:
        OutputError: ``path`` is a file, or the folder cannot be created or written.
    """
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise OutputError(f"cannot write {folder}: it is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise write_failure(exc, folder) from None
    return folder


def remove_stale_temp_files(folder: str | os.PathLike) -> None:
    """Delete the temp files of atomic writes a killed run left under ``folder`` (call it
    holding the folder's :class:`OutputLock`, so no live writer's file is taken)."""
    for stale in Path(folder).rglob(".*.tmp"):
        with contextlib.suppress(OSError):
            stale.unlink()


class OutputLock:
    """An exclusive lock on an output folder, held while one run writes into it.

    A second run into the same folder (another process) is refused at once instead of
    interleaving its records with the first. The lock is an ``flock`` on the empty file
    ``.vlnverse.lock`` (kept, so that equal runs leave equal folders); the kernel releases
    it when its holder exits, however it exits.

    Raises (on enter):
        OutputError: another process holds the folder, or the lock file cannot be written.
    """

    FILENAME = ".vlnverse.lock"

    def __init__(self, folder: str | os.PathLike) -> None:
        self.path = Path(folder) / self.FILENAME
        self._fd: int | None = None

    def __enter__(self) -> OutputLock:
        import fcntl

        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise write_failure(exc, self.path) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise OutputError(f"{self.path.parent} is being written by another run; wait for it to finish "
                              "or choose another output folder") from None
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the lock
            self._fd = None


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", **kwargs: Any) -> Iterator[IO]:
    """Open a temp file beside ``path``; on success rename it over ``path``.

    Readers never see a half-written file, and a crash leaves the old file intact.

    Raises:
        OutputError: the file cannot be written (read-only file system, disk full, ...).
    """
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise write_failure(exc, target) from None
    os.chmod(tmp, 0o666 & ~_current_umask())  # mkstemp makes 0600; give the usual file mode
    try:
        with os.fdopen(fd, mode, **kwargs) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise write_failure(exc, target) from None
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
