"""Where work items run: in this process, in a local process pool, or on a Ray cluster.

Every executor streams :class:`~vlnverse.eval.worker.WorkResult` objects back to the
caller's ``on_result`` as they finish (the caller writes them to ``episodes.jsonl``), keeps
at most a few items in flight per worker, and hands items out in the given order, so a
worker sees a scene's episodes one after another and loads that scene once. Results do
not depend on the executor: each episode's seed derives from the run seed and the
episode alone.
"""

from __future__ import annotations

import logging
import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from vlnverse.errors import ConfigError, DependencyNotInstalled
from vlnverse.eval.worker import (
    EvalWorker,
    RunSpec,
    WorkItem,
    WorkResult,
    init_process_worker,
    run_in_process_worker,
)

logger = logging.getLogger(__name__)

EXECUTORS = ("local", "ray")
IN_FLIGHT_PER_WORKER = 2

OnResult = Callable[[WorkResult], None]


def run_serial(spec: RunSpec, items: Sequence[WorkItem], on_result: OnResult) -> None:
    """Run every item in this process, one after another."""
    worker = EvalWorker(spec)
    try:
        for item in items:
            on_result(worker.run(item))
    finally:
        worker.close()


def run_local_pool(spec: RunSpec, items: Sequence[WorkItem], on_result: OnResult, workers: int) -> None:
    """Run items on ``workers`` spawned processes, each with its own agent and envs."""
    context = multiprocessing.get_context("spawn")
    queue = iter(items)
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=init_process_worker,
                             initargs=(spec,)) as pool:
        pending: set[Future] = set()
        try:
            for item in queue:
                pending.add(pool.submit(run_in_process_worker, item))
                if len(pending) >= workers * IN_FLIGHT_PER_WORKER:
                    break
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    on_result(future.result())
                    nxt = next(queue, None)
                    if nxt is not None:
                        pending.add(pool.submit(run_in_process_worker, nxt))
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
