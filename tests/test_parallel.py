"""vlnverse.parallel: units on a local pool, with worker processes replaced after N units, and
units a crashed worker left unfinished run again."""

from __future__ import annotations

import faulthandler
import logging
import multiprocessing
import os
import signal

import pytest

from vlnverse.errors import WorkerError
from vlnverse.parallel import WORKER_RETRIES, pooled, run_units


def _pid(_: int) -> int:
    return os.getpid()


def test_workers_are_replaced_after_their_units():
    results = list(run_units(_pid, list(range(6)), workers=2, units_per_process=1))
    assert sorted(r.index for r in results) == list(range(6))
    pids = {r.value for r in results}
    assert len(pids) >= 3 and os.getpid() not in pids  # fresh processes for every 2 units
    assert all(r.worker == f"{r.value}@{os.uname().nodename}" and r.peak_rss_mb > 0 for r in results)
    assert len({r.value for r in run_units(_pid, list(range(6)), workers=2)}) <= 2


def _crash_once(marker: str) -> str:
    """Kill this worker with SIGSEGV the first time a unit runs with ``marker`` (the file is made
    first, so the rerun succeeds), as a renderer's native crash would."""
    if marker.endswith("crash") and not os.path.exists(marker):
        open(marker, "w").close()
        _segfault()
    return marker


def _always_crash(marker: str) -> str:
    _segfault()
    return marker


def _segfault() -> None:
    faulthandler.disable()  # pytest's handler would print the worker's stack
    os.kill(os.getpid(), signal.SIGSEGV)


def test_units_a_crashed_worker_left_run_again_in_a_fresh_pool(tmp_path, caplog):
    units = [str(tmp_path / "a"), str(tmp_path / "b-crash"), str(tmp_path / "c")]
    with caplog.at_level(logging.WARNING, logger="vlnverse.parallel"):
        results = list(run_units(_crash_once, units, workers=2))
    assert sorted(r.value for r in results) == sorted(units)  # every unit once, none twice
    assert "running them again in a fresh pool (retry 1 of 3)" in caplog.text


def test_a_unit_that_always_kills_its_worker_ends_in_a_worker_error(tmp_path):
    context = multiprocessing.get_context("fork")
    with pytest.raises(WorkerError, match=rf"died while running unit x \({WORKER_RETRIES + 1} tries\)"):
        list(pooled(_always_crash, ["x"], workers=2, context=context, describe=lambda arg: f"unit {arg}"))
