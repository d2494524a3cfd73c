"""Speed checks that hold on a busy machine: how a call's time grows with its input, not a
wall-clock limit. A linear reader takes about 10x as long on a 10x larger input; a regex that
backtracks, or a quadratic loop, 100x or more."""

from __future__ import annotations

import time
from collections.abc import Callable

GROWTH = 10
"""The large input is this many times the small one."""
LINEAR_BOUND = 30.0
"""The most the large input may take, as a multiple of the small one's time."""
TOO_FAST_TO_MATTER = 0.05
"""Seconds: a large input read faster than this passes whatever the ratio (timer noise)."""


def best_seconds(call: Callable[[], object], repeats: int = 3) -> float:
    """The fastest of ``repeats`` runs of ``call``: the least disturbed by other work."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return min(times)


def assert_linear_time(run: Callable[[int], object], size: int, label: str = "", attempts: int = 3) -> None:
    """``run(n)`` on inputs of size ``size`` and ``GROWTH * size``: the larger takes at most
    ``LINEAR_BOUND`` times as long, in one of ``attempts`` measurements (a busy machine can
    slow one of them; a reader that grows faster than linearly fails every one)."""
    for _ in range(attempts):
        small = best_seconds(lambda: run(size))
        large = best_seconds(lambda: run(GROWTH * size))
        ratio = large / max(small, 1e-6)
        if large < TOO_FAST_TO_MATTER or ratio < LINEAR_BOUND:
            return
    raise AssertionError(f"{label}: {size:,} -> {small:.4f} s, {GROWTH * size:,} -> {large:.3f} s "
                         f"({ratio:.0f}x for a {GROWTH}x input, in each of {attempts} measurements)")
