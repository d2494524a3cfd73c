"""VLNVerse/Nav-v0 on real PyBullet: API, oracle, rules, rewards and configuration errors."""

import math
import subprocess
import sys

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import vlnverse
from vlnverse.envs.nav_env import NavEnv
from vlnverse.errors import ConfigError, SimulationError
from vlnverse.sim import LidarSensor

from .conftest import SMALL_SENSORS

INFO_KEYS = {"pose", "collision", "displacement", "collisions", "geodesic_distance", "oracle_action", "fail_reason"}


def run_oracle(env, seed=0):
    obs, info = env.reset(seed=seed)
    start_distance = info["geodesic_distance"]
    while True:
        obs, reward, terminated, truncated, info = env.step(info["oracle_action"])
        assert env.observation_space.contains(obs)
        if terminated or truncated:
            return info, start_distance


def test_check_env_passes(two_rooms):
    env = NavEnv(two_rooms, sensors={**SMALL_SENSORS, "semantic": {"kind": "semantic", "width": 16, "height": 16},
                                     "lidar": LidarSensor(h_resolution_deg=10.0)},
                 instruction="Walk through the doorway and stop by the far wall.")
    check_env(env, skip_render_check=True)
    env.close()


@pytest.mark.parametrize("mode", ["strict", "slide", "tel_hop"])
def test_following_the_oracle_reaches_the_goal_without_collisions(two_rooms, mode):
    env = NavEnv(two_rooms, physics=mode, sensors=(), start=(2.0, 1.0, 0.0), goal=(6.0, 1.0), goal_radius=0.5)
    info, start_distance = run_oracle(env)
    assert start_distance > 6.0  # through the doorway, not through the wall
    assert info["success"] and info["fail_reason"] is None
    assert info["collisions"] == 0
    assert info["geodesic_distance"] <= 0.5
    assert info["path_length"] >= start_distance - 0.5
    env.close()


@pytest.mark.parametrize("action_space, mode", [("waypoint", "strict"), ("waypoint", "tel_hop"), ("velocity", "slide")])
def test_oracle_for_continuous_action_spaces(two_rooms, action_space, mode):
    env = NavEnv(two_rooms, physics=mode, action_space=action_space, sensors=(), start=(2.0, 1.0, math.pi),
                 goal=(6.0, 1.0), goal_radius=0.5)
    info, _ = run_oracle(env)
    assert info["success"] and info["collisions"] == 0
    assert info["steps"] < (20 if action_space == "waypoint" else 200)
    env.close()


def test_strict_fails_on_a_wall_while_slide_goes_on(two_rooms):
    for mode, terminated_expected in (("strict", True), ("slide", False)):
        env = NavEnv(two_rooms, physics=mode, sensors=(), start=(3.5, 1.0, 0.0), goal=(1.0, 1.0))
        env.reset(seed=0)
        for _ in range(3):
            _, reward, terminated, truncated, info = env.step(1)
            if info["collision"]:
                break
        assert info["collision"], f"{mode}: driving into the partition must collide"
        assert terminated is terminated_expected and not truncated
        assert info["displacement"] >= 0.1
        assert info["contacts"] == ("wall@room_0",)
        assert info["fail_reason"] == ("collision" if mode == "strict" else None)
        assert reward < 0
        if mode == "strict":
            with pytest.raises(SimulationError, match="reset"):
                env.step(1)
        env.close()


def test_info_observation_and_reward(two_rooms):
    env = vlnverse.make(scene=two_rooms, sensors=SMALL_SENSORS, start=(2.0, 1.0, 0.0), goal=(3.0, 1.0),
                        instruction="Go forward one metre.")
    obs, info = env.reset(seed=1)
    assert INFO_KEYS <= set(info) and info["collisions"] == 0 and info["fail_reason"] is None
    assert obs["instruction"] == "Go forward one metre."
    assert obs["pose"] == pytest.approx([2.0, 1.0, 0.0, 0.0])
    assert env.observation_space.contains(obs)
    assert info["oracle_action"] == 1
    obs, reward, terminated, truncated, info = env.step(1)
    assert reward == pytest.approx(0.25 - 0.01, abs=0.06)  # progress (on a 5 cm grid) minus the step penalty
    assert info["geodesic_distance"] == pytest.approx(0.75, abs=0.05)
    obs, reward, terminated, truncated, info = env.step(0)
    assert terminated and info["success"] and reward > 9.0
    env.close()


def test_stopping_far_from_the_goal_fails(two_rooms):
    env = NavEnv(two_rooms, sensors=(), start=(2.0, 1.0, 0.0), goal=(6.0, 1.0), goal_radius=1.0)
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(0)
    assert terminated and not info["success"] and info["fail_reason"] == "stop"
    env.close()


def test_step_budget_truncates(two_rooms):
    env = NavEnv(two_rooms, sensors=(), max_episode_steps=3, start=(2.0, 1.0, 0.0), goal=(6.0, 1.0))
    env.reset(seed=0)
    results = [env.step(2) for _ in range(3)]
    assert [r[3] for r in results] == [False, False, True]
    assert results[-1][4]["fail_reason"] == "step_budget" and not results[-1][2]
    env.close()


def test_random_episodes_come_from_the_reset_seed(two_rooms):
    env = NavEnv(two_rooms, sensors=())
    first = env.reset(seed=7)[1]
    again = env.reset(seed=7)[1]
    other = env.reset(seed=8)[1]
    assert first["pose"] == pytest.approx(again["pose"])
    assert first["geodesic_distance"] == pytest.approx(again["geodesic_distance"])
    assert not np.allclose(first["pose"], other["pose"])
    assert math.isfinite(first["geodesic_distance"]) and first["geodesic_distance"] >= 1.0
    assert env.occupancy.is_navigable(first["pose"][:3])
    env.close()


def test_detaching_a_sensor_updates_the_observation_space(two_rooms):
    env = NavEnv(two_rooms, sensors=SMALL_SENSORS, start=(2.0, 1.0, 0.0), goal=(3.0, 1.0))
    assert {"rgb", "depth", "pose", "instruction", "bump"} == set(env.observation_space.spaces)
    env.detach_sensor("depth")
    assert "depth" not in env.observation_space.spaces
    obs, _ = env.reset(seed=0)
    assert set(obs) == {"rgb", "pose", "instruction", "bump"} and env.observation_space.contains(obs)
    env.attach_sensor("lidar", LidarSensor(h_resolution_deg=5.0))
    obs, *_ = env.step(2)
    assert obs["lidar"].shape == (1, 72) and env.observation_space.contains(obs)
    env.close()


def test_episodes_cycle_and_carry_instructions(two_rooms):
    episodes = [
        {"episode_id": "a", "start": [2.0, 1.0, 0.0], "goal": [3.0, 1.0], "instruction": "Step ahead, café."},
        {"episode_id": "b", "start": [6.0, 1.0, 0.0], "goals": [{"position": [6.0, 3.0, 0.0], "radius": 0.5}]},
    ]
    env = NavEnv(two_rooms, sensors=(), episodes=episodes)
    obs, info = env.reset(seed=0)
    assert info["episode_id"] == "a" and obs["instruction"] == "Step ahead, café."
    assert env.observation_space["instruction"].contains(obs["instruction"])
    assert env.reset()[1]["episode_id"] == "b"
    assert env.reset(options={"episode_index": 1})[1]["episode_id"] == "b"
    env.close()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"physics": "ghost"}, "unknown physics mode"),
        ({"action_space": "joystick"}, "unknown action space"),
        ({"sensors": ("rgb", "sonar")}, "unknown sensor"),
        ({"agent": {"radius": -0.3}}, "radius"),
        ({"sensors": {"rgb": {"kind": "rgb", "width": 0}}}, "width"),
        ({"sensors": {"rgb": {"kind": "rgb", "hfov_deg": 180}}}, "hfov_deg"),
        ({"max_episode_steps": 0}, "max_episode_steps"),
        ({"occupancy_resolution": 0.0}, "occupancy_resolution"),
        ({"start": (1.0,)}, "start"),
        ({"reward": {"bonus": 1}}, "unknown key"),
        ({"backend": "mujoco"}, "unknown backend"),
    ],
)
def test_bad_env_configs_fail_at_construction(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        NavEnv("does/not/matter.usda", **kwargs)


def test_gymnasium_make_by_id(two_rooms):
    env = gymnasium.make("VLNVerse/Nav-v0", scene=two_rooms, sensors=(), start=(2.0, 1.0, 0.0), goal=(3.0, 1.0))
    assert isinstance(env.unwrapped, NavEnv)
    _, info = env.reset(seed=0)
    assert info["oracle_action"] == 1
    env.close()


def test_import_vlnverse_stays_light():
    code = ("import sys, vlnverse; assert 'gymnasium' not in sys.modules and 'pybullet' not in sys.modules; "
            "assert callable(vlnverse.make); assert 'gymnasium' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_import_vlnverse_registers_the_gymnasium_id():
    """``import vlnverse`` alone (not ``vlnverse.envs``) makes gymnasium find the id, whether
    gymnasium is imported after it or before it (``gymnasium.make`` looks the id up so)."""
    lookup = "print(gymnasium.spec('VLNVerse/Nav-v0').entry_point)"
    for imports in ("import vlnverse, sys; assert 'gymnasium' not in sys.modules; import gymnasium",
                    "import gymnasium, vlnverse", "import vlnverse.errors, gymnasium.envs.registration as gymnasium"):
        done = subprocess.run([sys.executable, "-c", f"{imports}; {lookup}"], capture_output=True, text=True)
        assert done.returncode == 0 and done.stdout.split()[-1] == "vlnverse.envs.nav_env:NavEnv", done.stderr


def test_render_rgb_array(two_rooms):
    env = NavEnv(two_rooms, sensors=(), render_mode="rgb_array", start=(2.0, 1.0, 0.0), goal=(3.0, 1.0))
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (224, 224, 3) and frame.dtype == np.uint8 and frame.std() > 5
    env.close()


def test_a_start_inside_a_sealed_pillar_goes_to_reachable_floor(tmp_path, caplog):
    from tests.scene.builders import room_with_sealed_boxes

    scene = room_with_sealed_boxes(tmp_path / "sealed.usda")
    env = NavEnv(scene, sensors=(), start=(2.0, 2.0, 0.0), goal=(5.0, 1.0))
    with caplog.at_level("WARNING", logger="vlnverse.envs.nav_env"):
        _, info = env.reset(seed=0)
    occ = env.occupancy
    assert info["start_snap"] >= 0.8 - 1e-6  # out of the 1 m pillar, plus the agent radius
    assert occ.component_of(info["pose"][:3]) == occ.largest_component
    assert "not navigable" in caplog.text and math.isfinite(info["geodesic_distance"])
    _, info = env.reset(seed=0, options={"start": (1.0, 1.0, 0.0)})
    assert info["start_snap"] == 0.0
    env.close()


def test_the_papers_training_protocols_by_name(two_rooms):
    from vlnverse.envs.protocols import OFFLINE_MAX_STEPS, ONLINE_ORACLE_STOP

    offline = vlnverse.envs.make(two_rooms, protocol="offline_training")
    assert offline.unwrapped.max_episode_steps == OFFLINE_MAX_STEPS == 200
    space = offline.observation_space
    assert space["rgb"].shape == (224, 224, 3) and space["depth"].shape == (256, 256, 1)
    assert space["depth"].high.max() == 1.0  # normalized over 10 m (C.2.1)
    offline.close()
    online = vlnverse.envs.make(two_rooms, protocol="online_training", sensors=(), max_episode_steps=80)
    base = online.unwrapped
    assert base.oracle_stop_distance == ONLINE_ORACLE_STOP == 1.5 and base.physics.mode == "slide"
    assert base.max_episode_steps == 80  # explicit keywords win over the protocol's
    online.close()
    with pytest.raises(ConfigError, match="unknown protocol 'online'; valid: offline_training, online_training"):
        vlnverse.envs.make(two_rooms, protocol="online")


def test_off_map_starts_are_refused_like_goals_and_closed_envs_say_so(two_rooms):
    from vlnverse.errors import InvalidActionError, NavigationError

    env = NavEnv(two_rooms, sensors=(), start=(500.0, 500.0, 0.0), goal=(1.0, 1.0))
    with pytest.raises(NavigationError, match=r"start \(500, 500\) is off the map of box_scene.usda \(x -0.15..8.15"):
        env.reset(seed=0)
    _, info = env.reset(seed=0, options={"start": (1.0, 1.0, 0.0)})
    assert info["start_snap"] == 0.0
    with pytest.raises(InvalidActionError, match="got True"):
        env.step(True)  # not MOVE_FORWARD, though True == 1
    env.close()
    with pytest.raises(SimulationError, match="the env is closed"):
        env.step(1)
