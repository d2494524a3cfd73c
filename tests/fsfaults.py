"""Folders that fail like real disks: read-only, or full (a small tmpfs).

As root (CI), permissions do not stop writes, so a read-only or tiny tmpfs is mounted
over the folder; without root a read-only folder is made with ``chmod`` and a full disk
cannot be provoked (the test is skipped).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


def _mount(path: Path, options: str) -> bool:
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
                          capture_output=True, timeout=30)
    return done.returncode == 0


@contextlib.contextmanager
def read_only_folder(path: Path) -> Iterator[Path]:
    """``path`` as an empty folder that cannot be written."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        path.chmod(0o555)
        try:
            yield path
        finally:
            path.chmod(0o755)
        return
    if not _mount(path, "ro,size=64k"):
        pytest.skip("cannot mount a read-only tmpfs here (needs CAP_SYS_ADMIN)")
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], capture_output=True, timeout=30)


@contextlib.contextmanager
def small_disk(path: Path, size_kib: int) -> Iterator[Callable[[int], None]]:
    """``path`` on a tmpfs of ``size_kib`` KiB; yields ``grow(size_kib)`` to enlarge it."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or not _mount(path, f"size={size_kib}k"):
        pytest.skip("cannot mount a small tmpfs here (needs root and CAP_SYS_ADMIN)")

    def grow(new_kib: int) -> None:
        subprocess.run(["mount", "-o", f"remount,size={new_kib}k", str(path)], check=True, timeout=30)

    try:
        yield grow
    finally:
        subprocess.run(["umount", str(path)], capture_output=True, timeout=30)
