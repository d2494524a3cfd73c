"""The task-component seam: a family registered by name adds its observation, action and
success rule to NavEnv without NavEnv knowing it, and every env carries the idle ``info`` keys."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env

import vlnverse.tasks.registry as task_registry
from tests.envs.conftest import SMALL_SENSORS
from vlnverse.envs.nav_env import NavEnv
from vlnverse.envs.tasks import StepOutcome, TaskComponent, component_classes, wanted_components
from vlnverse.errors import ConfigError
from vlnverse.tasks.episode import TASKS
from vlnverse.tasks.registry import TaskFamily, task_families, task_family


class BeaconTask(TaskComponent):
    """A toy family: observes a counter, adds a 'beacon' action, and a STOP succeeds only after it."""

    idle_info = {"beacons": 0}
    action_count = 1

    @classmethod
    def wanted(cls, task: str | None, settings: Mapping[str, Any]) -> bool:
        return task == "beacon"

    def spaces(self, max_text, charset):
        return {"beacon": spaces.Discrete(100)}

    def reset(self, options):
        self.count = 0

    def act(self, request):
        self.count += 1
        return StepOutcome()

    def judge(self, reached, pose):
        return self.count > 0

    def observe(self):
        return {"beacon": self.count}

    def info(self):
        return {"beacons": self.count}


@pytest.fixture
def beacon_family(monkeypatch):
    families = dict(task_registry._FAMILIES)
    families["beacon"] = TaskFamily("beacon", "Beacon", component=f"{__name__}:BeaconTask")
    monkeypatch.setattr(task_registry, "_FAMILIES", families)


def test_registry_order_is_the_task_list_and_unknown_names_list_the_valid_ones():
    assert tuple(f.name for f in task_families()) == TASKS
    assert [name for name, _ in component_classes()] == [f.name for f in task_families() if f.component]
    with pytest.raises(ConfigError, match="valid: fine, coarse"):
        task_family("nope")
    assert wanted_components("fine") == wanted_components("objectnav") == ("long_horizon", "objectnav")
    assert "dialogue" in wanted_components("dialogue") and "eqa" in wanted_components("eqa")


def test_a_registered_component_joins_the_env_without_changing_it(beacon_family, two_rooms):
    env = NavEnv(two_rooms, task="beacon", sensors=SMALL_SENSORS, renderer="tiny", start=(2.0, 1.0, 0.0),
                 goal=(2.2, 1.0), goal_radius=1.0)
    try:
        check_env(env, skip_render_check=True)
        assert env.action_space == spaces.Discrete(5) and "beacon" in env.observation_space.spaces
        obs, info = env.reset(seed=0)
        assert obs["beacon"] == 0 and info["beacons"] == 0
        _, _, terminated, _, info = env.step(0)  # STOP at the goal, no beacon yet: the toy rule says no
        assert terminated and not info["success"] and info["fail_reason"] == "stop"
        env.reset(seed=0)
        obs, _, terminated, _, info = env.step(4)  # the family's own action id
        assert not terminated and obs["beacon"] == 1 and info["beacons"] == 1
        assert np.allclose(info["pose"][:2], (2.0, 1.0))  # its action does not move the agent
        _, _, terminated, _, info = env.step(0)
        assert terminated and info["success"]
    finally:
        env.close()
    plain = NavEnv(two_rooms, sensors=(), start=(2.0, 1.0, 0.0), goal=(2.2, 1.0))
    try:
        _, info = plain.reset(seed=0)
        assert info["beacons"] == 0 and "beacon" not in plain.observation_space.spaces  # idle keys only
        assert plain.action_space == spaces.Discrete(4)
        assert plain.components.privileged_info() == ("eqa_answer",)
        assert set(plain.components.privileged_info()) <= set(info)
    finally:
        plain.close()


def test_set_task_gives_an_env_the_components_and_spaces_of_one_built_for_the_task(two_rooms):
    def built(task):
        return NavEnv(two_rooms, task=task, sensors=SMALL_SENSORS, renderer="tiny", start=(2.0, 1.0, 0.0),
                      goal=(2.2, 1.0), goal_radius=1.0)

    env, dialogue = built("coarse"), built("dialogue")
    try:
        env.set_task("dialogue")
        assert env.action_space == dialogue.action_space == spaces.Discrete(5) and env.ask_action == 4
        assert env.observation_space == dialogue.observation_space
        assert [type(p) for p in env.components.parts] == [type(p) for p in dialogue.components.parts]
        env.reset(seed=0)
        obs, _, terminated, _, info = env.step(env.ask_action)
        assert not terminated and obs["oracle_answer"] and info["questions_asked"] == 1
        env.set_task("coarse")
        assert env.action_space == spaces.Discrete(4) and env.ask_action is None
        assert "oracle_answer" not in env.observation_space.spaces
        with pytest.raises(ConfigError, match="not task settings: colour; valid: dialogue"):
            env.set_task("coarse", colour="red")
    finally:
        env.close()
        dialogue.close()
