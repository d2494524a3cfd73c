"""On a machine with Isaac Sim: contacts under Strict and Tel-Hop, and several backends and
envs in one process (one Kit app, one live World at a time). Skipped elsewhere."""

from __future__ import annotations

import numpy as np
import pytest

from tests.scene.builders import box_room, l_corridor
from vlnverse.errors import SimulationError
from vlnverse.scene import load_scene
from vlnverse.sim import Displacement, PhysicsConfig, Pose, Simulator
from vlnverse.sim.agent import AgentSpec
from vlnverse.sim.backend import create_backend

pytestmark = pytest.mark.isaac


@pytest.fixture
def corridor(tmp_path):
    """Horizontal arm x in [0, 6], y in [0, 1.2]; its east wall's inner face is at x = 6."""
    return load_scene(l_corridor(tmp_path / "corridor.usda"))


def test_strict_driving_into_the_wall_collides_and_reports_the_wall(corridor):
    radius = AgentSpec().radius
    with Simulator(corridor, sensors=(), physics=PhysicsConfig(mode="strict"), backend="isaac",
                   pose=Pose(5.3, 0.6, 0.0, 0.0)) as sim:
        reports = [sim.execute(Displacement(forward=0.25)) for _ in range(3)]
        assert sim.pose.x <= 6.0 - radius + 0.02  # PhysX stopped it at the wall
        assert any(r.collision for r in reports) and sim.collisions >= 1
        assert "wall" in reports[-1].contacts.categories


def test_tel_hop_into_the_wall_sees_the_penetration_and_snaps_out(corridor):
    radius = AgentSpec().radius
    with Simulator(corridor, sensors=(), physics=PhysicsConfig(mode="tel_hop"), backend="isaac",
                   pose=Pose(5.3, 0.6, 0.0, 0.0)) as sim:
        report = sim.execute(Displacement(forward=0.6))  # the hop ends 0.2 m inside the wall
        assert report.contacts.categories == ("wall",)  # read by contacts() at the target
        assert report.snapped and report.collision
        assert sim.pose.x <= 6.0 - radius + 0.02
        assert sim.backend.contacts() == [] or max(c.depth for c in sim.backend.contacts()) <= 0.01


def test_two_backends_in_one_process_one_at_a_time(corridor, tmp_path):
    room = load_scene(box_room(tmp_path / "room.usda"))
    first = create_backend("isaac", PhysicsConfig(mode="slide"))
    try:
        first.load_scene(corridor)
        first.spawn_agent(AgentSpec(), Pose(0.6, 0.6, 0.0, 0.0))
        with pytest.raises(SimulationError, match="already live"):
            create_backend("isaac", PhysicsConfig())
    finally:
        first.close()
    second = create_backend("isaac", PhysicsConfig(mode="slide"))  # same Kit app, fresh World
    try:
        second.load_scene(room)
        second.spawn_agent(AgentSpec(), Pose(1.0, 1.0, 0.0, 0.0))
        result = second.move(np.tile([[0.5, 0.0, 0.0]], (30, 1)))
        assert result.poses[-1, 0] == pytest.approx(1.5, abs=0.1)
    finally:
        second.close()


def test_eval_worker_switches_scenes_with_one_isaac_env(corridor, tmp_path):
    from vlnverse.eval.running.worker import EvalWorker, RunSpec

    room = box_room(tmp_path / "room.usda")
    worker = EvalWorker(RunSpec(agent="forward", backend="isaac"))
    try:
        for scene in (corridor.path, room, corridor.path):
            env = worker.env(str(scene), "strict")
            obs, info = env.reset(seed=0)
            env.step(env.action_space.sample())
            assert len(worker._envs) == 1
    finally:
        worker.close()
