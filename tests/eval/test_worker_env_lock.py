"""A worker running episodes at once takes its env lock for env work only (not to write a
scene map or to put an env back), and each episode's timing says where it waited; the scene
maps are written on a thread of their own once no episode is starting."""

from __future__ import annotations

import pickle
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from vlnverse.eval.reporting.viewer_map import SceneMapWriter, map_paths
from vlnverse.eval.running.harness import plan_items, select_episodes
from vlnverse.eval.running.runner import EpisodeTiming, _held
from vlnverse.eval.running.worker import EvalWorker, RunSpec
from vlnverse.scene.bev import BLOCKED_RGB, map_image
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


def test_an_episode_takes_the_env_lock_to_build_reset_and_step_only(bundled_dataset, tmp_path: Path):
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
    assert taken[0] == 1 + 1 + steps[0]  # build, reset, steps
    assert taken[1] == 1 + steps[1]  # the same env again: reset and steps
    assert sorted(p.name for p in (tmp_path / "viewer" / "maps").iterdir()) == [
        f"{first.episode['scene_id']}.json", f"{first.episode['scene_id']}.png"]
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



@pytest.fixture
def env(bundled_dataset):
    """An env of the bundled dataset's first episode (its scene and occupancy map)."""
    dataset = EpisodeDataset.open(bundled_dataset)
    item = plan_items(dataset, select_episodes(dataset, "all", "coarse", None, 0), ("tel_hop",), 0)[0]
    worker = EvalWorker(RunSpec(agent="forward", max_steps=4))
    try:
        env, _ = worker._take_env(item)
    finally:
        worker.close()
    yield env
    env.close()


def test_scene_maps_wait_until_no_episode_is_starting_and_are_written_once(env, tmp_path: Path):
    picture, description = map_paths(tmp_path, "here")
    maps = SceneMapWriter(tmp_path)
    try:
        with maps.starting():
            with maps.starting():
                maps.add("here", env.scene, env.occupancy)
            time.sleep(0.5)
            assert not picture.exists()  # one episode is still starting
        deadline = time.monotonic() + 30.0
        while not description.is_file() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert description.is_file() and picture.is_file()
        description.unlink()
        maps.add("here", env.scene, env.occupancy)  # asked before: not written again
    finally:
        maps.close()
    assert not description.exists()


def test_closing_the_scene_map_writer_writes_what_is_queued(env, tmp_path: Path):
    maps = SceneMapWriter(tmp_path)
    with maps.starting():
        maps.add("here", env.scene, env.occupancy)
        maps.close()  # an episode is starting, yet the map is written before the worker ends
        assert all(path.is_file() for path in map_paths(tmp_path, "here"))


def test_a_scene_map_is_a_picture_of_the_grid_drawn_without_matplotlib(env, tmp_path: Path):
    """The map's pixels are the occupancy grid's (free floor light, walls dark, rooms tinted),
    and drawing it imports no matplotlib (each eval worker draws its scenes' maps)."""
    script = ("import sys, pickle; from vlnverse.eval.reporting.viewer_map import write_scene_map; "
              "scene, grid = pickle.load(sys.stdin.buffer); write_scene_map(sys.argv[1], 'here', scene, grid); "
              "print(sorted(m for m in sys.modules if m.startswith('matplotlib')))")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], input=pickle.dumps((env.scene, env.occupancy)),
                          capture_output=True, check=True)
    assert done.stdout.decode().strip() == "[]"
    picture, _ = map_paths(tmp_path, "here")
    pixels = np.asarray(Image.open(picture).convert("RGB"))
    assert pixels.shape[:2] == env.occupancy.shape
    expected = (np.flipud(map_image(env.occupancy)) * 255).astype(np.uint8)
    assert np.array_equal(pixels, expected)
    assert (pixels == (np.array(BLOCKED_RGB) * 255).astype(np.uint8)).all(-1).any()  # walls drawn
    tinted = expected[np.flipud(env.occupancy.navigable & (env.occupancy.room_map >= 0))]
    assert len({tuple(p) for p in tinted}) >= min(2, len(env.occupancy.rooms))  # rooms apart in colour
