"""vlnverse.parallel: units on a local pool, with worker processes replaced after N units."""

from __future__ import annotations

import os

from vlnverse.parallel import run_units


def _pid(_: int) -> int:
    return os.getpid()


def test_workers_are_replaced_after_their_units():
    results = list(run_units(_pid, list(range(6)), workers=2, units_per_process=1))
    assert sorted(r.index for r in results) == list(range(6))
    pids = {r.value for r in results}
    assert len(pids) >= 3 and os.getpid() not in pids  # fresh processes for every 2 units
    assert all(r.worker == f"{r.value}@{os.uname().nodename}" and r.peak_rss_mb > 0 for r in results)
    assert len({r.value for r in run_units(_pid, list(range(6)), workers=2)}) <= 2
