"""``vlnverse eval unpack``: a results archive someone sent, unpacked within its members' caps.

A bundle (:mod:`vlnverse.eval.verification.bundle`) holds a few regular files of known names. Unpacking
accepts exactly those: each member must be a regular file named as a bundle member
(:data:`~vlnverse.eval.verification.verify.BUNDLE_MEMBERS` or ``SHA256SUMS``), given once, and its declared
size (``TarInfo.size``) within the cap ``eval verify`` reads it with
(:data:`~vlnverse.eval.verification.untrusted.FILE_CAPS`), checked before a byte of it is read. The
archive is read as a stream whose decompressed size may not run past the members accepted so
far (plus their headers), so neither a member nor a header can make it inflate without bound.
"""

from __future__ import annotations

import gzip
import io
import shutil
import tarfile
import zlib
from pathlib import Path

from vlnverse.errors import OutputError
from vlnverse.eval.verification.untrusted import (
    DEFAULT_CAP,
    FILE_CAPS,
    MalformedInput,
    MiB,
    regular_file,
)
from vlnverse.eval.verification.verify import BUNDLE_MEMBERS, SUMS_FILE
from vlnverse.fileio import atomic_open

HEADER_ALLOWANCE = 64 << 10
"""Decompressed bytes allowed per member beyond its data (its headers and the reader's look-ahead)."""


class _Budget(io.RawIOBase):
    """A readable stream that refuses to give more than ``limit`` bytes (raised as it goes)."""

    def __init__(self, raw: io.BufferedIOBase, archive: Path) -> None:
        self.raw, self.archive = raw, archive
        self.limit, self.given = HEADER_ALLOWANCE, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        count = self.raw.readinto(buffer)
        self.given += count
        if self.given > self.limit:
            raise MalformedInput(f"{self.archive}: decompresses to more than its members' declared sizes")
        return count


def unpack_bundle(archive: str | Path, to: str | Path) -> list[str]:
    """Unpack the results archive ``archive`` into the new (or empty) folder ``to``; its member names.

    Nothing is left in ``to`` when the archive is refused.

    Raises:
        MalformedInput: the archive is not a gzipped tar, or holds something a bundle does not
            (another name, a link, a folder, a member twice, a member over its cap).
        OutputError: ``to`` holds files already.
    """
    archive, to = Path(archive), Path(to)
    regular_file(archive)
    if to.is_dir() and any(to.iterdir()):
        raise OutputError(f"{to} is not empty; unpack into a new folder")
    to.mkdir(parents=True, exist_ok=True)
    names: list[str] = []
    try:
        with archive.open("rb") as raw, gzip.GzipFile(fileobj=raw) as inflated:
            budget = _Budget(inflated, archive)
            with tarfile.open(fileobj=budget, mode="r|") as members:
                for member in members:
                    budget.limit += _accept(archive, member, names) + HEADER_ALLOWANCE
                    with atomic_open(to / member.name, "wb") as handle:
                        shutil.copyfileobj(members.extractfile(member), handle, MiB)
                    names.append(member.name)
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        _remove(to, names)
        raise MalformedInput(f"{archive}: not a results archive (a gzipped tar): {exc}") from None
    except BaseException:
        _remove(to, names)
        raise
    return names


def _accept(archive: Path, member: tarfile.TarInfo, names: list[str]) -> int:
    """``member``'s size when it may be unpacked after ``names`` (see the module docs)."""
    name = member.name
    if name not in (*BUNDLE_MEMBERS, SUMS_FILE):
        raise MalformedInput(f"{archive}: member {name[:80]!r} is not a bundle member "
                             f"({', '.join((*BUNDLE_MEMBERS, SUMS_FILE))})")
    if name in names:
        raise MalformedInput(f"{archive}: member {name} is given twice")
    if not member.isreg():
        raise MalformedInput(f"{archive}: member {name} is not a regular file")
    cap = FILE_CAPS.get(name, DEFAULT_CAP)
    if member.size > cap:
        raise MalformedInput(f"{archive}: member {name} is {member.size} bytes, more than its cap of {cap}")
    return member.size


def _remove(to: Path, names: list[str]) -> None:
    for name in names:
        (to / name).unlink(missing_ok=True)
