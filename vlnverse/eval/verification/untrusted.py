"""Reading the files of an evaluation folder someone else made: nothing in them is trusted.

``eval verify`` reads a submitted folder only through these functions. A file must be a
regular file inside the folder (a symlink, FIFO, socket or device is refused without
following or blocking on it), no larger than its cap; text must be UTF-8; JSON must be
strict (no ``NaN``/``Infinity``, no number beyond a double or a 64-bit integer, no key twice in
an object) and nested at most :data:`MAX_DEPTH` levels. JSON-lines files are streamed one line
at a time, each line at most :data:`LINE_CAP` bytes and none blank. Each problem raises one
:class:`MalformedInput` naming the file, which the CLI prints as one ``error:`` line (exit
status 2).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import math
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
             "episodes.jsonl": 1024 * MiB, "transcript.jsonl": 1024 * MiB, "environment.json": MiB}
"""Largest size read of each file an evaluation folder or bundle holds."""
DEFAULT_CAP = 16 * MiB
LINE_CAP = 16 * MiB
"""Longest line of a JSON-lines file (a record, a model call)."""
LARGEST_INTEGER = 2**63 - 1
"""JSON integers beyond a signed 64-bit integer are refused."""


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


@contextlib.contextmanager
def _open_regular(path: Path, cap: int) -> Iterator[Any]:
    """The regular file ``path``, open for binary reading, when no larger than ``cap``."""
    regular_file(path)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise MalformedInput(f"{path} is a symlink; only regular files are read") from None
        raise
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):  # swapped after the first look
            raise MalformedInput(f"{path} is not a regular file; only regular files are read")
        if info.st_size > cap:
            raise MalformedInput(f"{path} is larger than {cap} bytes")
        yield handle


def read_bytes(path: str | Path, cap: int | None = None) -> bytes:
    """The bytes of the regular file ``path`` (at most ``cap``, default by its name).

    Raises:
        MalformedInput: not a regular file, or larger than the cap.
        FileNotFoundError: no such file.
    """
    return b"".join(_blocks(Path(path), cap))


def sha256_of(path: str | Path, cap: int | None = None) -> str:
    """The sha256 of the regular file ``path``, read a block at a time (see :func:`read_bytes`)."""
    digest = hashlib.sha256()
    for block in _blocks(Path(path), cap):
        digest.update(block)
    return digest.hexdigest()


def _blocks(path: Path, cap: int | None) -> Iterator[bytes]:
    """The bytes of the regular file ``path`` a block at a time, refused past ``cap`` (default by its name)."""
    cap = FILE_CAPS.get(path.name, DEFAULT_CAP) if cap is None else cap
    size = 0
    with _open_regular(path, cap) as handle:
        while block := handle.read(min(MiB, cap + 1 - size)):  # a file still growing stops at the cap
            size += len(block)
            if size > cap:
                raise MalformedInput(f"{path} is larger than {cap} bytes")
            yield block


def read_text(path: str | Path, cap: int | None = None) -> str:
    """The UTF-8 text of the regular file ``path`` (see :func:`read_bytes`)."""
    return _utf8(read_bytes(path, cap), str(path))


def _utf8(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedInput(f"{where}: not UTF-8 text (byte {exc.start})") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is beyond the range of a number")
    return value


def _bounded(text: str) -> int:
    value = int(text)
    if abs(value) > LARGEST_INTEGER:
        raise ValueError(f"{text[:40]} is beyond the range of a 64-bit integer")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {key[:40]!r} given twice in one object")
        out[key] = value
    return out


def parse_json(text: str, where: str) -> Any:
    """One strict JSON value of ``text``, nested at most :data:`MAX_DEPTH` deep.

    Raises:
        MalformedInput: invalid JSON, ``NaN``/``Infinity``, a number out of range, a key twice
            in one object, or nested too deep.
    """
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite, parse_int=_bounded,
                           object_pairs_hook=_unique_keys)
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
    """``(line number, value)`` of each line of a JSON-lines file, read one line at a time.

    Raises:
        MalformedInput: as :func:`read_json`, or a blank line, or a line over :data:`LINE_CAP`.
    """
    path = Path(path)
    cap = FILE_CAPS.get(path.name, DEFAULT_CAP) if cap is None else cap
    size = 0
    with _open_regular(path, cap) as handle:
        for number, line in enumerate(iter(lambda: handle.readline(LINE_CAP + 1), b""), start=1):
            size += len(line)
            where = f"{path}:{number}"
            if size > cap:
                raise MalformedInput(f"{path} is larger than {cap} bytes")
            if len(line) > LINE_CAP:
                raise MalformedInput(f"{where}: a line longer than {LINE_CAP} bytes")
            text = _utf8(line, where)
            if not text.strip():
                raise MalformedInput(f"{where}: a blank line (one JSON value per line)")
            yield number, parse_json(text, where)
