"""The deadline of the episode in hand, seen by every model call made for it.

The eval runner sets it (:func:`within`) around an agent's play; the LLM client bounds
each HTTP attempt by the time left (:func:`bound`) and raises :class:`EpisodeTimeout` once
none is left, and calls made on helper threads (:func:`run_all`) carry the deadline along
and are abandoned, not awaited, when it passes. Without a deadline nothing is bounded.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import contextvars
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("vlnverse_deadline", default=None)


class EpisodeTimeout(BaseException):
    """The episode's time limit passed (a BaseException, so an agent's ``except Exception``
    does not swallow it)."""


@contextlib.contextmanager
def within(seconds: float | None) -> Iterator[None]:
    """Set the deadline ``seconds`` from now in this context (None: none; a nested,
    later deadline does not extend an earlier one)."""
    if seconds is None:
        yield
        return
    ends = time.monotonic() + seconds
    outer = _DEADLINE.get()
    token = _DEADLINE.set(ends if outer is None else min(outer, ends))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def remaining() -> float | None:
    """Seconds left before the deadline (None: no deadline; never below 0)."""
    ends = _DEADLINE.get()
    return None if ends is None else max(0.0, ends - time.monotonic())


def check() -> None:
    """Raise :class:`EpisodeTimeout` if the deadline has passed."""
    if remaining() == 0.0:
        raise EpisodeTimeout


def bound(seconds: float) -> float:
    """``seconds``, or the time left if that is less; raises :class:`EpisodeTimeout` if none is left."""
    check()
    left = remaining()
    return seconds if left is None else min(seconds, left)


def run_all(fn: Callable[[Any], Any], args: Sequence[Any], workers: int) -> list[Any]:
    """``[fn(a) for a in args]`` on up to ``workers`` threads, each within this context's
    deadline; raises :class:`EpisodeTimeout` when it passes first, leaving the threads to
    end by themselves (their own calls are bounded by the same deadline)."""
    pool = cf.ThreadPoolExecutor(max_workers=max(1, min(workers, len(args))), thread_name_prefix="vlnverse-call")
    try:
        futures = [pool.submit(contextvars.copy_context().run, fn, arg) for arg in args]
        _, late = cf.wait(futures, timeout=remaining())
        if late:
            raise EpisodeTimeout
        return [future.result() for future in futures]
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
