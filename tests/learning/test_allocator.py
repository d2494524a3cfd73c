"""A training process keeps its freed memory for the next step: tensors of the size of a
step's activations no longer come back as fresh pages that fault in one by one."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

#: Ten 10 MB blocks allocated, written and freed, five times over (a step's tensors), then
#: the page faults that took; once with glibc's defaults, once after keep_freed_memory().
CHURN = """
import resource, sys
import numpy as np

def churn():
    start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(5):
        blocks = [np.ones(10 << 20, dtype=np.uint8) for _ in range(10)]
        del blocks
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - start

churn()
default = churn()
from vlnverse.learning.allocator import keep_freed_memory
kept_on = keep_freed_memory()
churn()
print(kept_on, default, churn())
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_freed_blocks_are_reused_without_page_faults():
    done = subprocess.run([sys.executable, "-c", CHURN], capture_output=True, text=True, check=True)
    kept_on, default, kept = done.stdout.split()
    assert kept_on == "True"
    assert int(default) > 10_000  # the defaults hand the blocks back and fault them in again
    assert int(kept) < int(default) / 20
