"""A worker running episodes at once takes its env lock for env work only (not to look up a
scene map it wrote or to put an env back), and each episode's timing says where it waited."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from vlnverse.eval.harness import plan_items, select_episodes
from vlnverse.eval.runner import EpisodeTiming, _held
from vlnverse.eval.worker import EvalWorker, RunSpec
from vlnverse.tasks.dataset import EpisodeDataset


class CountingLock:
    """A lock that counts how often it was taken."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.taken = 0

    def __enter__(self) -> None:
        self._lock.acquire()
        self.taken += 1

    def __exit__(self, *exc) -> None:
        self._lock.release()


def test_an_env_reused_for_a_scene_already_mapped_takes_the_lock_for_reset_and_steps_only(bundled_dataset,
                                                                                            tmp_path: Path):
    dataset = EpisodeDataset.open(bundled_dataset)
    items = plan_items(dataset, select_episodes(dataset, "all", "coarse", None, 0), ("tel_hop",), 0)
    first = items[0]
    same = [i for i in items if (i.scene_file, i.task) == (first.scene_file, first.task)]
    assert len(same) == 2
    worker = EvalWorker(RunSpec(agent="forward", max_steps=4, viewer_dir=str(tmp_path / "viewer")))
    try:
        worker.env_lock = lock = CountingLock()
        taken, results = [], []
        for item in same:
            before = lock.taken
            results.append(worker.run(item))
            taken.append(lock.taken - before)
    finally:
        worker.close()
    steps = [len(r.record["actions"]) for r in results]
    assert taken[0] == 1 + 1 + 1 + steps[0]  # build, scene map, reset, steps
    assert taken[1] == 1 + steps[1]  # the same env again: reset and steps
    assert (tmp_path / "viewer" / "maps").is_dir()
    assert results[0].timing.build > results[1].timing.build >= 0.0
    assert all(r.timing.waited >= 0.0 and r.timing.total >= r.timing.env + r.timing.waited for r in results)


class AnnouncingLock:
    """A lock that says when someone starts waiting for it."""

    def __init__(self) -> None:
        self.lock, self.waiting = threading.Lock(), threading.Event()

    def __enter__(self) -> None:
        self.waiting.set()
        self.lock.acquire()

    def __exit__(self, *exc) -> None:
        self.lock.release()


def test_the_wait_for_a_lock_held_elsewhere_is_counted():
    held, timing = AnnouncingLock(), EpisodeTiming()
    held.lock.acquire()

    def release_later() -> None:
        held.waiting.wait()
        time.sleep(0.2)
        held.lock.release()

    threading.Thread(target=release_later, daemon=True).start()
    with _held(held, timing):
        pass
    first = timing.waited
    assert first >= 0.2
    with _held(held, timing):  # free: next to nothing more
        pass
    assert timing.waited - first < first
