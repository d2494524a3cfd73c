"""Keeping a training process's freed memory for its next step (glibc's ``malloc``).

A training step allocates and frees the same large tensors every time: activations and
their gradients of a few MB each on the ``cpu`` preset's batches. With glibc's defaults such
blocks are mapped from the kernel when allocated and unmapped when freed (or the heap's free
top is trimmed), so the next step touches fresh zeroed pages and takes a page fault for each
4 KB of them: elementwise kernels such as ReLU's backward then run several times slower than
on memory already mapped. :func:`keep_freed_memory` raises both thresholds, so the blocks
stay in the heap and are reused. It changes no computation, only where memory comes from; a
process keeps its peak heap (what one step needs) instead of handing it back between steps.

It is a setting of the whole process, so only processes vlnverse owns make it: the
``vlnverse train`` command and the training ranks it spawns, never a caller of
:func:`~vlnverse.learning.imitation.train_imitation`, whose process keeps glibc's defaults.
"""

from __future__ import annotations

import ctypes
import logging

logger = logging.getLogger(__name__)

#: ``mallopt`` parameters (``<malloc.h>``).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
#: Blocks up to this size come from the heap (glibc's largest mmap threshold on 64 bits).
MMAP_THRESHOLD = 32 << 20
#: Free memory at the heap's top kept rather than returned to the kernel.
TRIM_THRESHOLD = 1 << 30


def keep_freed_memory() -> bool:
    """Make this process's ``malloc`` keep and reuse freed blocks up to
    :data:`MMAP_THRESHOLD` (False, and nothing changed, where the C library has no
    ``mallopt``, as off glibc)."""
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        logger.debug("no glibc mallopt here: the allocator keeps its defaults")
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
