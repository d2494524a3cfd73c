"""PointNav end to end: ``vlnverse datagen --tasks pointnav``, the env's GPS+compass goal,
``vlnverse eval --task pointnav`` (the oracle reaches every goal under Strict and Tel-Hop)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from tests.bundled import BUNDLED_SCENES, REPO
from vlnverse.envs.nav_env import NavEnv
from vlnverse.errors import ConfigError
from vlnverse.tasks.dataset import EpisodeDataset
from vlnverse.tasks.generate import GenerationConfig
from vlnverse.tasks.pointnav import PointNavConfig, goal_in_words


def vlnverse(*args):
    return subprocess.run([sys.executable, "-m", "vlnverse", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, timeout=600)


@pytest.fixture(scope="module")
def pointnav_dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("pointnav") / "ds"
    result = vlnverse("datagen", "--scenes", BUNDLED_SCENES, "--out", out, "--tasks", "pointnav", "--per-scene", "3",
                      "--no-report", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["episodes"] == 9
    return out


def test_datagen_makes_pointnav_episodes_with_habitat_radius(pointnav_dataset):
    episodes = EpisodeDataset.open(pointnav_dataset).episodes(task="pointnav")
    assert len(episodes) == 9 and {e.scene_id for e in episodes} == {"scene_0000", "scene_0001", "scene_0002"}
    for e in episodes:
        assert len(e.goals) == 1 and e.goals[0].radius == 0.2
        assert 1.0 <= e.geodesic_distance <= 30.0 and e.instruction.text.startswith("Go to the point ")
        assert e.instruction.text == goal_in_words(e.start_position, e.start_yaw, e.goals[0].position)


def test_pointnav_settings_are_a_config_value():
    config = GenerationConfig(tasks=("pointnav",), families={"pointnav": {"success_distance": 0.36}})
    assert config.settings_for("pointnav") == PointNavConfig(success_distance=0.36)
    assert GenerationConfig(tasks=("pointnav",)).settings_for("pointnav").success_distance == 0.2
    with pytest.raises(ConfigError, match="unknown key"):
        GenerationConfig(families={"pointnav": {"radius": 1.0}})
    with pytest.raises(ConfigError, match="success_distance < min_distance"):
        PointNavConfig(success_distance=2.0)


def test_env_observes_the_goal_as_distance_and_heading(pointnav_dataset):
    env = NavEnv(dataset=pointnav_dataset, task="pointnav", sensors=(), renderer="tiny", physics="tel_hop")
    try:
        assert env.observation_space["pointgoal_with_gps_compass"].shape == (2,)
        obs, info = env.reset(seed=0)
        goal = np.asarray(env.episode.goals[0].position[:2])
        rho, phi = obs["pointgoal_with_gps_compass"]
        assert rho == pytest.approx(np.linalg.norm(goal - info["pose"][:2]), abs=1e-5)
        bearing = math.atan2(goal[1] - info["pose"][1], goal[0] - info["pose"][0])
        assert math.cos(phi) == pytest.approx(math.cos(bearing - info["pose"][3]), abs=1e-5)
        assert env.observation_space.contains(obs)
        turned, *_ = env.step(2)  # TURN_LEFT: the goal's bearing moves right by the turn
        turn = math.radians(env.action_spec.turn_deg)
        assert turned["pointgoal_with_gps_compass"][0] == pytest.approx(rho, abs=1e-4)
        assert math.sin(turned["pointgoal_with_gps_compass"][1] - (phi - turn)) == pytest.approx(0.0, abs=1e-3)
    finally:
        env.close()


@pytest.mark.slow
def test_eval_oracle_reaches_every_pointnav_goal_under_strict_and_tel_hop(pointnav_dataset, tmp_path):
    result = vlnverse("eval", "--dataset", pointnav_dataset, "--agent", "oracle", "--task", "pointnav",
                      "--physics", "strict,tel_hop", "--out", tmp_path / "run", "--plots", "0", "--json")
    assert result.returncode == 0, result.stderr
    overall = json.loads(result.stdout)["summary"]["overall"]
    assert {g["physics"] for g in overall} == {"strict", "tel_hop"}
    for group in overall:
        assert group["task"] == "pointnav" and group["n_episodes"] == 9
        assert group["metrics"]["SR"]["mean"] == 1.0, group
    records = [json.loads(line) for line in (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()]
    assert all(r["metrics"]["NE"] <= 0.2 for r in records)  # within habitat's radius, not the VLN 3 m
