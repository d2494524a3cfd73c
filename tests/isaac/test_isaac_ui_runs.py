"""The window's episode browser, agent runs and recording scoring, on the embedded backend."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from pxr import Usd, UsdGeom

from tests.bundled import BUNDLED_SCENES, bundled_dataset
from vlnverse.errors import ConfigError, DatasetError, RegistryError, SimulationError
from vlnverse.eval.registry import make_agent
from vlnverse.eval.running.runner import run_episode
from vlnverse.isaac_ui import markers, teleop
from vlnverse.isaac_ui.agent_run import (
    STOPPED_MESSAGE,
    AgentRun,
    open_agent_run,
    replay_agent_config,
    score_recording,
)
from vlnverse.isaac_ui.episodes import EpisodeBrowser, describe_episode, episode_markers
from vlnverse.sim.agent import AgentSpec
from vlnverse.sim.backend import create_backend
from vlnverse.sim.physics import PhysicsConfig
from vlnverse.sim.types import Pose

SCENE = BUNDLED_SCENES / "scene_0000" / "scene.usdc"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    """One coarse and one long-horizon episode per bundled scene, made by the datagen API."""
    return bundled_dataset(tmp_path_factory.mktemp("ui_dataset"), per_scene=1, tasks=("coarse", "long_horizon"))


def test_browser_lists_the_open_scenes_episodes(dataset, tmp_path):
    browser = EpisodeBrowser(dataset)
    rows = browser.rows(SCENE)
    assert rows and {r.task for r in rows} == {"coarse", "long_horizon"}
    everything = browser.dataset.all_episodes()
    assert len(everything) > len(rows)  # other scenes' episodes are filtered out
    for row in rows:
        episode = browser.episode(row.episode_id)
        assert episode.scene_id == "scene_0000"
        assert row.instruction == episode.instruction.text
        path = episode.reference_path
        assert row.length == pytest.approx(sum(math.dist(a, b) for a, b in zip(path, path[1:], strict=False)))
        assert row.goals == len(episode.goals)
        assert row.label().startswith(f"[{row.task}] {row.length:.1f} m")
    assert len(rows[0].label(width=20).split("· ")[1]) <= 20
    assert [r.task for r in browser.rows(SCENE, task="coarse")] == ["coarse"]
    assert {r.split for r in rows} == {episode.split for episode in browser.episodes_for_scene(SCENE)}
    other = next(s for s in ("train", "val_seen", "val_unseen", "test") if s != rows[0].split)
    assert browser.rows(SCENE, split=other) == []
    assert browser.rows(tmp_path / "elsewhere.usda") == []
    assert browser.tasks() == ["coarse", "long_horizon"]
    with pytest.raises(DatasetError, match="unknown task"):
        browser.rows(SCENE, task="flying")
    with pytest.raises(DatasetError):
        browser.episode("nope")
    with pytest.raises(DatasetError):
        EpisodeBrowser(tmp_path / "missing")
    # A corpus copied elsewhere: scene paths match on their relative tail.
    moved = EpisodeBrowser(dataset, scenes_dir=tmp_path / "gone")
    assert [r.episode_id for r in moved.rows(SCENE)] == [r.episode_id for r in rows]


def test_show_episode_draws_start_goals_radius_and_path(dataset, tmp_path):
    browser = EpisodeBrowser(dataset)
    episode = browser.episode(browser.rows(SCENE, task="long_horizon")[0].episode_id)
    drawn = episode_markers(episode)
    assert drawn.success_radius == 3.0  # the harness's scoring radius
    assert drawn.start_yaw == pytest.approx(episode.start_yaw)
    assert len(drawn.goals) == len(episode.goals) == 2
    # Drawn into the scene's own stage (in memory) without touching its prims.
    stage = Usd.Stage.Open(str(SCENE))
    before = {str(p.GetPath()) for p in stage.Traverse()}
    markers.draw_episode(stage, episode_markers(episode, success_radius=1.5))
    goals = stage.GetPrimAtPath(f"{markers.MARKER_ROOT}/Goals").GetChildren()
    assert [UsdGeom.Cylinder(g).GetRadiusAttr().Get() for g in goals] == [1.5, 1.5]
    centres = [tuple(UsdGeom.Xformable(g).ComputeLocalToWorldTransform(0).ExtractTranslation())[:2] for g in goals]
    assert np.allclose(centres, [g.position[:2] for g in episode.goals], atol=1e-5)
    curve = UsdGeom.BasisCurves(stage.GetPrimAtPath(f"{markers.MARKER_ROOT}/ReferencePath"))
    assert list(curve.GetCurveVertexCountsAttr().Get()) == [len(episode.reference_path)]
    markers.clear_markers(stage)
    assert {str(p.GetPath()) for p in stage.Traverse()} == before
    text = describe_episode(episode)
    assert episode.episode_id in text and "2 goal(s), success radius 3.00 m" in text
    assert "sub-goal 2:" in text


@pytest.mark.parametrize("physics", ["strict", "tel_hop"])
@pytest.mark.parametrize("task", ["coarse", "long_horizon"])
def test_agent_run_ticks_to_the_harness_result(dataset, physics, task):
    browser = EpisodeBrowser(dataset)
    episode = browser.episode(browser.rows(SCENE, task=task)[0].episode_id)
    run = open_agent_run(SCENE, episode, "oracle", physics=physics, seed=3)
    try:
        first = run.live()
        assert first.steps == 0 and not first.done and first.metrics == {}
        first_leg = episode.subgoal_distances[0] if task == "long_horizon" else episode.geodesic_distance
        assert first.distance_to_goal == pytest.approx(first_leg, abs=0.3)  # the first leg's goal
        seen = [run.tick() for _ in range(5)]
        assert [m.steps for m in seen] == [1, 2, 3, 4, 5]
        while seen[-1].distance_to_goal >= first.distance_to_goal and len(seen) < 20 and not seen[-1].done:
            seen.append(run.tick())  # the oracle may turn in place first (up to 12 x 15 degrees)
        assert seen[-1].distance_to_goal < first.distance_to_goal
        final = run.run()
    finally:
        run.close()
    assert final.done and final.fail_reason == "stop"
    assert final.leg == final.legs == (len(episode.goals) if task == "long_horizon" else 1)
    assert final.metrics["SR"] == 1.0 and 0.5 < final.metrics["SPL"] <= 1.0
    assert "SR 1.000" in final.render() and "done (stop)" in final.render()
    assert run.tick() == final  # ticking a finished run changes nothing
    # The same episode through the harness's own loop gives the same record.
    from vlnverse.envs.nav_env import NavEnv

    agent = make_agent("oracle")
    env = NavEnv(str(SCENE), physics=physics, action_space=agent.action_space, sensors=agent.sensors)
    try:
        record, _ = run_episode(env, agent, episode, physics=physics, seed=3)
    finally:
        env.close()
    assert record["metrics"] == run.record["metrics"]
    assert record["trajectory"] == run.record["trajectory"]
    assert record["actions"] == run.record["actions"]


def test_agent_run_with_the_env_on_the_agents_thread(dataset):
    """The window's mode inside Isaac Sim: env built and stepped off the ticking thread, tick
    only reports, stop does not wait; the record is the harness's all the same."""
    browser = EpisodeBrowser(dataset)
    episode = browser.episode(browser.rows(SCENE, task="coarse")[0].episode_id)
    threaded = open_agent_run(SCENE, episode, "oracle", physics="strict", seed=3, env_in_thread=True)
    ticked = open_agent_run(SCENE, episode, "oracle", physics="strict", seed=3)
    try:
        assert threaded.tick(timeout=0).steps >= 0  # returns at once
        final, reference = threaded.run(), ticked.run()
    finally:
        threaded.close()
        ticked.close()
    assert final.done and final.fail_reason == "stop" and final.steps == reference.steps
    assert threaded.record["actions"] == ticked.record["actions"]
    assert threaded.record["metrics"] == ticked.record["metrics"]
    assert threaded.env.sim._backend is None  # closed by the agent's thread

    run = open_agent_run(SCENE, episode, "forward", env_in_thread=True)
    stopped = run.stop()
    assert not stopped.done or stopped.fail_reason == "error"  # did not wait
    final = run.run()
    assert final.done and final.fail_reason == "error" and STOPPED_MESSAGE in final.error


def test_agent_run_of_any_registered_agent_and_failures(dataset):
    browser = EpisodeBrowser(dataset)
    episode = browser.episode(browser.rows(SCENE, task="coarse")[0].episode_id)
    run = open_agent_run(SCENE, episode, "random", {"stop_probability": 0.0}, physics="slide",
                         max_steps=12)
    try:
        final = run.run()
    finally:
        run.close()
    assert final.done and final.fail_reason == "step_budget" and final.steps == 12
    assert final.metrics["SR"] == 0.0 and final.collisions == sum(run.record["collisions"])

    run = open_agent_run(SCENE, episode, "forward")
    try:
        run.tick()
        stopped = run.stop()
    finally:
        run.close()
    assert stopped.done and stopped.steps == 1 and stopped.fail_reason == "error"
    assert STOPPED_MESSAGE in stopped.error and stopped.metrics["SR"] == 0.0

    def broken(_observation):
        raise RuntimeError("no idea")

    from vlnverse.envs.nav_env import NavEnv
    from vlnverse.eval.agent import as_agent

    agent = as_agent(broken, sensors=())
    env = NavEnv(str(SCENE), action_space=agent.action_space, sensors=())
    try:
        run = AgentRun(env, agent, episode, physics="strict")
        final = run.tick()
    finally:
        env.close()
    assert final.done and final.fail_reason == "error" and "no idea" in final.error
    assert run.record["error_source"] == "agent" and final.steps == 0
    with pytest.raises(RegistryError):
        open_agent_run(SCENE, episode, "no_such_agent")
    with pytest.raises(ConfigError):
        open_agent_run(SCENE, episode, "random", {"not_a_key": 1})


def test_recordings_are_scored_with_the_replay_agent(dataset, tmp_path):
    browser = EpisodeBrowser(dataset)
    episode = browser.episode(browser.rows(SCENE, task="coarse")[0].episode_id)
    physics = PhysicsConfig(mode="strict")
    # A "participant" who walks the oracle's route: its poses logged every 50 ms.
    oracle = open_agent_run(SCENE, episode, "oracle", physics="strict")
    try:
        oracle.run()
    finally:
        oracle.close()
    recording = tmp_path / "scene_0000-20260101-000000.csv"
    with teleop.PoseRecorder(recording) as recorder:
        for k, (x, y, z, yaw) in enumerate(oracle.trajectory()):
            recorder.tick(k * physics.control_dt * 8, (x, y, z), yaw)
    scored = score_recording(recording, episode, SCENE, tmp_path / "work")
    live = scored.live()
    assert live.done and live.fail_reason == "stop"
    assert live.metrics["SR"] == 1.0 and live.metrics["nDTW"] > 0.8
    assert scored.record["agent_trace"]["recording_period_ms"] == pytest.approx(50.0)
    assert (tmp_path / "work" / "replay" / f"{episode.episode_id}.csv").is_file()

    # A real keyboard session on the embedded backend, from the episode's start pose.
    backend = create_backend("bullet", physics)
    try:
        from vlnverse.scene import load_scene

        backend.load_scene(load_scene(SCENE))
        x, y, z = episode.start_position
        backend.spawn_agent(AgentSpec(), Pose(x, y, z, episode.start_yaw))
        keys = teleop.KeyboardTeleop()
        session = teleop.TeleopSession(backend, teleop.PoseRecorder(tmp_path / "keys.csv"), keys,
                                       physics.control_dt)
        keys.press("W")
        for _ in range(20):
            end = session.tick()
        keys.release("W")
        path = session.finish()
    finally:
        backend.close()
    scored = score_recording(path, episode, SCENE, tmp_path / "work2")
    live = scored.live()
    assert live.done and live.fail_reason == "stop"
    assert math.dist(live.pose[:2], (end.x, end.y)) < 0.3  # replayed to where the keys took it
    assert live.metrics["TL"] == pytest.approx(math.dist((x, y), (end.x, end.y)), abs=0.3)
    with pytest.raises(ConfigError):
        replay_agent_config(tmp_path / "missing.csv", episode.episode_id, tmp_path)


def test_teleop_loop_drives_a_backend_off_the_calling_thread(dataset, tmp_path):
    """The window's teleoperation: backend and session built and ticked on the loop's thread,
    recording finished and backend closed when it stops."""
    import threading
    import time

    browser = EpisodeBrowser(dataset)
    episode = browser.episode(browser.rows(SCENE, task="coarse")[0].episode_id)
    physics = PhysicsConfig(mode="strict")
    keys = teleop.KeyboardTeleop()
    keys.press("A")  # turning in place never hits a wall
    built = {}

    def build():
        from vlnverse.scene import load_scene

        built["thread"] = threading.current_thread()
        backend = built["backend"] = create_backend("bullet", physics)
        backend.load_scene(load_scene(SCENE))
        x, y, z = episode.start_position
        backend.spawn_agent(AgentSpec(), Pose(x, y, z, episode.start_yaw))
        return backend, teleop.TeleopSession(backend, teleop.PoseRecorder(tmp_path / "loop.csv"), keys, 0.01)

    loop = teleop.TeleopLoop(build, control_dt=0.01)
    deadline = time.monotonic() + 30
    while loop.rows < 3 and not loop.done and time.monotonic() < deadline:
        time.sleep(0.01)
    loop.stop()
    loop.join(30)
    assert loop.done and loop.error is None and built["thread"] is not threading.current_thread()
    assert loop.recording == tmp_path / "loop.csv" and len(teleop.read_pose_csv(loop.recording)) >= 3
    assert loop.pose.yaw != pytest.approx(episode.start_yaw)
    with pytest.raises(SimulationError, match="close"):
        built["backend"].agent_pose()

    failing = teleop.TeleopLoop(lambda: (_ for _ in ()).throw(ValueError("no scene")), control_dt=0.01)
    failing.join(30)
    assert failing.done and "no scene" in failing.error and failing.recording is None


@pytest.mark.isaac
def test_agent_run_on_the_isaac_backend_matches_the_embedded_one(dataset):
    """What the window's "Run" does, on Isaac Sim: the oracle reaches the goal one tick at a time."""
    browser = EpisodeBrowser(dataset)
    episode = browser.episode(browser.rows(SCENE, task="coarse")[0].episode_id)
    results = {}
    for backend in ("bullet", "isaac"):
        run = open_agent_run(SCENE, episode, "oracle", backend=backend, physics="strict")
        try:
            ticks = 0
            while not run.done:
                live = run.tick()
                ticks += 1
                assert live.steps <= ticks
        finally:
            run.close()
        results[backend] = live
    assert results["isaac"].fail_reason == "stop" and results["isaac"].metrics["SR"] == 1.0
    assert results["isaac"].metrics["NE"] == pytest.approx(results["bullet"].metrics["NE"], abs=0.5)
    assert results["isaac"].metrics["TL"] == pytest.approx(results["bullet"].metrics["TL"], rel=0.15)
