"""Units of work (one scene each) run in this process, on a local process pool, or as Ray tasks.

Procedural scene generation and dataset generation both write one scene per unit, and a
unit's output depends only on its arguments, so the executor changes where the work runs,
never the bytes. :func:`run_units` yields each unit's result as it finishes with the peak
resident memory of the process that ran it, so a build can report memory per worker.
A unit whose worker process died (a native library's crash, the kernel's OOM killer) runs
again, at most :data:`WORKER_RETRIES` times: Ray reruns the task, a local pool is replaced by a
fresh one for the units it left unfinished (:func:`pooled`). After that the local pool raises
:class:`~vlnverse.errors.WorkerError` (finished units are kept by the caller and a re-run resumes).
"""

from __future__ import annotations

import concurrent.futures as futures
import contextlib
import functools
import logging
import multiprocessing
import os
import resource
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from vlnverse.errors import ConfigError, DependencyNotInstalled, WorkerError
from vlnverse.processes import exit_with_parent

log = logging.getLogger(__name__)

EXECUTORS = ("local", "ray")
RAY_USAGE_STATS_ENV = "RAY_USAGE_STATS_ENABLED"
"""Ray's documented switch for its usage statistics ("0" off, "1" on)."""
WORKER_RETRIES = 3
"""How often a unit whose worker process died runs again (system failures, not exceptions)."""


@dataclass(frozen=True)
class UnitResult:
    """One finished unit.

    Attributes:
        index: Position of the unit's argument in the list given to :func:`run_units`.
        value: What the unit function returned.
        worker: Who ran it (``pid@host``).
        peak_rss_mb: Peak resident memory of that worker process so far (MiB).
    """

    index: int
    value: Any
    worker: str
    peak_rss_mb: float


def peak_rss_mb() -> float:
    """This process's peak resident set size (MiB; Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def _measured(fn: Callable[[Any], Any], index: int, arg: Any) -> UnitResult:
    value = fn(arg)
    return UnitResult(index, value, f"{os.getpid()}@{os.uname().nodename}", round(peak_rss_mb(), 1))


def check_executor(executor: str, workers: int) -> None:
    """Raise :class:`ConfigError` for an unknown executor or a worker count below 1."""
    if executor not in EXECUTORS:
        raise ConfigError(f"unknown executor {executor!r}; valid: {', '.join(EXECUTORS)}")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"workers must be a positive integer, got {workers!r}")


def run_units(fn: Callable[[Any], Any], args: Sequence[Any], *, workers: int = 1, executor: str = "local",
              ray_address: str | None = None, describe: Callable[[Any], str] = str,
              units_per_process: int | None = None) -> Iterator[UnitResult]:
    """Run ``fn(arg)`` for every ``arg``, yielding results in the order they finish.

    Args:
        fn: A module-level function (it is pickled to the workers).
        args: One argument per unit.
        workers: Processes (local) or Ray tasks in flight; ``local`` with 1 runs in this process.
        executor: ``local`` or ``ray``.
        ray_address: Ray cluster address; ``None`` starts a local Ray instance (an
            initialised Ray session is used as it is).
        describe: Names a unit in errors.
        units_per_process: Replace the worker processes after every ``workers x`` this many
            units (None: never), for work whose native libraries keep memory after each unit
            (renderers), so a long build's memory stays flat.

    Raises:
        ConfigError: unknown executor or bad worker count.
        DependencyNotInstalled: ``ray`` asked for but not installed.
        WorkerError: a local worker process died (the units it left unfinished are named).
    """
    check_executor(executor, workers)
    if executor == "ray":
        yield from _run_ray(fn, args, workers, ray_address, units_per_process)
    elif workers == 1 or len(args) <= 1:
        for index, arg in enumerate(args):
            yield _measured(fn, index, arg)
    else:
        yield from _run_pool(fn, args, workers, describe, units_per_process)


def _run_pool(fn, args: Sequence[Any], workers: int, describe: Callable[[Any], str],
              units_per_process: int | None) -> Iterator[UnitResult]:
    """Process pools (forked on Linux: no re-import; spawned elsewhere) whose workers die with
    us; with ``units_per_process``, a fresh pool for every ``workers x units_per_process``
    units (Python 3.11's ``max_tasks_per_child`` can deadlock and refuses ``fork``)."""
    context = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    indexed = list(enumerate(args))
    batch = len(indexed) if not units_per_process else workers * units_per_process
    for first in range(0, len(indexed), batch):
        yield from pooled(functools.partial(_measured_unit, fn), indexed[first:first + batch], workers=workers,
                          context=context, initializer=exit_with_parent, initargs=(os.getpid(),),
                          describe=lambda unit: describe(unit[1]))


def _measured_unit(fn: Callable[[Any], Any], unit: tuple[int, Any]) -> UnitResult:
    return _measured(fn, *unit)


def pooled(fn: Callable[[Any], Any], args: Sequence[Any], *, workers: int, context: Any,
           initializer: Callable[..., None] | None = None, initargs: tuple[Any, ...] = (),
           describe: Callable[[Any], str] = str) -> Iterator[Any]:
    """``fn(arg)`` for every ``arg`` on a process pool of ``context``, yielding results in the
    order they finish. When a worker process dies, the units the pool left unfinished run
    again in a fresh pool, at most :data:`WORKER_RETRIES` times (an exception a unit raises is
    raised at once).

    Raises:
        WorkerError: workers died more often than that (the unfinished units are named).
    """
    todo = list(args)
    for attempt in range(WORKER_RETRIES + 1):
        with futures.ProcessPoolExecutor(max_workers=min(workers, len(todo)), mp_context=context,
                                         initializer=initializer, initargs=initargs) as pool:
            pending = {pool.submit(fn, arg): arg for arg in todo}
            yielded = set()
            try:
                for future in futures.as_completed(pending):
                    result = future.result()
                    yielded.add(future)
                    yield result
                return
            except BrokenProcessPool:
                pass
        for future in pending:  # finished before the pool broke, not yet handed out
            if future not in yielded and future.done() and future.exception() is None:
                yield future.result()
        todo = [arg for future, arg in pending.items() if future.exception() is not None]
        names = sorted(describe(arg) for arg in todo)
        listed = f"{', '.join(names[:5])}{' and more' if len(names) > 5 else ''}"
        if attempt == WORKER_RETRIES:
            raise WorkerError(f"a worker process died while running {listed} ({WORKER_RETRIES + 1} tries); "
                              "finished work is kept, re-run the command to resume")
        log.warning("a worker process died while running %s; running them again in a fresh pool (retry %d of %d)",
                    listed, attempt + 1, WORKER_RETRIES)


def import_ray() -> Any:
    """Import Ray, or raise :class:`DependencyNotInstalled` with the install command."""
    try:
        import ray
    except ImportError:
        raise DependencyNotInstalled("ray", extra="ray", purpose="--executor ray") from None
    return ray


@contextlib.contextmanager
def usage_stats_off_by_default() -> Iterator[None]:
    """Start Ray with its usage statistics off (they would post to a server off this
    machine) unless the user chose otherwise in ``RAY_USAGE_STATS_ENABLED``."""
    chosen = os.environ.get(RAY_USAGE_STATS_ENV)
    if chosen is None:
        os.environ[RAY_USAGE_STATS_ENV] = "0"
    try:
        yield
    finally:
        if chosen is None:
            os.environ.pop(RAY_USAGE_STATS_ENV, None)


@contextlib.contextmanager
def ray_session(workers: int, address: str | None = None, init_kwargs: dict[str, Any] | None = None) -> Iterator[Any]:
    """The ``ray`` module, initialised: an existing session as it is, else one started here
    (at ``address``, or a local instance with a CPU for every worker) and shut down after."""
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    options: dict[str, Any] = dict(include_dashboard=False, logging_level=logging.WARNING)
    if address is None:
        options["num_cpus"] = max(workers, os.cpu_count() or 1)
    options.update(init_kwargs or {})
    with usage_stats_off_by_default():
        ray.init(address=address, **options)
    try:
        yield ray
    finally:
        ray.shutdown()


def _run_ray(fn, args: Sequence[Any], workers: int, address: str | None,
             units_per_process: int | None) -> Iterator[UnitResult]:
    """Ray tasks, ``workers`` in flight; Ray reruns a task whose worker process died."""
    with ray_session(workers, address) as ray:
        task = ray.remote(num_cpus=1, max_retries=WORKER_RETRIES, max_calls=units_per_process or 0)(_measured)
        queue = list(enumerate(args))[::-1]
        pending: list[Any] = []
        while queue or pending:
            while queue and len(pending) < workers:
                index, arg = queue.pop()
                pending.append(task.remote(fn, index, arg))
            done, pending = ray.wait(pending, num_returns=1)
            yield ray.get(done[0])
