"""Data-parallel training across processes (``torchrun``, DistributedDataParallel).

``torchrun --nproc_per_node N -m vlnverse train cma ...`` starts N processes; each finds
its place in ``RANK``/``WORLD_SIZE``/``LOCAL_RANK`` and :func:`process_group` joins them
(NCCL on CUDA, one GPU per process, ``cuda:LOCAL_RANK``; gloo on CPU). Without those
variables training runs in one process as before.

The batch size stays the *global* batch (the paper's "total effective batch size"): every
process draws the same seeded permutation (:class:`GlobalBatches`), cuts it into global
batches and takes its share of each, and the loss is divided by the global weight sum, so
the averaged gradient is the one-process gradient of the same batch.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from vlnverse.errors import ConfigError
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
        parallel = require_torch().nn.parallel.DistributedDataParallel
        return parallel(module, device_ids=[device.index] if device.type == "cuda" else None)


@contextlib.contextmanager
def process_group(device_name: str) -> Iterator[tuple[Group, Any]]:
    """This process's :class:`Group` and torch device; joins (and leaves) the process group
    when ``WORLD_SIZE`` > 1.

    Raises:
        ConfigError: ``cuda`` asked for with fewer GPUs than local processes.
    """
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        yield Group(), resolve_device(device_name)
        return
    torch = require_torch()
    rank, local = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    device = resolve_device(device_name)
    if device.type == "cuda":
        if local >= torch.cuda.device_count():
            raise ConfigError(f"process {local} of this node has no GPU ({torch.cuda.device_count()} visible)")
        device = torch.device("cuda", local)
        torch.cuda.set_device(device)
    torch.distributed.init_process_group("nccl" if device.type == "cuda" else "gloo", rank=rank, world_size=world,
                                         timeout=RANK_ZERO_WORK)
    try:
        yield Group(rank, world), device
    finally:
        torch.distributed.destroy_process_group()


class GlobalBatches:
    """Batch sampler: this process's share (``rank::world``) of each global batch of a
    seeded permutation (the same permutation in every process)."""

    def __init__(self, size: int, batch_size: int, seed: int, group: Group) -> None:
        if batch_size < group.world:
            raise ConfigError(f"batch size {batch_size} is smaller than the {group.world} training processes")
        self.size, self.batch_size, self.seed, self.group = size, batch_size, seed, group

    def __iter__(self) -> Iterator[list[int]]:
        torch = require_torch()
        order = torch.randperm(self.size, generator=torch.Generator().manual_seed(self.seed)).tolist()
        for start in range(0, len(self) * self.batch_size, self.batch_size):
            yield order[start:start + self.batch_size][self.group.rank::self.group.world]

    def __len__(self) -> int:
        """Global batches; with several processes a last one too small to give each process
        an episode is left out (every process must take the same number of steps)."""
        full, rest = divmod(self.size, self.batch_size)
        return full + (rest >= self.group.world)
