"""Strict / Slide / Tel-Hop against real PyBullet physics in a 6 m × 4 m room."""

import math

import numpy as np
import pytest

from vlnverse.sim import Displacement, PhysicsConfig, Pose, Simulator, VelocityCommand
from vlnverse.sim.testing import Box, box_room, scene_from_boxes

TABLE = Box("table_0", (2.5, 1.5, 0.0), (3.5, 2.5, 0.75), (0.6, 0.35, 0.15), "table")


@pytest.fixture(scope="module")
def scene():
    return box_room(6.0, 4.0, furniture=[TABLE])


def make_sim(scene, mode, pose):
    return Simulator(scene, sensors=(), physics=PhysicsConfig(mode=mode), pose=pose)


@pytest.mark.parametrize("mode", ["strict", "slide", "tel_hop"])
def test_free_space_motion_reaches_the_commanded_pose(scene, mode):
    with make_sim(scene, mode, Pose(1.0, 0.8, 0.0, 0.0)) as sim:
        report = sim.execute(Displacement(turn=math.radians(30), forward=0.5))
        assert not report.collision and report.displacement < 0.01
        assert report.reached_pose.distance_xy(report.commanded_pose) < 0.01
        assert report.reached_pose.yaw == pytest.approx(math.radians(30), abs=1e-3)


@pytest.mark.parametrize("mode", ["strict", "slide"])
def test_driving_head_on_into_a_wall_is_a_collision(scene, mode):
    with make_sim(scene, mode, Pose(5.55, 3.0, 0.0, 0.0)) as sim:
        report = sim.execute(Displacement(forward=0.25))
        # The wall at x = 6 stops the 0.30 m cylinder at x = 5.70: 0.10 m short of 5.80.
        assert report.reached_pose.x == pytest.approx(5.70, abs=0.01)
        assert report.displacement >= 0.1 - 0.01
        report = sim.execute(Displacement(forward=0.25))
        assert report.collision and report.displacement >= 0.1
        assert report.contacts.categories == ("wall",)
        assert sim.collisions >= 1
        assert sim.physics.fails_on_collision is (mode == "strict")


@pytest.mark.parametrize(("forward", "threshold", "collision"), [
    (0.20, 0.10, False),  # stopped 0.05 m short of the command: a touch, not a collision
    (0.25, 0.10, True),  # 0.101 m short: the paper's 0.1 m is reached
    (0.25, 0.11, False),  # the same push under a larger configured threshold
])
@pytest.mark.parametrize("rate", [60.0, 120.0])
def test_strict_counts_a_collision_from_the_threshold_on(scene, forward, threshold, collision, rate):
    physics = PhysicsConfig(mode="strict", collision_threshold=threshold, physics_hz=rate)
    with Simulator(scene, sensors=(), physics=physics, pose=Pose(5.55, 3.0, 0.0, 0.0)) as sim:
        report = sim.execute(Displacement(forward=forward))  # the wall stops the agent at x = 5.70
        assert report.displacement == pytest.approx(forward - 0.15, abs=0.003)
        assert report.collision is collision and sim.collisions == int(collision)


def test_slide_mode_slides_along_a_wall_and_counts_the_collision(scene):
    with make_sim(scene, "slide", Pose(5.5, 0.8, 0.0, math.radians(30))) as sim:
        start_y = sim.pose.y
        reports = [sim.execute(Displacement(forward=0.25)) for _ in range(4)]
        pose = sim.pose
        assert pose.x == pytest.approx(5.70, abs=0.01)  # pressed against the wall
        assert pose.y - start_y == pytest.approx(4 * 0.25 * math.sin(math.radians(30)), abs=0.02)
        assert any(r.collision for r in reports) and sim.collisions >= 1
        assert "wall" in reports[-1].contacts.categories


def test_tel_hop_snaps_out_of_an_obstacle_to_the_nearest_free_pose(scene):
    with make_sim(scene, "tel_hop", Pose(1.5, 2.0, 0.0, 0.0)) as sim:
        report = sim.execute(Displacement(forward=1.5))  # would end inside the table
        assert report.snapped and report.collision
        assert report.commanded_pose.x == pytest.approx(3.0)
        assert report.reached_pose.x <= 2.5 - 0.3 + 0.03  # in front of the table
        assert report.displacement >= 0.1
        assert report.contacts.object_ids == ("table_0",)
        assert sim.occupancy.is_navigable(report.reached_pose.position)
        assert not any(c.depth > 0.005 for c in sim.backend.contacts())


def test_tel_hop_stays_on_the_start_s_navigable_component():
    """Two floors 1 m apart: a hop that would end on the other floor (free, but not reachable
    on foot) ends at the near edge of the start's floor instead, and counts a collision."""
    brown = (0.45, 0.30, 0.18)
    scene = scene_from_boxes([Box("FloorA", (0.0, 0.0, -0.1), (2.5, 3.0, 0.0), brown, group="Floor"),
                              Box("FloorB", (3.5, 0.0, -0.1), (6.0, 3.0, 0.0), brown, group="Floor")])
    with make_sim(scene, "tel_hop", Pose(1.5, 1.5, 0.0, 0.0)) as sim:
        occupancy = sim.occupancy
        start, other = occupancy.component_of((1.5, 1.5, 0.0)), occupancy.component_of((4.0, 1.5, 0.0))
        assert start >= 0 and other >= 0 and start != other
        report = sim.execute(Displacement(forward=2.5))  # commanded to x = 4.0, on the other floor
        assert report.commanded_pose.x == pytest.approx(4.0)
        assert report.snapped and report.collision
        assert occupancy.component_of(report.reached_pose.position) == start
        assert report.reached_pose.x == pytest.approx(2.5 - 0.3, abs=2 * occupancy.resolution)


def test_tel_hop_bypasses_obstacles_in_transit(scene):
    with make_sim(scene, "tel_hop", Pose(1.5, 2.0, 0.0, 0.0)) as sim:
        report = sim.execute(Displacement(forward=2.5))  # through the table, lands at x = 4
        assert not report.snapped and not report.collision
        assert report.reached_pose.x == pytest.approx(4.0)


def test_tel_hop_into_a_wall_counts_a_collision(scene):
    with make_sim(scene, "tel_hop", Pose(5.5, 3.0, 0.0, 0.0)) as sim:
        report = sim.execute(Displacement(forward=0.5))
        assert report.snapped and report.collision
        assert report.reached_pose.x <= 5.70 + 1e-6 and report.contacts.categories == ("wall",)


@pytest.mark.parametrize("mode", ["strict", "slide", "tel_hop"])
def test_turning_in_place_never_collides(scene, mode):
    # Touching the wall (x = 5.70), then a full turn in 15° steps.
    with make_sim(scene, mode, Pose(5.70, 3.0, 0.0, 0.0)) as sim:
        for _ in range(24):
            report = sim.execute(Displacement(turn=math.radians(15)))
            assert not report.collision and report.displacement < 0.01
        assert sim.collisions == 0
        assert sim.pose.distance_xy(Pose(5.70, 3.0)) < 0.01


def test_velocity_commands_move_with_physics(scene):
    with make_sim(scene, "slide", Pose(1.0, 0.8, 0.0, 0.0)) as sim:
        for _ in range(4):
            report = sim.execute(VelocityCommand(1.0, 0.0, 0.5))
        assert not report.collision
        assert sim.pose.x == pytest.approx(report.commanded_pose.x, abs=0.01)
        # Accelerating at 4 m/s² to 1 m/s: 2 s at (nearly) full speed.
        assert sim.pose.x - 1.0 == pytest.approx(2.0 - 0.125, abs=0.05)


def test_a_movable_object_is_pushed_and_reset(scene):
    crate = Box("crate_0", (3.0, 0.5, 0.0), (3.3, 0.8, 0.4), (0.5, 0.4, 0.2), "crate", movable=True)
    with Simulator(box_room(6.0, 4.0, furniture=[crate]), sensors=(), physics=PhysicsConfig(mode="slide"),
                   pose=Pose(2.2, 0.65, 0.0, 0.0)) as sim:
        for _ in range(3):
            report = sim.execute(Displacement(forward=0.25))
        assert "crate_0" in report.contacts.object_ids
        assert sim.pose.x > 2.6  # pushed the crate rather than stopping at it
        origins = np.array([[2.0, 0.65, 0.2]])
        moved, _ = sim.backend.cast_rays(origins, origins + [[4.0, 0.0, 0.0]])
        sim.reset(Pose(1.0, 2.0, 0.0, 0.0))
        back, prim = sim.backend.cast_rays(origins, origins + [[4.0, 0.0, 0.0]])
        assert back[0] * 4.0 == pytest.approx(1.0, abs=0.01)  # front face at x = 3 again
        assert moved[0] > back[0]
        assert sim.instances.ids_of_prims(prim)[0] == 1


def _dormant(sim, object_id):
    """Whether the movable body of ``object_id`` is dormant (static, mass 0) right now."""
    import pybullet as p

    backend = sim.backend
    for uid in backend._world.movable:
        prim = backend._world.body_prim[uid]
        if sim.scene.objects[sim.scene.prims[prim].object_index].object_id == object_id:
            return p.getDynamicsInfo(uid, -1, physicsClientId=backend.client_id)[0] == 0.0
    raise AssertionError(f"no movable body for {object_id}")


def test_far_movables_are_dormant_and_wake_before_the_agent_pushes_them():
    crate = Box("crate_0", (4.5, 0.5, 0.0), (4.8, 0.8, 0.4), (0.5, 0.4, 0.2), "crate", movable=True)
    far = Box("crate_1", (0.3, 3.2, 0.0), (0.6, 3.5, 0.4), (0.2, 0.4, 0.5), "crate", movable=True)
    with Simulator(box_room(6.0, 4.0, furniture=[crate, far]), sensors=(), physics=PhysicsConfig(mode="slide"),
                   pose=Pose(2.2, 0.65, 0.0, 0.0)) as sim:
        assert _dormant(sim, "crate_0") and _dormant(sim, "crate_1")
        origins = np.array([[2.0, 0.65, 0.2]])
        before, _ = sim.backend.cast_rays(origins, origins + [[4.0, 0.0, 0.0]])
        assert before[0] * 4.0 == pytest.approx(2.5, abs=0.01)  # front face at x = 4.5
        for _ in range(10):
            report = sim.execute(Displacement(forward=0.25))
        assert not _dormant(sim, "crate_0")
        assert _dormant(sim, "crate_1")  # 3 m away the whole time
        assert "crate_0" in report.contacts.object_ids
        assert sim.pose.x > 4.1  # pushed the crate rather than stopping at it
        moved, _ = sim.backend.cast_rays(origins, origins + [[4.0, 0.0, 0.0]])
        assert moved[0] > before[0] + 0.05
        # Driving away: the crate comes to rest out of reach and falls dormant where it lies.
        sim.execute(Displacement(turn=math.pi))
        for _ in range(8):
            sim.execute(Displacement(forward=0.25))
        assert _dormant(sim, "crate_0")
        still, _ = sim.backend.cast_rays(origins, origins + [[4.0, 0.0, 0.0]])
        assert still[0] == pytest.approx(moved[0], abs=0.01)


def test_a_dormant_movable_still_stops_a_teleporting_agent():
    crate = Box("crate_0", (3.0, 0.5, 0.0), (3.3, 0.8, 0.4), (0.5, 0.4, 0.2), "crate", movable=True)
    with Simulator(box_room(6.0, 4.0, furniture=[crate]), sensors=(), physics=PhysicsConfig(mode="tel_hop"),
                   pose=Pose(2.6, 2.5, 0.0, 0.0)) as sim:
        sim.backend.set_agent_pose(Pose(3.15, 0.65, 0.0, 0.0))
        assert not _dormant(sim, "crate_0")  # woken by the teleport next to it
        assert any(c.depth > 0.01 for c in sim.backend.contacts())


def _coarse_moves(sim, command):
    before = sim.backend.coarse_moves
    report = sim.execute(command)
    return sim.backend.coarse_moves - before, report


@pytest.mark.parametrize("mode", ["strict", "slide"])
def test_coarse_ticks_only_where_no_contact_can_begin(scene, mode):
    with make_sim(scene, mode, Pose(1.0, 2.0, 0.0, 0.0)) as sim:
        coarse, report = _coarse_moves(sim, Displacement(forward=0.5))  # open floor ahead
        assert coarse == 1 and report.displacement < 0.01
        assert report.reached_pose.distance_xy(report.commanded_pose) < 0.005
    with make_sim(scene, mode, Pose(5.55, 3.0, 0.0, 0.0)) as sim:
        coarse, report = _coarse_moves(sim, Displacement(forward=0.25))  # the wall is within reach
        assert coarse == 0 and report.reached_pose.x == pytest.approx(5.70, abs=0.01)
        coarse, report = _coarse_moves(sim, Displacement(turn=math.radians(15)))  # touching it, turning
        assert coarse == 1 and not report.collision
        assert report.reached_pose.yaw == pytest.approx(math.radians(15), abs=1e-3)
        assert report.reached_pose.distance_xy(Pose(5.70, 3.0)) < 0.01
        coarse, _ = _coarse_moves(sim, Displacement(turn=math.radians(165), forward=0.25))  # turn, then away
        assert coarse == 0  # the wall stays within reach at the start of the move


def test_coarse_ticks_track_the_speed_profile_like_full_rate_physics(scene):
    fine = PhysicsConfig(mode="slide", physics_hz=30.0, control_hz=30.0)  # one physics step per tick anyway
    for command in (Displacement(turn=math.radians(-45)), Displacement(turn=0.3, forward=1.0),
                    VelocityCommand(0.8, 0.4, 1.0)):
        poses = []
        for physics in (PhysicsConfig(mode="slide"), fine):
            with Simulator(scene, sensors=(), physics=physics, pose=Pose(1.0, 0.8, 0.0, 0.0)) as sim:
                poses.append(sim.execute(command).reached_pose)
        assert poses[0].distance_xy(poses[1]) < 1e-3
        assert poses[0].yaw == pytest.approx(poses[1].yaw, abs=1e-3)


def test_no_coarse_ticks_while_a_movable_is_awake(scene):
    crate = Box("crate_0", (3.0, 0.5, 0.0), (3.3, 0.8, 0.4), (0.5, 0.4, 0.2), "crate", movable=True)
    with Simulator(box_room(6.0, 4.0, furniture=[crate]), sensors=(), physics=PhysicsConfig(mode="slide"),
                   pose=Pose(2.2, 0.65, 0.0, 0.0)) as sim:
        coarse, _ = _coarse_moves(sim, Displacement(forward=0.25))
        assert coarse == 0 and not _dormant(sim, "crate_0")


def test_physics_steps_at_isaac_sims_60_hz_by_default_and_120_hz_stays_available(scene):
    assert PhysicsConfig().physics_hz == 60.0 and PhysicsConfig().substeps == 2
    for rate, substeps in ((60.0, 2), (120.0, 4)):
        physics = PhysicsConfig(mode="strict", physics_hz=rate)
        with Simulator(scene, sensors=(), physics=physics, pose=Pose(5.55, 3.0, 0.0, 0.0)) as sim:
            p, client = sim.backend._p, sim.backend.client_id
            parameters = p.getPhysicsEngineParameters(physicsClientId=client)
            assert parameters["numSubSteps"] == substeps and parameters["fixedTimeStep"] == pytest.approx(1 / 30)
            report = sim.execute(Displacement(forward=0.25))  # into the wall: stopped at x = 5.70
            assert report.reached_pose.x == pytest.approx(5.70, abs=0.01) and report.collision


@pytest.mark.parametrize("mode", ["strict", "slide"])
@pytest.mark.parametrize("rate", [60.0, 120.0])
def test_slow_pushes_against_a_wall_accumulate_into_a_collision(scene, mode, rate):
    """0.15 m/s for 0.5 s is 0.075 m per action: no single action reaches 0.1 m, but the
    obstacle has displaced the agent by 0.15 m after the second consecutive push."""
    physics = PhysicsConfig(mode=mode, physics_hz=rate)
    with Simulator(scene, sensors=(), physics=physics, pose=Pose(5.70, 3.0, 0.0, 0.0)) as sim:  # at the wall x = 6
        first = sim.execute(VelocityCommand(0.15, 0.0, 0.5))
        assert not first.collision and first.displacement < 0.1
        second = sim.execute(VelocityCommand(0.15, 0.0, 0.5))
        assert second.collision and second.displacement >= 0.1
        assert second.contacts.categories == ("wall",) and sim.collisions == 1


def test_the_carried_deviation_ends_with_the_contact(scene):
    with make_sim(scene, "slide", Pose(5.70, 3.0, 0.0, 0.0)) as sim:
        sim.execute(VelocityCommand(0.15, 0.0, 0.5))
        sim.execute(Displacement(turn=math.pi))  # turn away: the agent leaves the wall
        sim.execute(Displacement(forward=0.5))
        sim.execute(Displacement(turn=math.pi))
        report = sim.execute(VelocityCommand(0.05, 0.0, 0.5))  # 0.025 m, free space
        assert not report.collision and report.displacement < 0.05 and sim.collisions == 0
