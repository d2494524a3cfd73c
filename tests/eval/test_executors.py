"""Executor plumbing: the affinity scheduler, the local pool's error handling, argument checks."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

from vlnverse.errors import ConfigError, SceneError, WorkerError
from vlnverse.eval.agent import Agent
from vlnverse.eval.running.executors import AffinityScheduler, dispatch, run_items
from vlnverse.eval.running.runner import EpisodeTiming
from vlnverse.eval.running.worker import RunSpec, WorkItem, WorkResult


def items(groups):
    return [WorkItem({"episode_id": f"{scene}-{physics}-{i}"}, physics, scene)
            for scene, physics, n in groups for i in range(n)]


def group(item):
    return item.scene_file, item.physics


def take(scheduler, worker, n):
    return [scheduler.next_for(worker) for _ in range(n)]


def test_workers_start_on_different_scenes_and_keep_to_their_group():
    work = items([("a", "strict", 3), ("a", "tel_hop", 3), ("b", "strict", 3), ("b", "tel_hop", 3)])
    scheduler = AffinityScheduler(work)
    assert group(scheduler.next_for(0)) == ("a", "strict")
    assert group(scheduler.next_for(1)) == ("b", "strict")  # a's other group: its scene is on worker 0
    assert take(scheduler, 0, 2) == work[1:3]  # in the given order
    assert take(scheduler, 1, 2) == work[7:9]


def test_a_worker_prefers_the_other_physics_mode_of_a_scene_it_loaded():
    work = items([("a", "strict", 2), ("b", "strict", 2), ("a", "tel_hop", 1), ("c", "strict", 5)])
    scheduler = AffinityScheduler(work)
    assert group(scheduler.next_for(0)) == ("c", "strict")  # the largest group first
    assert group(scheduler.next_for(1)) == ("a", "strict")
    scheduler.next_for(1)
    assert group(scheduler.next_for(1)) == ("a", "tel_hop")  # not the larger ("b", "strict")


def test_the_tail_is_shared_with_the_largest_remaining_group():
    work = items([("a", "strict", 1), ("b", "strict", 5), ("c", "strict", 3)])
    scheduler = AffinityScheduler(work)
    assert [group(scheduler.next_for(w)) for w in range(3)] == [("b", "strict"), ("c", "strict"), ("a", "strict")]
    assert group(scheduler.next_for(2)) == ("b", "strict")  # 4 left there, 2 in c
    assert group(scheduler.next_for(0)) == ("b", "strict")  # worker 0 keeps to it too


def test_the_tail_is_shared_with_the_group_with_most_items_left_per_worker():
    work = items([("a", "strict", 6), ("b", "strict", 4)])
    scheduler = AffinityScheduler(work)
    assert [group(scheduler.next_for(w)) for w in range(2)] == [("a", "strict"), ("b", "strict")]
    assert group(scheduler.next_for(2)) == ("a", "strict")  # 5 left for one worker there, 3 in b
    assert group(scheduler.next_for(3)) == ("b", "strict")  # 4 left for two workers in a, 3 for one in b


def test_lanes_share_groups_so_that_few_must_build_a_second_env():
    """8 lanes, 16 items in groups of 6, 5 and 5, two each: one lane changes groups (9 envs in
    all), where sharing the largest group put 4 lanes on it and 2 of them had to change."""
    work = items([("a", "strict", 6), ("b", "strict", 5), ("c", "strict", 5)])
    scheduler = AffinityScheduler(work, min_to_share=1)
    lanes = [[group(scheduler.next_for(lane))] for lane in range(8)]
    for lane in range(8):
        lanes[lane].append(group(scheduler.next_for(lane)))
    assert sum(len(set(groups)) for groups in lanes) == 9


def test_a_worker_does_not_join_a_group_with_only_a_few_items_left():
    for size, joins in ((4, True), (3, False)):
        work = items([("a", "strict", size), ("b", "strict", 1)])
        scheduler = AffinityScheduler(work)
        assert [group(scheduler.next_for(w)) for w in range(2)] == [("a", "strict"), ("b", "strict")]
        # 3 left in a: worth building a second env; 2 left: worker 0 finishes them sooner.
        assert (scheduler.next_for(1) is not None) == joins


def test_every_item_is_handed_out_once_and_deterministically():
    work = items([("a", "strict", 7), ("a", "tel_hop", 4), ("b", "strict", 1), ("c", "slide", 9)])
    calls = [0, 1, 2, 2, 1, 0, 0, 0, 2] * 4

    def handed_out():
        scheduler = AffinityScheduler(work)
        return [scheduler.next_for(w) for w in calls], scheduler

    got, scheduler = handed_out()
    assert sorted(i.key for i in got if i is not None) == sorted(i.key for i in work)
    assert [scheduler.next_for(w) for w in range(3)] == [None] * 3
    assert handed_out()[0] == got
    assert AffinityScheduler([]).next_for(0) is None


def test_each_lane_of_a_worker_keeps_to_one_env_key():
    """Two workers of two lanes: every lane is handed items of one group in a row (its worker
    resets the env of the last one), one in flight per lane, results in the order they end."""
    work = items([("a", "strict", 4), ("b", "strict", 3), ("c", "strict", 3), ("d", "strict", 2)])
    running, sent, done = [], [], []

    def submit(worker, item):
        running.append((worker, item))
        sent.append((worker, group(item)))
        assert len(running) <= 4

    def receive():
        worker, item = running.pop(0)
        return worker, WorkResult({"episode_id": item.key[0], "physics": item.key[1]}, EpisodeTiming())

    dispatch(work, 2, submit, receive, done.append, concurrency=2)
    assert sorted(r.record["episode_id"] for r in done) == sorted(i.key[0] for i in work)
    a, b, c, d = (("a", "strict"), ("b", "strict"), ("c", "strict"), ("d", "strict"))
    assert sent[:4] == [(0, a), (1, b), (0, c), (1, d)]  # lane i runs on worker i % 2
    # lane 3, its group done, joins a for its last item (a lane joins a group with one left)
    assert sent[4:] == [(0, a), (1, b), (0, c), (1, d), (0, a), (1, b), (0, c), (1, a)]


@pytest.fixture(scope="module")
def real_items(bundled_dataset):
    """Coarse test episodes of the bundled scenes under Strict."""
    from vlnverse.eval.running.harness import plan_items, select_episodes
    from vlnverse.tasks.dataset import EpisodeDataset

    dataset = EpisodeDataset.open(str(bundled_dataset))
    return plan_items(dataset, select_episodes(dataset, "test", "coarse", None, 0), ("strict",), 0)


@pytest.mark.timeout(120)
def test_a_worker_error_is_raised_in_the_parent(real_items, tmp_path):
    missing = [replace(item, scene_file=str(tmp_path / "missing.usd")) for item in real_items[:2]]
    with pytest.raises(SceneError, match="missing.usd: no such file"):
        run_items(RunSpec(agent="oracle"), real_items + missing, lambda result: None, workers=2)


@pytest.mark.timeout(120)
def test_the_pool_runs_from_a_forkserver_when_the_parent_renders_on_threads(real_items, monkeypatch):
    """(What :func:`vlnverse.sim.gl.context.start_method` picks after rendering on llvmpipe threads.)"""
    from vlnverse.sim.gl import context

    monkeypatch.setattr(context, "start_method", lambda: "forkserver")
    done = []
    run_items(RunSpec(agent="oracle"), real_items[:2], done.append, workers=2)
    assert sorted(r.record["episode_id"] for r in done) == sorted(item.episode["episode_id"] for item in real_items[:2])


class DyingAgent(Agent):
    """Ends its process at the first step (as a segfault would)."""

    sensors = ()

    def reset(self, episode):
        pass

    def act(self, observation):
        os._exit(3)


@pytest.mark.timeout(120)
def test_a_dead_worker_process_is_an_error_not_a_hang(real_items):
    with pytest.raises(WorkerError, match=r"died \(exit code 3\) while running episode \S+ \((strict|tel_hop)\)"):
        run_items(RunSpec(agent=DyingAgent()), real_items, lambda result: None, workers=2)


def test_run_items_checks_its_arguments():
    with pytest.raises(ConfigError, match="unknown executor 'dask'"):
        run_items(RunSpec(agent="oracle"), [], print, executor="dask")
    with pytest.raises(ConfigError, match="workers must be a positive integer"):
        run_items(RunSpec(agent="oracle"), [], print, workers=0)


class RayInitSeen(Exception):
    """Raised by the fake Ray below once it has recorded how it was started."""


class FakeRay:
    """Records the environment ``ray.init`` runs in, then stops the run."""

    def __init__(self):
        self.usage_stats = None

    def is_initialized(self):
        return False

    def init(self, **kwargs):
        self.usage_stats = os.environ.get("RAY_USAGE_STATS_ENABLED")
        raise RayInitSeen


@pytest.mark.parametrize(("chosen", "seen"), [(None, "0"), ("1", "1"), ("0", "0")])
def test_ray_starts_without_usage_stats_unless_the_user_enables_them(monkeypatch, chosen, seen):
    ray = FakeRay()
    monkeypatch.setitem(__import__("sys").modules, "ray", ray)
    if chosen is None:
        monkeypatch.delenv("RAY_USAGE_STATS_ENABLED", raising=False)
    else:
        monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", chosen)
    with pytest.raises(RayInitSeen):
        run_items(RunSpec(agent="oracle"), [], print, executor="ray")
    assert ray.usage_stats == seen
    assert os.environ.get("RAY_USAGE_STATS_ENABLED") == chosen  # the process environment is left as it was

