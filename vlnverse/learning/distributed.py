"""Data-parallel training across processes (DistributedDataParallel).

``vlnverse train cma --procs N ...`` runs N processes on this machine: :func:`spawn_ranks`
keeps rank 0 in the calling process and spawns the others, joined through a store on
127.0.0.1. ``torchrun --nproc_per_node N -m vlnverse train cma ...`` starts them itself (and
across machines); each finds its place in ``RANK``/``WORLD_SIZE``/``LOCAL_RANK``.
:func:`process_group` joins them (NCCL on CUDA, one GPU per process, ``cuda:LOCAL_RANK``;
gloo on CPU). Otherwise training runs in one process.

The batch size stays the *global* batch (the paper's "total effective batch size"): every
process draws the same seeded permutation (:class:`GlobalBatches`), cuts it into global
batches and takes its share of each, and the loss is divided by the global weight sum, so
the averaged gradient is the one-process gradient of the same batch. Given the episodes'
lengths, a batch is shared out so that the processes' frames are about even (longest first,
each to the process with the fewest so far): the processes meet at every step's gradient
all-reduce, so the one with the most frames sets the pace. A global batch with
fewer episodes than processes (the epoch's last) gives the processes left without one a
*ghost*: an episode of the batch again, with no weight (:func:`ghost`, :func:`is_ghost`),
so every process steps and the gradient is still the one-process one.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from vlnverse.errors import ConfigError, VLNVerseError
from vlnverse.learning.torch_support import require_torch, resolve_device

#: How long the other processes wait at a barrier while rank 0 works alone: pre-rendering the
#: split (hours at the paper's scale), validating an epoch, a DAgger walk. torch's defaults
#: (10 min for NCCL, 30 for gloo) would abort the job during them.
RANK_ZERO_WORK = timedelta(hours=48)


@dataclass(frozen=True)
class Group:
    """This process's place in the group (``world == 1``: no group)."""

    rank: int = 0
    world: int = 1

    @property
    def main(self) -> bool:
        """Whether this process writes the run's files (rank 0)."""
        return self.rank == 0

    def barrier(self) -> None:
        if self.world > 1:
            require_torch().distributed.barrier()

    def sum(self, values: list[float]) -> list[float]:
        """Element-wise sum over the processes."""
        if self.world == 1:
            return values
        torch = require_torch()
        tensor = torch.tensor(values, dtype=torch.float64)
        torch.distributed.all_reduce(tensor)
        return tensor.tolist()

    def wrap(self, module: Any, device: Any) -> Any:
        """``module`` in DistributedDataParallel (as it is in one process)."""
        if self.world == 1:
            return module
        import warnings

        # a one-channel convolution's weight gradient comes in another (equivalent) stride
        # order than DDP's bucket: a copy of a few hundred floats, warned about every step
        warnings.filterwarnings("ignore", message="Grad strides do not match bucket view strides")
        parallel = require_torch().nn.parallel.DistributedDataParallel
        return parallel(module, device_ids=[device.index] if device.type == "cuda" else None)


@dataclass(frozen=True)
class Place:
    """A process's place in a group that :func:`spawn_ranks` started (``store``: the group's
    ``TCPStore``), instead of torchrun's environment variables."""

    rank: int
    world: int
    store: Any


def launched_by_torchrun() -> bool:
    return "WORLD_SIZE" in os.environ


def local_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@contextlib.contextmanager
def process_group(device_name: str, place: Place | None = None) -> Iterator[tuple[Group, Any]]:
    """This process's :class:`Group` and torch device; joins (and leaves) the process group
    of ``place``, or of torchrun's variables when ``WORLD_SIZE`` > 1.

    Raises:
        ConfigError: ``cuda`` asked for with fewer GPUs than local processes.
    """
    world = place.world if place else int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        yield Group(), resolve_device(device_name)
        return
    torch = require_torch()
    if place:
        rank = local = place.rank
    else:
        rank, local = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    device = resolve_device(device_name)
    if device.type == "cuda":
        if local >= torch.cuda.device_count():
            raise ConfigError(f"process {local} of this node has no GPU ({torch.cuda.device_count()} visible)")
        device = torch.device("cuda", local)
        torch.cuda.set_device(device)
    torch.distributed.init_process_group("nccl" if device.type == "cuda" else "gloo", rank=rank, world_size=world,
                                         timeout=RANK_ZERO_WORK, store=place.store if place else None)
    try:
        yield Group(rank, world), device
    finally:
        torch.distributed.destroy_process_group()


def spawn_ranks(procs: int, threads: int, target: Callable[..., Any], *args: Any, **main_only: Any) -> Any:
    """``target(*args, place, **main_only)`` as rank 0 of ``procs`` processes, in this one,
    and ``target(*args, place)`` as ranks 1.. in spawned ones (``target`` importable, ``args``
    picklable), each on ``threads`` torch threads; rank 0's result.

    A spawned rank that dies while this one runs on ends this process too (an ``error:``
    line, exit status 1) unless this one fails by itself within :data:`GRACE_S`: it may be
    waiting for the dead one in the group's rendezvous or a barrier, which would last the
    48 h timeout.

    Raises:
        RuntimeError: a spawned rank failed (its traceback is on stderr); an error of the
            project's own (bad input, which every rank meets) is rank 0's to raise, in one line.
    """
    torch = require_torch()
    store = torch.distributed.TCPStore("127.0.0.1", 0, procs, is_master=True, timeout=RANK_ZERO_WORK,
                                       wait_for_workers=False)
    context = multiprocessing.get_context("spawn")
    others = [context.Process(target=_spawned_rank, args=(Place(rank, procs, None), store.port, threads, target, args),
                              name=f"vlnverse-rank-{rank}") for rank in range(1, procs)]
    for process in others:
        process.start()
    done = threading.Event()
    threading.Thread(target=_watch, args=(others, done), name="vlnverse-rank-watch", daemon=True).start()
    try:
        result = target(*args, Place(0, procs, store), **main_only)
    except BaseException as exc:
        done.set()
        for process in others:  # they would wait for rank 0 (or have failed, which is what rank 0 saw)
            process.join(1)
            if process.exitcode is None:
                process.terminate()
                process.join()
        failed = "" if isinstance(exc, VLNVerseError) else _failed(others)
        if failed:
            raise RuntimeError(failed) from exc
        raise
    done.set()
    for process in others:
        process.join()
    failed = _failed(others)
    if failed:
        raise RuntimeError(failed)
    return result


#: The exit status of a spawned rank stopped by an error of the project's own (rank 0 reports it).
INPUT_ERROR = 3
#: Seconds rank 0 is given to fail by itself after a spawned rank died.
GRACE_S = 10.0


def _watch(others: list[Any], done: threading.Event) -> None:
    """:func:`spawn_ranks`' watch over the spawned ranks while rank 0 runs."""
    while not done.wait(1.0):
        dead = [p for p in others if p.exitcode not in (None, 0)]
        if dead and not done.wait(GRACE_S):
            names = ", ".join(f"{p.name} (exit status {p.exitcode})" for p in dead)
            sys.stderr.write(f"error: training process {names} ended while the others waited for it; "
                             "its error is above\n")
            sys.stderr.flush()
            os._exit(1)


def _failed(processes: list[Any]) -> str:
    """Which spawned ranks failed by themselves ('' if none did)."""
    names = [p.name for p in processes if p.exitcode not in (0, -15)]
    return f"training process(es) {', '.join(names)} failed (traceback above)" if names else ""


def _spawned_rank(place: Place, port: int, threads: int, target: Callable[..., Any], args: tuple[Any, ...]) -> None:
    from vlnverse.learning.allocator import keep_freed_memory

    torch = require_torch()
    torch.set_num_threads(threads)
    keep_freed_memory()  # a process of our own: its training steps reuse freed memory (see the module)
    store = torch.distributed.TCPStore("127.0.0.1", port, place.world, is_master=False, timeout=RANK_ZERO_WORK)
    try:
        target(*args, Place(place.rank, place.world, store))
    except VLNVerseError:
        raise SystemExit(INPUT_ERROR) from None


#: Added to a dataset index to mark a ghost (the index of an episode repeated with no weight).
GHOST = 1 << 40


def ghost(index: int) -> int:
    return index + GHOST


def is_ghost(index: int) -> bool:
    return index >= GHOST


def shares(batch: list[int], lengths: list[int] | None, world: int) -> list[list[int]]:
    """``batch`` cut into ``world`` shares: ``rank::world`` without ``lengths``, else longest
    first, each episode to the share with the fewest frames so far (the lowest rank on ties);
    every share in batch order."""
    if lengths is None:
        return [batch[rank::world] for rank in range(world)]
    loads, out = [0] * world, [[] for _ in range(world)]
    for position in sorted(range(len(batch)), key=lambda i: -lengths[batch[i]]):
        rank = loads.index(min(loads))
        loads[rank] += lengths[batch[position]]
        out[rank].append(position)
    return [[batch[i] for i in sorted(share)] for share in out]


class GlobalBatches:
    """Batch sampler: this process's share (:func:`shares`) of each global batch of a seeded
    permutation (the same permutation in every process); an empty share is a ghost of the
    batch's first episode."""

    def __init__(self, size: int, batch_size: int, seed: int, group: Group, lengths: list[int] | None = None) -> None:
        if batch_size < group.world:
            raise ConfigError(f"batch size {batch_size} is smaller than the {group.world} training processes")
        self.size, self.batch_size, self.seed, self.group, self.lengths = size, batch_size, seed, group, lengths

    def __iter__(self) -> Iterator[list[int]]:
        torch = require_torch()
        order = torch.randperm(self.size, generator=torch.Generator().manual_seed(self.seed)).tolist()
        for start in range(0, len(self) * self.batch_size, self.batch_size):
            batch = order[start:start + self.batch_size]
            yield shares(batch, self.lengths, self.group.world)[self.group.rank] or [ghost(batch[0])]

    def __len__(self) -> int:
        """Global batches: as in one process."""
        return -(-self.size // self.batch_size)
