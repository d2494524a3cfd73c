"""The disk cache of derived scene data: hits, misses, invalidation and failure modes."""

from __future__ import annotations

import functools
import os
import sqlite3
import subprocess
import sys
import threading

import numpy as np
import pytest

import vlnverse
from vlnverse import cache
from vlnverse.scene import loading
from vlnverse.scene.loading import scene_with_occupancy
from vlnverse.sim.backends import bullet_scene

from .sim.usd_room import write_room_usd


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(folder))
    cache.clear_memory()
    yield folder
    cache.clear_memory()


class Counter:
    def __init__(self, value):
        self.value, self.calls = value, 0

    def __call__(self):
        self.calls += 1
        return self.value


def test_a_value_is_built_once_per_key_and_read_back_equal(cache_dir):
    build = Counter({"grid": np.arange(6).reshape(2, 3)})
    first = cache.cached("test", ("a", 1), build)
    second = cache.cached("test", ("a", 1), build)
    assert build.calls == 1
    assert second is not first and np.array_equal(second["grid"], first["grid"])
    cache.cached("test", ("a", 2), build)
    cache.cached("other", ("a", 1), build)
    assert build.calls == 3
    assert (cache_dir / "cache.db").is_file()


def test_a_stale_entry_or_other_code_is_rebuilt(cache_dir, monkeypatch):
    build = Counter([1, 2, 3])
    cache.cached("test", ("k",), build)
    assert cache.cached("test", ("k",), build, fresh=lambda value: value == [1, 2, 3]) == [1, 2, 3]
    assert build.calls == 1
    build.value = [4]
    assert cache.cached("test", ("k",), build, fresh=lambda value: False) == [4]
    assert build.calls == 2
    monkeypatch.setattr(cache, "code_digest", lambda: "another version of the code")
    assert cache.cached("test", ("k",), build) == [4]
    assert build.calls == 3


class Vanishing:
    """A value whose class is gone when it is read back (as after a refactoring)."""


def test_an_unreadable_entry_is_rebuilt(cache_dir, monkeypatch):
    cache.cached("test", ("gone",), Vanishing)
    monkeypatch.delattr(sys.modules[__name__], "Vanishing")
    assert cache.cached("test", ("gone",), lambda: "rebuilt") == "rebuilt"


@pytest.mark.parametrize("setting", ["off", "", "none"])
def test_the_cache_can_be_turned_off(tmp_path, monkeypatch, setting):
    monkeypatch.setenv(cache.CACHE_DIR_ENV, setting)
    build = Counter(7)
    assert cache.cached("test", ("x",), build) == cache.cached("test", ("x",), build) == 7
    assert build.calls == 2 and cache.cache_directory() is None


def test_a_folder_that_cannot_be_a_cache_only_costs_speed(tmp_path, monkeypatch, caplog):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(blocker / "cache"))
    build = Counter(7)
    assert cache.cached("test", ("x",), build) == cache.cached("test", ("x",), build) == 7
    assert build.calls == 2
    assert "disk cache disabled" in caplog.text
    assert blocker.read_text() == "not a folder"


def test_a_locked_store_is_given_up_after_the_lock_timeout(cache_dir, monkeypatch):
    monkeypatch.setattr(cache, "LOCK_TIMEOUT_S", 0.2)
    cache.cached("test", ("warm",), lambda: 1)  # opens the store with that timeout
    blocker = sqlite3.connect(cache_dir / "cache.db", isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")  # as another process stuck holding the lock
    results = []
    try:
        worker = threading.Thread(target=lambda: results.append(cache.cached("test", ("x",), lambda: "built")))
        worker.start()
        worker.join(60)  # the lock is never released while it waits: only giving up ends it
        assert results == ["built"]
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()


def test_the_default_folder_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv(cache.CACHE_DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.cache_directory() == tmp_path / "vlnverse"


def test_a_scene_file_is_read_from_the_cache_until_it_changes(cache_dir, tmp_path, monkeypatch):
    path = write_room_usd(tmp_path / "room.usda")
    scene, occupancy = scene_with_occupancy(path)
    assert scene.sources == (str(path.resolve()),)
    cache.clear_memory()

    def parse_forbidden(_path):
        raise AssertionError("the scene was parsed again")

    monkeypatch.setattr(loading, "load_scene", parse_forbidden)
    cached_scene, cached_occupancy = scene_with_occupancy(path)
    assert np.array_equal(cached_scene.triangles, scene.triangles)
    assert [o.object_id for o in cached_scene.objects] == [o.object_id for o in scene.objects]
    assert np.array_equal(cached_occupancy.navigable, occupancy.navigable)
    assert cached_occupancy.origin == pytest.approx(occupancy.origin)
    monkeypatch.undo()
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(cache_dir))

    path.write_text(path.read_text().replace("living_room", "kitchen"))
    cache.clear_memory()
    edited, _ = scene_with_occupancy(path)
    assert [r.room_type for r in edited.rooms] == ["kitchen"]


def test_editing_a_sublayer_invalidates_the_scene_that_composes_it(cache_dir, tmp_path):
    write_room_usd(tmp_path / "room.usda")
    root = tmp_path / "root.usda"
    root.write_text('#usda 1.0\n(\n    metersPerUnit = 1\n    upAxis = "Z"\n    subLayers = [@./room.usda@]\n)\n')
    scene, _ = scene_with_occupancy(root)
    assert set(scene.sources) == {str(root.resolve()), str((tmp_path / "room.usda").resolve())}
    assert [r.room_type for r in scene.rooms] == ["living_room"]
    sublayer = tmp_path / "room.usda"
    sublayer.write_text(sublayer.read_text().replace("living_room", "kitchen"))
    assert [r.room_type for r in scene_with_occupancy(root)[0].rooms] == ["kitchen"]  # this process
    cache.clear_memory()
    assert [r.room_type for r in scene_with_occupancy(root)[0].rooms] == ["kitchen"]  # the disk cache


def test_another_process_reads_what_this_one_prepared(cache_dir, tmp_path):
    path = write_room_usd(tmp_path / "room.usda")
    scene_with_occupancy(path)
    probe = (
        "import sys\n"
        "from vlnverse.scene import loading\n"
        "def refuse(path): raise SystemExit('parsed again')\n"
        "loading.load_scene = refuse\n"
        "scene, occupancy = loading.scene_with_occupancy(sys.argv[1])\n"
        "print(len(scene.triangles), int(occupancy.navigable.sum()))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True,
                            env={**os.environ, cache.CACHE_DIR_ENV: str(cache_dir)}, timeout=120)
    assert result.returncode == 0, result.stderr
    scene, occupancy = scene_with_occupancy(path)
    assert result.stdout.split() == [str(len(scene.triangles)), str(int(occupancy.navigable.sum()))]


def test_a_world_from_a_cached_plan_moves_exactly_like_a_fresh_one(cache_dir, tmp_path, monkeypatch):
    path = write_room_usd(tmp_path / "room.usda")

    def walk() -> list[tuple]:
        env = vlnverse.make(scene=str(path), sensors=(), physics="strict", start=(1.0, 2.0, 0.0), goal=(1.0, 3.0))
        env.reset(seed=0)
        poses = []
        for action in [1] * 12 + [2] * 3 + [1] * 6:
            _, _, terminated, truncated, info = env.step(action)
            poses.append((tuple(info["pose"]), tuple(info["contacts"])))
            if terminated or truncated:
                break
        env.close()
        return poses

    fresh = walk()
    cache.clear_memory()  # the next world's plan comes from the disk: it is not planned again

    def plan_forbidden(*_args):
        raise AssertionError("the world was planned again")

    monkeypatch.setattr(bullet_scene, "world_plan", plan_forbidden)
    assert walk() == fresh
    assert any(contacts for _, contacts in fresh)  # the walk did touch something


def test_a_process_memo_keeps_the_most_recent_keys_until_cleared():
    memo = cache.ProcessMemo(2)
    build = Counter("value")
    for key in ("a", "b", "a", "c", "a"):  # "b" is the least recently used when "c" arrives
        memo.get(key, build)
    assert build.calls == 3
    memo.get("b", build)
    assert build.calls == 4
    cache.clear_memory()
    memo.get("a", build)
    assert build.calls == 5


def test_the_store_keeps_to_its_size_limit_by_evicting_the_least_recently_used(cache_dir, monkeypatch):
    monkeypatch.setattr(cache, "SIZE_LIMIT", 400_000)  # before the store is opened: four 100 kB values
    rng = np.random.default_rng(0)
    values = {name: rng.bytes(100_000) for name in "abcdefgh"}
    builds = []

    def get(name):
        return cache.cached("big", (name,), lambda: builds.append(name) or values[name])

    for name in "abcd":
        get(name)
    get("a")  # "a" is now used more recently than "b"
    for name in "efgh":
        get(name)
    assert cache._store().volume() <= 2 * cache.SIZE_LIMIT  # culled on writes, a little at a time
    builds.clear()
    assert get("h") == values["h"] and builds == []  # the newest stays
    assert get("b") == values["b"] and builds == ["b"]  # the least recently used was evicted


def test_the_code_digest_follows_the_package_sources(cache_dir, tmp_path, monkeypatch):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "cache.py").write_text("A = 1\n")
    (package / "sub" / "mod.py").write_text("B = 2\n")
    monkeypatch.setattr(cache, "__file__", str(package / "cache.py"))

    def digest():
        cache.code_digest.cache_clear()
        return cache.code_digest()

    monkeypatch.setattr(cache, "code_digest", functools.lru_cache(maxsize=1)(cache.code_digest.__wrapped__))
    first = digest()
    assert digest() == first
    (package / "notes.txt").write_text("not code")
    assert digest() == first
    build = Counter("v1")
    assert cache.cached("test", ("k",), build) == "v1"
    (package / "sub" / "mod.py").write_text("B = 3\n")  # an edit of any module: the entries of the old code are stale
    assert digest() != first
    build.value = "v2"
    assert cache.cached("test", ("k",), build) == "v2" and build.calls == 2
    (package / "sub" / "mod.py").write_text("B = 2\n")
    assert digest() == first
    (package / "sub" / "new.py").write_text("")
    assert digest() != first
