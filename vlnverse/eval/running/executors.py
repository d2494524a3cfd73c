"""Where work items run: in this process, in local worker processes, or on Ray actors.

Every executor streams :class:`~vlnverse.eval.running.worker.WorkResult` objects back to the
caller's ``on_result`` one episode at a time as they finish (the caller writes them to
``episodes.jsonl``). Every executor hands out single items on demand through an
:class:`AffinityScheduler`, one lane at a time: a worker running K episodes at once has K
lanes, and the scheduler keeps each lane on one env key (scene and physics mode), so the
worker resets the env a lane's last episode used to the lane's next one instead of
building another, while the load still balances. Results do not depend on
the executor or on which env ran an episode: each episode's seed derives from the run seed
and the episode alone, and a reset puts the env back as built.
"""

from __future__ import annotations

import dataclasses
import logging
import multiprocessing
import os
import pickle
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from vlnverse.errors import WorkerError
from vlnverse.eval.running.store import record_key
from vlnverse.eval.running.worker import (
    EvalWorker,
    RunSpec,
    WorkItem,
    WorkResult,
    hard_limit,
    run_process_worker,
)
from vlnverse.parallel import check_executor, ray_session
from vlnverse.processes import describe_exit

logger = logging.getLogger(__name__)

IN_FLIGHT_PER_WORKER = 2
"""Items queued per worker running one episode at a time: it starts the next one while its
last result travels back (a worker running K at once has one in flight per lane)."""
MIN_ITEMS_TO_SHARE = 3
"""A worker running one episode at a time joins another's group only while it has this many
items left (a lane of a worker running several joins any: its episodes wait on an agent
far longer than an env takes to build)."""
POLL_S = 0.2
"""How often the local pool checks, while it waits for results, that its workers live."""
STOP_TIMEOUT_S = 5.0
"""How long stopping workers may take to close their envs before they are terminated."""

OnResult = Callable[[WorkResult], None]
Group = tuple[str, str]
"""Items that share an env: :attr:`~vlnverse.eval.running.worker.WorkItem.env_key` (scene file, physics mode)."""


class AffinityScheduler:
    """Hands out work items one at a time, keeping each worker (or lane) on one env key.

    Building an env takes ~0.1 s with the scene cache warm and 0.5-0.9 s cold, so a worker
    should build few; handing out single items on demand (not fixed chunks) still lets the
    workers finish together. A worker joins a group another one is on only while it has
    ``min_to_share`` items left.
    """

    def __init__(self, items: Sequence[WorkItem], min_to_share: int = MIN_ITEMS_TO_SHARE) -> None:
        self._groups: dict[Group, deque[WorkItem]] = {}
        for item in items:
            self._groups.setdefault(item.env_key, deque()).append(item)
        self._min_to_share = min_to_share
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
        else the group with the most items left per worker on it (the one to end last),
        shared with them, so the tail still balances (unless only a few items are left in
        it). Sharing by items per worker, not by items, leaves as few workers as can be
        with a group of their own to leave later for another (a new env each)."""
        current = self._current.get(worker)
        if current in self._groups:
            return current
        claimed = Counter(group for w, group in self._current.items() if w != worker)
        unclaimed = [group for group in self._groups if group not in claimed]
        if unclaimed:
            mine = self._scenes.get(worker, set())
            others = set().union(*(scenes for w, scenes in self._scenes.items() if w != worker))
            return max(unclaimed, key=lambda g: (g[0] in mine, g[0] not in others, self._left(g)))
        busiest = max(self._groups, key=lambda g: self._left(g) / claimed[g], default=None)
        if busiest is None or self._left(busiest) < self._min_to_share:
            return None  # the workers on the last groups finish them sooner than a new env is built
        return busiest

    def _left(self, group: Group) -> int:
        return len(self._groups[group])


def dispatch(items: Sequence[WorkItem], workers: int, submit: Callable[[int, WorkItem], None],
             receive: Callable[[], tuple[int, WorkResult]], on_result: OnResult, *,
             concurrency: int = 1, queued: bool = True) -> None:
    """Run ``items`` on ``workers`` workers of ``concurrency`` lanes each (a lane: one of the
    episodes a worker runs at once). Each lane gets its next item from the scheduler when
    its last result comes back, so it keeps to one env key; in flight are one item per lane,
    or :data:`IN_FLIGHT_PER_WORKER` for a worker running one at a time (unless not
    ``queued``). ``submit(worker, item)`` sends one, ``receive()`` waits for the next
    ``(worker, result)``, and that lane gets its next item before ``on_result`` runs. Once
    a result says the run's budget is spent, nothing more is sent; the items in flight are
    waited for."""
    scheduler = AffinityScheduler(items, MIN_ITEMS_TO_SHARE if concurrency == 1 else 1)
    lane_of: dict[tuple[str, str], int] = {}  # item key -> its lane (lane % workers: its worker)
    in_flight = 0
    stopped = False

    def feed(lane: int) -> None:
        nonlocal in_flight
        item = None if stopped else scheduler.next_for(lane)
        if item is not None:
            lane_of[item.key] = lane
            submit(lane % workers, item)
            in_flight += 1

    for _ in range(IN_FLIGHT_PER_WORKER if queued and concurrency == 1 else 1):
        for lane in range(workers * concurrency):
            feed(lane)
    while in_flight:
        _, result = receive()
        in_flight -= 1
        stopped = stopped or result.stopped is not None
        if result.record is not None:
            feed(lane_of.pop(record_key(result.record)))
        on_result(result)


def run_serial(spec: RunSpec, items: Sequence[WorkItem], on_result: OnResult) -> None:
    """Run every item in this process (``spec.concurrency`` at once, on threads)."""
    import concurrent.futures as cf

    worker = EvalWorker(spec)
    running: set[cf.Future] = set()
    try:
        with cf.ThreadPoolExecutor(spec.concurrency, thread_name_prefix="vlnverse-episode") as pool:

            def submit(_: int, item: WorkItem) -> None:
                running.add(pool.submit(worker.run, item))

            def receive() -> tuple[int, WorkResult]:
                done = next(iter(cf.wait(running, return_when=cf.FIRST_COMPLETED).done))
                running.discard(done)
                return 0, done.result()

            dispatch(items, 1, submit, receive, on_result, concurrency=spec.concurrency, queued=False)
    finally:
        worker.close()


@dataclass
class _Process:
    """One worker process of the local pool: its inbox, its result connection, the items
    sent to it (by key) and when each of them started."""

    process: Any
    inbox: Any
    results: Any
    in_flight: dict[tuple[str, str], WorkItem] = field(default_factory=dict)
    started: dict[tuple[str, str], float] = field(default_factory=dict)


def _start_forkserver(context: Any) -> None:
    """Start the process's forkserver (if it is not running) with the worker module
    preloaded, so each worker starts without importing it, then put the preload list back:
    the caller's later forkserver settings are its own."""
    import multiprocessing.forkserver

    server = multiprocessing.forkserver._forkserver  # the process's one server (no public getter)
    previous = list(getattr(server, "_preload_modules", ["__main__"]))
    context.set_forkserver_preload([*previous, "vlnverse.eval.running.worker"])
    try:
        server.ensure_running()
    finally:
        context.set_forkserver_preload(previous)


class ProcessPool:
    """The local pool: ``workers`` processes, each with its own agent and envs.

    Each process has its own inbox and its own result connection, so results come back one
    episode at a time and a process killed mid-message leaves no shared lock held. An
    episode still running :func:`~vlnverse.eval.running.worker.hard_limit` seconds after it started
    has its process killed and replaced: the new process records it (and any other episode
    of the old one past its time limit) as timed out, without the agent, and runs the other
    items the old one held again. Processes are forked on Linux (no
    re-import, scripts need no ``__main__`` guard) unless this process's llvmpipe runs
    rasterizer threads (then ``forkserver``), and spawned elsewhere
    (:func:`vlnverse.sim.gl.context.start_method`).
    """

    def __init__(self, spec: RunSpec, workers: int) -> None:
        from vlnverse.sim.gl.context import start_method

        self.spec = spec
        self.limit = hard_limit(spec.episode_timeout)
        self.context = multiprocessing.get_context(start_method())
        if self.context.get_start_method() == "forkserver":
            _start_forkserver(self.context)
        self.parent = os.getpid() if self.context.get_start_method() == "fork" else None  # None: the forkserver
        self.workers: list[_Process] = []
        try:
            for worker in range(workers):
                self.workers.append(self._start(worker))
        except BaseException:
            self.stop()
            raise

    def _start(self, worker: int) -> _Process:
        inbox = self.context.Queue()
        results, sender = self.context.Pipe(duplex=False)
        process = self.context.Process(target=run_process_worker, name=f"vlnverse-eval-{worker}",
                                       args=(worker, self.spec, inbox, sender, self.parent))
        process.start()
        sender.close()  # the child's end: its death is then the connection's end
        return _Process(process, inbox, results)

    def submit(self, worker: int, item: WorkItem) -> None:
        self.workers[worker].in_flight[item.key] = item
        self.workers[worker].inbox.put(item)

    def receive(self) -> tuple[int, WorkResult]:
        """The next ``(worker, result)``; raises a worker's error, or a :class:`WorkerError`
        naming the episode a worker process was running when it died (rather than waiting
        for it forever)."""
        from multiprocessing.connection import wait

        while True:
            ready = set(wait([w.results for w in self.workers], timeout=POLL_S))
            for index, worker in enumerate(self.workers):
                if worker.results not in ready:
                    continue
                try:
                    kind, payload = pickle.loads(worker.results.recv_bytes())
                except (EOFError, OSError):
                    raise self._died(worker) from None
                except Exception as exc:  # noqa: BLE001 - what the worker sent cannot be read here
                    raise WorkerError(f"eval worker {worker.process.name} sent what cannot be read: "
                                      f"{type(exc).__name__}: {exc}") from None
                if kind == "started":
                    worker.started[payload] = time.monotonic()
                    continue
                if kind == "error":
                    raise payload
                if payload.record is not None:
                    key = record_key(payload.record)
                    worker.in_flight.pop(key, None)
                    worker.started.pop(key, None)
                return index, payload
            for index, worker in enumerate(self.workers):
                if not ready and not worker.process.is_alive() and not worker.results.poll():
                    raise self._died(worker)
                self._check_limit(index)

    def _check_limit(self, index: int) -> None:
        """Kill and replace worker ``index`` if an episode of it ran past the hard limit."""
        worker = self.workers[index]
        if self.limit is None:
            return
        now = time.monotonic()
        if not any(now - started > self.limit and not worker.in_flight[key].expired
                   for key, started in worker.started.items()):
            return
        # the episodes past their own limit end with the worker; the others it held run again
        expired = [key for key, started in worker.started.items() if now - started > self.spec.episode_timeout]
        others = len(worker.in_flight) - len(expired)
        logger.warning("episode(s) %s ran past the hard time limit (%g s): killing eval worker %s (pid %d) and "
                       "replacing it%s", ", ".join(f"{k[0]} ({k[1]})" for k in expired), self.limit,
                       worker.process.name, worker.process.pid,
                       f"; {others} other episode(s) it held are run again" if others else "")
        self._discard(worker)
        self.workers[index] = self._start(index)
        for key, item in worker.in_flight.items():
            self.submit(index, dataclasses.replace(item, expired=True) if key in expired else item)

    @staticmethod
    def _discard(worker: _Process) -> None:
        worker.process.kill()
        worker.process.join()
        worker.inbox.cancel_join_thread()  # nobody reads it any more: do not wait on it
        worker.inbox.close()
        worker.results.close()

    @staticmethod
    def _died(worker: _Process) -> WorkerError:
        worker.process.join(POLL_S)
        items = list(worker.in_flight.values())
        running = f"episode {items[0].key[0]} ({items[0].key[1]})" if items else "no episode"
        if len(items) > 1:
            running += f" (and {len(items) - 1} more queued or running)"
        return WorkerError(f"eval worker {worker.process.name} (pid {worker.process.pid}) died "
                           f"({describe_exit(worker.process.exitcode)}) while running {running}; "
                           "finished episodes are kept, re-run the command to resume")

    def stop(self) -> None:
        """Ask the worker processes to finish (closing their envs), then kill those still
        running after :data:`STOP_TIMEOUT_S`."""
        for worker in self.workers:
            worker.inbox.put(None)
            worker.inbox.cancel_join_thread()  # a dead worker leaves its inbox unread: do not wait on it
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for worker in self.workers:
            worker.process.join(max(0.0, deadline - time.monotonic()))
        for worker in self.workers:
            if worker.process.is_alive():
                logger.warning("eval worker process %s did not stop; killing it", worker.process.name)
            elif worker.process.exitcode:
                logger.warning("eval worker process %s ended badly (%s) after its work",
                               worker.process.name, describe_exit(worker.process.exitcode))
            self._discard(worker)


def run_local_pool(spec: RunSpec, items: Sequence[WorkItem], on_result: OnResult, workers: int) -> None:
    """Run items on a :class:`ProcessPool` of ``workers`` processes.

    Raises:
        VLNVerseError: a worker's error (e.g. :class:`~vlnverse.errors.SceneError`), or a
            :class:`~vlnverse.errors.WorkerError` naming the episode a dead worker ran.
    """
    pool = ProcessPool(spec, workers)
    try:
        dispatch(items, workers, pool.submit, pool.receive, on_result, concurrency=spec.concurrency)
    finally:
        pool.stop()


def run_ray(spec: RunSpec, items: Sequence[WorkItem], on_result: OnResult, workers: int,
            address: str | None = None, init_kwargs: dict[str, Any] | None = None) -> None:
    """Run items on ``workers`` Ray actors (one agent and env cache each), fed by :func:`dispatch`.

    With an episode time limit each actor holds only the items it runs, and one still
    running :func:`~vlnverse.eval.running.worker.hard_limit` seconds after it was sent has its actor
    killed and replaced (as in :class:`ProcessPool`).

    Args:
        address: Ray cluster address (``"auto"``, ``"ray://host:10001"``); ``None`` starts
            a local Ray instance. An already initialised Ray session is used as it is.
        init_kwargs: More ``ray.init`` arguments (e.g. ``runtime_env``).
    """
    limit = hard_limit(spec.episode_timeout)
    with ray_session(workers, address, init_kwargs) as ray:
        actor_class = ray.remote(num_cpus=1, max_concurrency=spec.concurrency)(EvalWorker)

        def start() -> Any:
            actor = actor_class.remote(spec)
            ray.get(actor.pid.remote())  # built: the time limits count from here
            return actor

        actors = [start() for _ in range(workers)]
        pending: dict[Any, tuple[int, WorkItem, float]] = {}

        def submit(worker: int, item: WorkItem) -> None:
            pending[actors[worker].run.remote(item)] = (worker, item, time.monotonic())

        def receive() -> tuple[int, WorkResult]:
            while True:
                done, _ = ray.wait(list(pending), num_returns=1, timeout=None if limit is None else POLL_S)
                if done:
                    return pending.pop(done[0])[0], ray.get(done[0])
                now = time.monotonic()
                for worker in sorted({w for w, item, sent in pending.values() if now - sent > limit and not item.expired}):
                    held = {ref: (item, now - sent > spec.episode_timeout)
                            for ref, (w, item, sent) in pending.items() if w == worker}
                    logger.warning("an episode ran past the hard time limit (%g s): replacing Ray actor %d",
                                   limit, worker)
                    ray.kill(actors[worker])
                    actors[worker] = start()
                    for ref, (item, late) in held.items():
                        del pending[ref]
                        submit(worker, dataclasses.replace(item, expired=True) if late else item)

        dispatch(items, workers, submit, receive, on_result, concurrency=spec.concurrency, queued=limit is None)
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
    elif (workers == 1 or len(items) <= 1) and not _needs_process(spec):
        run_serial(spec, items, on_result)
    else:
        run_local_pool(spec, items, on_result, min(workers, len(items)))


def _needs_process(spec: RunSpec) -> bool:
    """Whether one worker runs in a process of its own: with an episode time limit, so that
    an episode that does not stop can be killed; unless its agent object cannot be sent to
    one (a process not forked needs it pickled), which then runs here under the cooperative
    limit alone (an agent that never returns is not stopped)."""
    if spec.episode_timeout is None:
        return False
    from vlnverse.sim.gl.context import start_method

    if start_method() == "fork":
        return True
    try:
        pickle.dumps(spec)
    except Exception as exc:  # noqa: BLE001 - any pickling failure
        logger.warning("the agent cannot be sent to a worker process (%s: %s); it runs in this process, where an "
                       "episode whose agent never returns cannot be stopped", type(exc).__name__, exc)
        return False
    return True
