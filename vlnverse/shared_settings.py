"""Process-wide settings that library code changes for a while and puts back.

Torch's CPU thread count belongs to the whole process, and blocks on several threads may
change it at once. A save/set/restore per
block can then leave the wrong value behind (A saves, B saves A's value, A restores, B
restores A's value). A :class:`SharedSetting` keeps the blocks that hold it: the first
saves the caller's value, the last puts it back, whatever the order they end in.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any


class SharedSetting:
    """A process-wide value held by nested or concurrent blocks (:meth:`held`)."""

    def __init__(self, get: Callable[[], Any], set_: Callable[[Any], None]) -> None:
        self._get, self._set = get, set_
        self._lock = threading.Lock()
        self._holds: list[tuple[object, Any]] = []  # (block, its value), oldest first
        self._saved: Any = None

    @contextlib.contextmanager
    def held(self, value: Any) -> Iterator[None]:
        """``value`` in force inside the block. While several blocks hold it, the latest
        one still running sets it; after the last one the value from before the first is back."""
        block = object()
        with self._lock:
            if not self._holds:
                self._saved = self._get()
            self._holds.append((block, value))
            self._set(value)
        try:
            yield
        finally:
            with self._lock:
                self._holds = [hold for hold in self._holds if hold[0] is not block]
                self._set(self._holds[-1][1] if self._holds else self._saved)


def _torch() -> Any:
    import torch  # only called by code that has torch already

    return torch


#: torch's intra-op CPU threads (``torch.set_num_threads``).
TORCH_THREADS = SharedSetting(lambda: _torch().get_num_threads(), lambda n: _torch().set_num_threads(n))
def torch_threads(threads: int | None) -> contextlib.AbstractContextManager:
    """torch on ``threads`` CPU threads inside the block (None or 0: left as it is)."""
    return TORCH_THREADS.held(threads) if threads else contextlib.nullcontext()

