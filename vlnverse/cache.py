"""Caches of data derived from scene files: parsed scenes, occupancy maps, physics plans.

:class:`ProcessMemo` keeps the last few values in memory (the envs of one process share
them); :func:`cached` keeps them on disk for other processes.

Preparing a scene for an env (parsing the USD stage, rasterizing the occupancy map,
splitting colliders into convex pieces) takes 0.5-1 s, and every process that opens the
scene would repeat it: each eval or datagen worker, each re-run, each test. Entries live
in ``$VLNVERSE_CACHE_DIR`` (default ``$XDG_CACHE_HOME/vlnverse``, i.e. ``~/.cache/vlnverse``;
``off`` disables the cache), in a size-capped :mod:`diskcache` store that evicts the
least recently used entries.

Entries are only read by the code that wrote them: every key includes a digest of this
package's source files and of the versions of Python and of the libraries that compute
the entries, so any change of code starts afresh. Callers put the inputs in the
key (or check them with ``fresh``). An entry that cannot be read, or a cache folder that
cannot be written, only costs the time of building the value again.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import pickle
import sys
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")

CACHE_DIR_ENV = "VLNVERSE_CACHE_DIR"
DISABLED = ("off", "none", "0", "false")
SIZE_LIMIT = 2 * 1024**3
"""Bytes the cache may hold before the least recently used entries are evicted."""
LOCK_TIMEOUT_S = 5.0
"""How long a read or write waits for the store's lock before it gives up (and the value is
built instead): a store on a network file system must not stall the workers."""

_caches: dict[tuple[int, str], Any] = {}
"""(pid, folder) → the open diskcache.Cache (``None``: unusable); a forked child opens its own."""


def cache_directory() -> Path | None:
    """Where the cache lives, or ``None`` when ``$VLNVERSE_CACHE_DIR`` turns it off."""
    configured = os.environ.get(CACHE_DIR_ENV)
    if configured is not None:
        return None if configured.strip().lower() in (*DISABLED, "") else Path(configured)
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = Path.home() / ".cache"
        except RuntimeError:  # no home directory to be found
            return None
    return Path(base) / "vlnverse"


LIBRARIES = ("numpy", "scipy", "scikit-image", "scikit-fmm", "usd-core", "pybullet", "diskcache")
"""Distributions whose versions are part of every key (they compute or store the entries)."""


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """A digest of every source file of this package, the Python version and the versions of
    :data:`LIBRARIES` (entries of other code never match)."""
    root = Path(__file__).resolve().parent
    digest = hashlib.blake2b(digest_size=16)
    digest.update(sys.version.encode())
    for installed in _installed_versions():
        digest.update(installed.encode())
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _installed_versions() -> list[str]:
    """The ``*.dist-info`` folder names (name and version) of :data:`LIBRARIES` on ``sys.path``
    (read from the folders: ``importlib.metadata`` takes 10 ms a package)."""
    wanted = {name.replace("-", "_").lower() for name in LIBRARIES}
    found = []
    for folder in sys.path:
        try:
            entries = os.listdir(folder or ".")
        except OSError:
            continue
        found += [e for e in entries if e.endswith(".dist-info") and e.split("-", 1)[0].lower() in wanted]
    return sorted(found)


def content_digest(*parts: Any) -> str:
    """A digest of picklable values (numpy arrays by their bytes)."""
    return hashlib.blake2b(pickle.dumps(parts, protocol=pickle.HIGHEST_PROTOCOL), digest_size=16).hexdigest()


def _store() -> Any:
    """This process's cache store (``None``: disabled or unusable)."""
    directory = cache_directory()
    if directory is None:
        return None
    key = (os.getpid(), str(directory))
    if key not in _caches:
        store = None
        try:
            import diskcache

            store = diskcache.Cache(str(directory), size_limit=SIZE_LIMIT, eviction_policy="least-recently-used",
                                    timeout=LOCK_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - any failure only disables the cache
            logger.warning("disk cache disabled: cannot open %s (%s)", directory, exc)
        _caches[key] = store
    return _caches[key]


def cached(namespace: str, key: tuple, build: Callable[[], T], *,
           fresh: Callable[[T], bool] | None = None) -> T:
    """The value stored under ``(namespace, key)``, else ``build()`` (then stored).

    Args:
        namespace: What kind of value (one per producer).
        key: Picklable values that determine the value.
        build: Computes the value (picklable) on a miss.
        fresh: Whether a stored value still holds (e.g. its source files are unchanged).
    """
    store = _store()
    if store is None:
        return build()
    full_key = (namespace, code_digest(), *key)
    try:
        value = store.get(full_key, default=_MISSING)
    except Exception as exc:  # noqa: BLE001 - an unreadable entry is rebuilt
        logger.debug("cache entry %s unreadable (%s); rebuilding", namespace, exc)
        value = _MISSING
    if value is not _MISSING and (fresh is None or fresh(value)):
        return value
    value = build()
    try:
        store.set(full_key, value)
    except Exception as exc:  # noqa: BLE001 - a full or read-only disk only costs speed
        logger.debug("cache entry %s not stored (%s)", namespace, exc)
    return value


class ProcessMemo:
    """The values of the last ``size`` keys used in this process (forked children inherit them)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._values: OrderedDict[Hashable, Any] = OrderedDict()
        _memos.append(self)

    def get(self, key: Hashable, build: Callable[[], T], *, fresh: Callable[[T], bool] | None = None) -> T:
        """The value of ``key``, from ``build()`` when it is not kept (or not ``fresh`` any more)."""
        if key not in self._values or (fresh is not None and not fresh(self._values[key])):
            self._values[key] = build()
            while len(self._values) > self.size:
                self._values.popitem(last=False)
        self._values.move_to_end(key)
        return self._values[key]

    def clear(self) -> None:
        self._values.clear()


_memos: list[ProcessMemo] = []


def clear_memory() -> None:
    """Empty every :class:`ProcessMemo`, as in a freshly started process (the disk cache stays)."""
    for memo in _memos:
        memo.clear()


def clear() -> None:
    """Empty the disk cache (for benchmarks of cold starts)."""
    store = _store()
    if store is not None:
        store.clear(retry=True)


_MISSING = object()
