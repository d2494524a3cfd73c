"""Work consumed by a helper thread while the calling thread is still producing it.

The calling thread draws with GL, whose calls keep the GIL; the helper runs compiled
kernels that release it. The helper needs the GIL only between two pieces of work, so
the producer hands it over at each new item when the helper is waiting for one.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable
from typing import TypeVar

Item, Result = TypeVar("Item"), TypeVar("Result")


class _Queue:
    """Items in order, how many were put and taken, and whether the helper is waiting for one."""

    def __init__(self) -> None:
        self.items: deque = deque()
        self.put_count = self.taken = 0
        self.closed = self.waiting = False
        self.changed = threading.Condition()

    def put(self, item) -> None:
        """Add ``item``; if the helper waits, let it take the item (and the GIL) first."""
        with self.changed:
            self.items.append(item)
            self.put_count += 1
            self.changed.notify_all()
            if self.waiting:
                number = self.put_count
                self.changed.wait_for(lambda: self.taken >= number)

    def close(self) -> None:
        with self.changed:
            self.closed = True
            self.changed.notify_all()

    def take(self, wait: bool):
        """The next item, or ``self`` once closed and empty (or empty, if not ``wait``)."""
        with self.changed:
            while wait and not self.items and not self.closed:
                self.waiting = True
                self.changed.wait()
            self.waiting = False
            if not self.items:
                return self
            self.taken += 1
            self.changed.notify_all()
            return self.items.popleft()


def overlapped(produce: Iterable[Item], consume: Callable[[Item], Result]) -> list[Result]:
    """``consume(item)`` of every item ``produce`` yields: in a helper thread, as the items
    come, while this thread produces them; then in both threads, for the items left. The
    results come in no set order. An exception in either thread is raised here once the
    helper has stopped."""
    queue, results, failures = _Queue(), [], []

    def drain(wait: bool) -> None:
        while not failures:
            item = queue.take(wait)
            if item is queue:
                return
            try:
                results.append(consume(item))
            except BaseException as error:  # handed to the calling thread
                failures.append(error)

    helper = threading.Thread(target=drain, args=(True,), name="overlapped", daemon=True)
    helper.start()
    try:
        for item in produce:
            queue.put(item)
    finally:
        queue.close()
        drain(False)
        helper.join()
    if failures:
        raise failures[0]
    return results
