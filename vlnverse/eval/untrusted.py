"""Reading the files of an evaluation folder someone else made: nothing in them is trusted.

``eval verify`` reads a submitted folder only through these functions. A file must be a
regular file inside the folder (a symlink, FIFO, socket or device is refused without
following or blocking on it), no larger than its cap; text must be UTF-8; JSON must be
strict (no ``NaN``/``Infinity``) and nested at most :data:`MAX_DEPTH` levels. Each problem
raises one :class:`MalformedInput` naming the file, which the CLI prints as one
``error:`` line (exit status 2).
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vlnverse.errors import VLNVerseError

MAX_DEPTH = 64
"""Deepest nesting of JSON arrays and objects accepted (records need about 6)."""
MiB = 1 << 20
FILE_CAPS = {"run.json": 4 * MiB, "summary.json": 64 * MiB, "summary.md": 16 * MiB, "SHA256SUMS": MiB,
             "episodes.jsonl": 4096 * MiB, "transcript.jsonl": 4096 * MiB, "environment.json": MiB}
"""Largest size read of each file an evaluation folder or bundle holds."""
DEFAULT_CAP = 16 * MiB


class MalformedInput(VLNVerseError):
    """A submitted file cannot be read as what it should be (not a regular file, too large,
    not UTF-8, not strict JSON, nested too deep, or a field of the wrong kind)."""


def regular_file(path: Path) -> os.stat_result:
    """``path``'s status when it is a regular file (not followed if a symlink).

    Raises:
        MalformedInput: a symlink, FIFO, device, socket or folder.
        FileNotFoundError: no such file.
    """
    info = os.lstat(path)
    if not stat.S_ISREG(info.st_mode):
        kind = "a symlink" if stat.S_ISLNK(info.st_mode) else "a folder" if stat.S_ISDIR(info.st_mode) \
            else "a FIFO" if stat.S_ISFIFO(info.st_mode) else "not a regular file"
        raise MalformedInput(f"{path} is {kind}; only regular files are read")
    return info


def read_bytes(path: str | Path, cap: int | None = None) -> bytes:
    """The bytes of the regular file ``path`` (at most ``cap``, default by its name).

    Raises:
        MalformedInput: not a regular file, or larger than the cap.
        FileNotFoundError: no such file.
    """
    path = Path(path)
    cap = FILE_CAPS.get(path.name, DEFAULT_CAP) if cap is None else cap
    regular_file(path)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise MalformedInput(f"{path} is a symlink; only regular files are read") from None
        raise
    with os.fdopen(fd, "rb", buffering=0) as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):  # swapped after the first look
            raise MalformedInput(f"{path} is not a regular file; only regular files are read")
        if info.st_size > cap:
            raise MalformedInput(f"{path} is larger than {cap} bytes")
        blocks, size = [], 0
        while block := handle.read(min(MiB, cap + 1 - size)):  # a file still growing stops at the cap
            blocks.append(block)
            size += len(block)
            if size > cap:
                raise MalformedInput(f"{path} is larger than {cap} bytes")
    return b"".join(blocks)


def read_text(path: str | Path, cap: int | None = None) -> str:
    """The UTF-8 text of the regular file ``path`` (see :func:`read_bytes`)."""
    data = read_bytes(path, cap)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedInput(f"{path}: not UTF-8 text (byte {exc.start})") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_json(text: str, where: str) -> Any:
    """One strict JSON value of ``text``, nested at most :data:`MAX_DEPTH` deep.

    Raises:
        MalformedInput: invalid JSON, ``NaN``/``Infinity``, or nested too deep.
    """
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise MalformedInput(f"{where}: JSON nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        raise MalformedInput(f"{where}: not valid JSON ({str(exc)[:120]})") from None
    if _too_deep(value):
        raise MalformedInput(f"{where}: JSON nested deeper than {MAX_DEPTH} levels")
    return value


def _too_deep(value: Any) -> bool:
    """Whether arrays and objects nest more than :data:`MAX_DEPTH` levels in ``value``."""
    level = [value]
    for _ in range(MAX_DEPTH):
        level = [child for item in level if isinstance(item, (list, dict))
                 for child in (item.values() if isinstance(item, dict) else item)
                 if isinstance(child, (list, dict))]
        if not level:
            return False
    return True


def read_json(path: str | Path, cap: int | None = None) -> Any:
    """The strict JSON value of the regular file ``path``."""
    return parse_json(read_text(path, cap), str(path))


def read_json_lines(path: str | Path, cap: int | None = None) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of each non-blank line of a JSON-lines file."""
    for number, line in enumerate(read_text(path, cap).splitlines(), start=1):
        if line.strip():
            yield number, parse_json(line, f"{path}:{number}")
