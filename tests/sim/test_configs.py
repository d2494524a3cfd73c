"""Bad sim configs fail at construction with errors that name the problem."""

import pytest

from vlnverse.errors import ConfigError
from vlnverse.sim import (
    AgentSpec,
    DepthSensor,
    LidarSensor,
    PhysicsConfig,
    RGBSensor,
    SensorRig,
    make_action_space,
    make_sensor,
)
from vlnverse.sim.actions import DiscreteActions, WaypointActions


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: AgentSpec(radius=-0.3), "radius"),
        (lambda: AgentSpec(mass=0), "mass"),
        (lambda: AgentSpec(step_height=2.0), "step_height"),
        (lambda: RGBSensor(width=0), "width"),
        (lambda: RGBSensor(height=-5), "height"),
        (lambda: RGBSensor(hfov_deg=180.0), "hfov_deg"),
        (lambda: RGBSensor(hfov_deg=200.0), "hfov_deg"),
        (lambda: DepthSensor(near=1.0, far=0.5), "near"),
        (lambda: DepthSensor(min_depth=5.0, max_depth=1.0), "min_depth"),
        (lambda: RGBSensor(rate_hz=0.0), "rate_hz"),
        (lambda: LidarSensor(channels=0), "channels"),
        (lambda: LidarSensor(h_resolution_deg=0.0), "h_resolution_deg"),
        (lambda: LidarSensor(hfov_deg=400.0), "hfov_deg"),
        (lambda: make_sensor("thermal"), "unknown sensor 'thermal'"),
        (lambda: make_sensor("rgb", {"fov": 90}), "unknown parameter"),
        (lambda: SensorRig.from_spec(("rgb", "sonar")), "unknown sensor 'sonar'"),
        (lambda: make_action_space("teleport"), "unknown action space 'teleport'"),
        (lambda: make_action_space({"name": "discrete", "forward": 1}), "unknown key"),
        (lambda: DiscreteActions(turn_deg=0.0), "turn_deg"),
        (lambda: WaypointActions(candidate_distances=(5.0,)), "candidate_distances"),
        (lambda: PhysicsConfig(mode="ghost"), "unknown physics mode 'ghost'"),
        (lambda: PhysicsConfig(collision_threshold=0.0), "collision_threshold"),
        (lambda: PhysicsConfig(physics_hz=100.0, control_hz=30.0), "multiple"),
    ],
)
def test_bad_configs_raise_config_error(build, message):
    with pytest.raises(ConfigError, match=message):
        build()


def test_unknown_sensor_error_lists_valid_kinds():
    with pytest.raises(ConfigError) as info:
        make_sensor("sonar")
    assert "depth, lidar, pose, rgb, semantic" in str(info.value)


def test_defaults_follow_the_paper():
    assert (AgentSpec().radius, AgentSpec().height) == (0.30, 1.50)
    rgb, depth = RGBSensor(), DepthSensor()
    assert (rgb.width, rgb.height, rgb.hfov_deg) == (224, 224, 90.0)
    assert (depth.width, depth.height, depth.hfov_deg, depth.max_depth) == (256, 256, 90.0, 10.0)
    actions = DiscreteActions()
    assert (actions.forward_m, actions.turn_deg) == (0.25, 15.0)
    assert PhysicsConfig().collision_threshold == 0.10


@pytest.mark.parametrize("spelling", ["tel_hop", "tel-hop", "Tel-Hop", "TEL_HOP", " Tel-Hop "])
def test_every_spelling_of_a_physics_mode_is_the_same_mode(spelling):
    from vlnverse.eval.running.harness import EvalConfig

    assert PhysicsConfig(mode=spelling).mode == "tel_hop" and PhysicsConfig(mode=spelling).teleports
    assert EvalConfig(dataset="d", out="o", agent="oracle", physics=(spelling, "Strict")).physics == ("tel_hop", "strict")
