"""Where work items run: in this process, in local worker processes, or on Ray actors.

Every executor streams :class:`~vlnverse.eval.worker.WorkResult` objects back to the
caller's ``on_result`` one episode at a time as they finish (the caller writes them to
``episodes.jsonl``). The parallel executors hand out single items on demand through an
:class:`AffinityScheduler`, which keeps each worker on one scene and physics mode, so few
workers build each env while the load still balances. Results do not depend on the
executor: each episode's seed derives from the run seed and the episode alone.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import queue
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from vlnverse.errors import WorkerError
from vlnverse.eval.store import record_key
from vlnverse.eval.worker import (
    EvalWorker,
    RunSpec,
    WorkItem,
    WorkResult,
    run_process_worker,
    run_serial_items,
)
from vlnverse.parallel import check_executor, ray_session
from vlnverse.processes import describe_exit

logger = logging.getLogger(__name__)

IN_FLIGHT_PER_WORKER = 2
"""Items queued per worker running one episode at a time: it starts the next one while its
last result travels back (a worker running K at once gets K + 1)."""
MIN_ITEMS_TO_SHARE = 3
"""A worker joins another's group only while it has this many items left."""
POLL_S = 0.2
"""How often the local pool checks, while it waits for results, that its workers live."""
STOP_TIMEOUT_S = 5.0
"""How long stopping workers may take to close their envs before they are terminated."""

OnResult = Callable[[WorkResult], None]
Group = tuple[str, str]
"""Items that share an env: (scene file, physics mode)."""


class AffinityScheduler:
    """Hands out work items one at a time, keeping each worker on one (scene, physics) group.

    Building an env takes ~0.1 s with the scene cache warm and 0.5-0.9 s cold, so a worker
    should build few; handing out single items on demand (not fixed chunks) still lets the
    workers finish together.
    """

    def __init__(self, items: Sequence[WorkItem]) -> None:
        self._groups: dict[Group, deque[WorkItem]] = {}
        for item in items:
            self._groups.setdefault((item.scene_file, item.physics), deque()).append(item)
        self._current: dict[int, Group] = {}
        self._scenes: dict[int, set[str]] = {}

    def next_for(self, worker: int) -> WorkItem | None:
        """The next item for ``worker`` (``None`` once every item has been handed out)."""
        group = self._choose(worker)
        if group is None:
            self._current.pop(worker, None)
            return None
        self._current[worker] = group
        self._scenes.setdefault(worker, set()).add(group[0])
        remaining = self._groups[group]
        item = remaining.popleft()
        if not remaining:
            del self._groups[group]
        return item

    def _choose(self, worker: int) -> Group | None:
        """The worker's own group while it lasts; else an unclaimed group, preferring a
        scene this worker has loaded, then one no other worker has, then the largest;
        else the largest group, shared with the worker on it, so the tail still balances
        (unless only a few items are left in it)."""
        current = self._current.get(worker)
        if current in self._groups:
            return current
        claimed = set(self._current.values())
        unclaimed = [group for group in self._groups if group not in claimed]
        if unclaimed:
            mine = self._scenes.get(worker, set())
            others = set().union(*(scenes for w, scenes in self._scenes.items() if w != worker))
            return max(unclaimed, key=lambda g: (g[0] in mine, g[0] not in others, self._left(g)))
        largest = max(self._groups, key=self._left, default=None)
        if largest is None or self._left(largest) < MIN_ITEMS_TO_SHARE:
            return None  # the workers on the last groups finish them sooner than a new env is built
        return largest

    def _left(self, group: Group) -> int:
        return len(self._groups[group])


def dispatch(items: Sequence[WorkItem], workers: int, submit: Callable[[int, WorkItem], None],
             receive: Callable[[], tuple[int, WorkResult]], on_result: OnResult, *,
             concurrency: int = 1) -> None:
    """Run ``items`` on ``workers`` workers, keeping ``concurrency + 1`` of them in flight
    on each (:data:`IN_FLIGHT_PER_WORKER` for one at a time): ``submit(worker, item)`` sends
    one, ``receive()`` waits for the next ``(worker, result)``, and that worker gets its
    next item before ``on_result`` runs. Once a result says the run's budget is spent,
    nothing more is sent; the items in flight are waited for."""
    scheduler = AffinityScheduler(items)
    in_flight = 0
    stopped = False

    def feed(worker: int) -> None:
        nonlocal in_flight
        item = None if stopped else scheduler.next_for(worker)
        if item is not None:
            submit(worker, item)
            in_flight += 1

    for _ in range(max(IN_FLIGHT_PER_WORKER, concurrency + 1)):
        for worker in range(workers):
            feed(worker)
    while in_flight:
        worker, result = receive()
        in_flight -= 1
        stopped = stopped or result.stopped is not None
        feed(worker)
        on_result(result)


def run_serial(spec: RunSpec, items: Sequence[WorkItem], on_result: OnResult) -> None:
    """Run every item in this process (``spec.concurrency`` at once, on threads)."""
    worker = EvalWorker(spec)
    try:
        run_serial_items(worker, items, on_result)
    finally:
        worker.close()


def run_local_pool(spec: RunSpec, items: Sequence[WorkItem], on_result: OnResult, workers: int) -> None:
    """Run items on ``workers`` processes, each with its own agent and envs.

    Each process has its own inbox and all share one results queue, so results come back
    one episode at a time. Processes are forked on Linux (no re-import, scripts need no
    ``__main__`` guard) unless this process's llvmpipe runs rasterizer threads (then
    ``forkserver``), and spawned elsewhere (:func:`vlnverse.sim.gl.context.start_method`).

    Raises:
        VLNVerseError: a worker's error (e.g. :class:`~vlnverse.errors.SceneError`), or a
            :class:`~vlnverse.errors.WorkerError` naming the episode a dead worker ran.
    """
    from vlnverse.sim.gl.context import start_method

    context = multiprocessing.get_context(start_method())
    parent = os.getpid() if context.get_start_method() == "fork" else None  # None: the forkserver
    results = context.Queue()
    inboxes = [context.Queue() for _ in range(workers)]
    processes: list[Any] = []
    in_flight: list[dict[tuple[str, str], WorkItem]] = [{} for _ in range(workers)]

    def submit(worker: int, item: WorkItem) -> None:
        in_flight[worker][item.key] = item
        inboxes[worker].put(item)

    def receive() -> tuple[int, WorkResult]:
        worker, result = receive_result(results, processes, in_flight)
        if result.record is not None:
            in_flight[worker].pop(record_key(result.record), None)
        return worker, result

    try:
        for worker_id, inbox in enumerate(inboxes):
            process = context.Process(target=run_process_worker, name=f"vlnverse-eval-{worker_id}",
                                      args=(worker_id, spec, inbox, results, parent))
            process.start()
            processes.append(process)
        dispatch(items, workers, submit, receive, on_result, concurrency=spec.concurrency)
    finally:
        stop_processes(processes, inboxes)


def receive_result(results: Any, processes: Sequence[Any],
                   in_flight: Sequence[Mapping[tuple[str, str], WorkItem]]) -> tuple[int, WorkResult]:
    """The next ``(worker id, result)`` of the local pool; raises a worker's error, or a
    :class:`WorkerError` naming the episode a worker process was running when it died
    (rather than waiting for it forever)."""
    while True:
        try:
            worker_id, payload = results.get(timeout=POLL_S)
        except queue.Empty:
            dead = next((i for i, p in enumerate(processes) if not p.is_alive()), None)
            if dead is None:
                continue
            try:  # what it sent last (its error) may have arrived meanwhile
                worker_id, payload = results.get(timeout=POLL_S)
            except queue.Empty:
                raise _died(processes[dead], list(in_flight[dead].values())) from None
        if isinstance(payload, Exception):
            raise payload
        return worker_id, payload


def _died(process: Any, items: Sequence[WorkItem]) -> WorkerError:
    running = f"episode {items[0].key[0]} ({items[0].key[1]})" if items else "no episode"
    if len(items) > 1:
        running += f" (and {len(items) - 1} more queued or running)"
    return WorkerError(f"eval worker {process.name} (pid {process.pid}) died ({describe_exit(process.exitcode)}) "
                       f"while running {running}; finished episodes are kept, re-run the command to resume")


def stop_processes(processes: Sequence[Any], inboxes: Sequence[Any]) -> None:
    """Ask the worker processes to finish (closing their envs), then terminate those still
    running after :data:`STOP_TIMEOUT_S`."""
    for inbox in inboxes:
        inbox.put(None)
        inbox.cancel_join_thread()  # a dead worker leaves its inbox unread: do not wait on it
    deadline = time.monotonic() + STOP_TIMEOUT_S
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
    for process in processes:
        if process.is_alive():
            logger.warning("eval worker process %s did not stop; terminating it", process.name)
            process.terminate()
            process.join()


def run_ray(spec: RunSpec, items: Sequence[WorkItem], on_result: OnResult, workers: int,
            address: str | None = None, init_kwargs: dict[str, Any] | None = None) -> None:
    """Run items on ``workers`` Ray actors (one agent and env cache each), fed by :func:`dispatch`.

    Args:
        address: Ray cluster address (``"auto"``, ``"ray://host:10001"``); ``None`` starts
            a local Ray instance. An already initialised Ray session is used as it is.
        init_kwargs: More ``ray.init`` arguments (e.g. ``runtime_env``).
    """
    with ray_session(workers, address, init_kwargs) as ray:
        actor_class = ray.remote(num_cpus=1, max_concurrency=spec.concurrency)(EvalWorker)
        actors = [actor_class.remote(spec) for _ in range(workers)]
        pending: dict[Any, int] = {}

        def submit(worker: int, item: WorkItem) -> None:
            pending[actors[worker].run.remote(item)] = worker

        def receive() -> tuple[int, WorkResult]:
            done, _ = ray.wait(list(pending), num_returns=1)
            return pending.pop(done[0]), ray.get(done[0])

        dispatch(items, workers, submit, receive, on_result, concurrency=spec.concurrency)
        ray.get([actor.close.remote() for actor in actors])
        for actor in actors:
            ray.kill(actor)


def run_items(spec: RunSpec, items: Sequence[WorkItem], on_result: OnResult, *, executor: str = "local",
              workers: int = 1, ray_address: str | None = None) -> None:
    """Run ``items`` with the chosen executor (``local`` with one worker runs in-process).

    Raises:
        ConfigError: unknown executor or a worker count below 1.
        DependencyNotInstalled: ``ray`` requested but not installed.
    """
    check_executor(executor, workers)
    if executor == "ray":
        run_ray(spec, items, on_result, workers, ray_address)
    elif workers == 1 or len(items) <= 1:
        run_serial(spec, items, on_result)
    else:
        run_local_pool(spec, items, on_result, min(workers, len(items)))
