"""Helpers for worker processes: die with the parent, and say how a process ended.

Workers of ``eval`` and ``datagen`` hold a simulator and an agent (~175 MB each); when
their parent is killed (SIGKILL, OOM killer) they must not live on, reparented and idle.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import signal
import sys

logger = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1


def exit_with_parent(parent_pid: int | None) -> None:
    """Make this process end when its parent ``parent_pid`` does.

    On Linux the kernel sends SIGKILL at the parent's death (``PR_SET_PDEATHSIG``); if the
    parent died before that was set, the process exits at once. Elsewhere nothing is set
    (the pool's own checks on its pipes remain). ``None`` names no pid: the process that
    forked this one, e.g. a ``forkserver`` (which ends with the process it serves).
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            logger.debug("prctl(PR_SET_PDEATHSIG) failed: errno %d", ctypes.get_errno())
    except (OSError, AttributeError) as exc:
        logger.debug("cannot set the parent-death signal: %s", exc)
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(1)


def describe_exit(exitcode: int | None) -> str:
    """How a process ended, in words (``killed by SIGKILL``, ``exit code 3``)."""
    if exitcode is None:
        return "still running"
    if exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"
