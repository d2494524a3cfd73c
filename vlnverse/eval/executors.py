"""Where work items run: in this process, in a local process pool, or on a Ray cluster.

Every executor streams :class:`~vlnverse.eval.worker.WorkResult` objects back to the
caller's ``on_result`` one episode at a time as they finish (the caller writes them to
``episodes.jsonl``) and hands items out in the given order (grouped by scene and physics
mode), so a worker sees a scene's episodes one after another and loads that scene once.
Results do not depend on the executor: each episode's seed derives from the run seed and
the episode alone.
"""

from __future__ import annotations

import logging
import math
import multiprocessing
import queue
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from vlnverse.errors import ConfigError, DependencyNotInstalled
from vlnverse.eval.worker import (
    EvalWorker,
    RunSpec,
    WorkItem,
    WorkResult,
    init_process_worker,
    run_chunk_in_process_worker,
)

logger = logging.getLogger(__name__)

EXECUTORS = ("local", "ray")
IN_FLIGHT_PER_WORKER = 2
CHUNKS_PER_WORKER = 4

OnResult = Callable[[WorkResult], None]


def run_serial(spec: RunSpec, items: Sequence[WorkItem], on_result: OnResult) -> None:
    """Run every item in this process, one after another."""
    worker = EvalWorker(spec)
    try:
        for item in items:
            on_result(worker.run(item))
    finally:
        worker.close()


def chunk_items(items: Sequence[WorkItem], workers: int, per_worker: int = CHUNKS_PER_WORKER) -> list[list[WorkItem]]:
    """Consecutive items of the same scene and physics mode, in chunks of at most
    ``len(items) / (workers * per_worker)`` (rounded up): a chunk runs on one worker, so
    scenes are loaded by few workers while the load still balances."""
    size = max(1, math.ceil(len(items) / (workers * per_worker)))
    chunks: list[list[WorkItem]] = []
    for item in items:
        last = chunks[-1] if chunks else None
        same = last is not None and (last[0].scene_file, last[0].physics) == (item.scene_file, item.physics)
        if same and len(last) < size:
            last.append(item)
        else:
            chunks.append([item])
    return chunks


def run_local_pool(spec: RunSpec, items: Sequence[WorkItem], on_result: OnResult, workers: int) -> None:
    """Run items on ``workers`` processes, each with its own agent and envs.

    Items go out in chunks (:func:`chunk_items`) but results come back one episode at a
    time through a queue, so an interrupted run keeps every finished episode. Processes
    are forked on Linux (no re-import, scripts need no ``__main__`` guard; the parent
    holds no simulator) and spawned elsewhere.
    """
    context = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    results = context.Queue()
    chunks = chunk_items(items, workers)
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=init_process_worker,
                             initargs=(spec, results)) as pool:
        pending = {pool.submit(run_chunk_in_process_worker, chunk) for chunk in chunks}
        expected, received = len(items), 0
        try:
            while received < expected:
                try:
                    result = results.get(timeout=0.2)
                except queue.Empty:
                    for future in [f for f in pending if f.done()]:
                        future.result()  # raises the worker's error (or BrokenProcessPool)
                        pending.discard(future)
                    continue
                received += 1
                on_result(result)
        except BaseException:
            for future in pending:
                future.cancel()
            raise


def import_ray() -> Any:
    """Import Ray, or raise :class:`DependencyNotInstalled` with the install command."""
    try:
        import ray
    except ImportError:
        raise DependencyNotInstalled("ray", extra="ray", purpose="--executor ray") from None
    return ray


def run_ray(spec: RunSpec, items: Sequence[WorkItem], on_result: OnResult, workers: int,
            address: str | None = None, init_kwargs: dict[str, Any] | None = None) -> None:
    """Run items on ``workers`` Ray actors (one agent and env cache each).

    Args:
        address: Ray cluster address (``"auto"``, ``"ray://host:10001"``); ``None`` starts
            a local Ray instance (shut down again afterwards). An already initialised
            Ray session is used as it is.
        init_kwargs: More ``ray.init`` arguments (e.g. ``runtime_env``).
    """
    ray = import_ray()
    started = False
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, logging_level=logging.WARNING,
                 **(init_kwargs or {}))
        started = True
    try:
        actor_class = ray.remote(num_cpus=1)(EvalWorker)
        actors = [actor_class.remote(spec) for _ in range(workers)]
        queue = iter(items)
        pending: dict[Any, Any] = {}

        def feed(actor: Any) -> None:
            item = next(queue, None)
            if item is not None:
                pending[actor.run.remote(item)] = actor

        for actor in actors:
            for _ in range(IN_FLIGHT_PER_WORKER):
                feed(actor)
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            actor = pending.pop(done[0])
            on_result(ray.get(done[0]))
            feed(actor)
        ray.get([actor.close.remote() for actor in actors])
        for actor in actors:
            ray.kill(actor)
    finally:
        if started:
            ray.shutdown()


def run_items(spec: RunSpec, items: Sequence[WorkItem], on_result: OnResult, *, executor: str = "local",
              workers: int = 1, ray_address: str | None = None) -> None:
    """Run ``items`` with the chosen executor (``local`` with one worker runs in-process).

    Raises:
        ConfigError: unknown executor or a worker count below 1.
        DependencyNotInstalled: ``ray`` requested but not installed.
    """
    if executor not in EXECUTORS:
        raise ConfigError(f"unknown executor {executor!r}; valid: {', '.join(EXECUTORS)}")
    if not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"workers must be a positive integer, got {workers!r}")
    if executor == "ray":
        run_ray(spec, items, on_result, workers, ray_address)
    elif workers == 1 or len(items) <= 1:
        run_serial(spec, items, on_result)
    else:
        run_local_pool(spec, items, on_result, min(workers, len(items)))
