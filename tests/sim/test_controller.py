"""The controller's speed profiles and plans (pure numerics, no backend)."""

import math

import numpy as np
import pytest

from vlnverse.sim import AgentSpec, Displacement, PhysicsConfig, Pose, VelocityCommand
from vlnverse.sim.controller import MotionController, trapezoid_ticks


@pytest.mark.parametrize("distance", [0.25, 3.0, -0.26, 1e-3, 0.0])
def test_trapezoid_integrates_exactly_within_limits(distance):
    dt, vmax, amax = 1 / 30, 1.0, 4.0
    speeds = trapezoid_ticks(distance, vmax, amax, dt)
    assert speeds.sum() * dt == pytest.approx(distance, abs=1e-12)
    if len(speeds):
        assert np.abs(speeds).max() <= vmax + 1e-9
        assert np.abs(np.diff(np.r_[0.0, speeds, 0.0])).max() <= amax * dt + 1e-9


def test_displacement_plan_turns_then_drives_to_the_commanded_pose():
    controller = MotionController(AgentSpec(), PhysicsConfig())
    start = Pose(1.0, 2.0, 0.0, 0.3)
    plan = controller.plan(Displacement(turn=math.pi / 2, forward=1.0), start)
    end = start.moved(forward=1.0, turn=math.pi / 2)
    assert plan.commanded_pose == end
    assert plan.poses[-1, :2] == pytest.approx(end.xy)
    assert plan.poses[-1, 2] == pytest.approx(start.yaw + math.pi / 2)
    turning = plan.velocities[:, 2] != 0
    driving = np.hypot(plan.velocities[:, 0], plan.velocities[:, 1]) > 0
    assert not np.any(turning & driving)
    assert np.flatnonzero(turning).max() < np.flatnonzero(driving).min()


def test_velocity_plan_ramps_under_acceleration_limits_and_carries_over():
    agent = AgentSpec(max_linear_accel=2.0)
    controller = MotionController(agent, PhysicsConfig(control_hz=30.0))
    first = controller.plan(VelocityCommand(1.0, 0.0, 0.25), Pose(0, 0, 0, 0))
    speeds = first.velocities[:, 0]
    assert np.diff(np.r_[0.0, speeds]).max() <= 2.0 / 30 + 1e-9
    assert first.end_velocity[0] == pytest.approx(speeds[-1])
    second = controller.plan(VelocityCommand(1.0, 0.0, 0.25), first.commanded_pose)
    assert second.velocities[0, 0] > speeds[-1]
    controller.reset()
    assert controller.plan(VelocityCommand(1.0, 0.0, 0.1), Pose(0, 0, 0, 0)).velocities[0, 0] == pytest.approx(2.0 / 30)
