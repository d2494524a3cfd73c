"""The agent interface, its adapters, the registry and the baselines (on a real env)."""

from __future__ import annotations

import numpy as np
import pytest

from vlnverse.envs.nav_env import NavEnv
from vlnverse.errors import ConfigError, RegistryError, SimulationError
from vlnverse.eval.agent import Agent, CallableAgent, EpisodeInfo, PolicyAgent, as_agent
from vlnverse.eval.baselines import ForwardAgent, OracleAgent, RandomAgent, RandomConfig
from vlnverse.eval.registry import AGENTS, load_agent_config, make_agent
from vlnverse.sim.testing import Box, box_room

PARTITION = Box("Wall_4", (3.95, 0.0, 0.0), (4.05, 2.8, 2.5), (0.8, 0.8, 0.75), group="Walls")


@pytest.fixture(scope="module")
def env_factory():
    scene = box_room(8.0, 4.0, extra_walls=[PARTITION])
    made = []

    def make(action_space="discrete", physics="tel_hop"):
        env = NavEnv(scene, physics=physics, action_space=action_space, sensors=(), start=(2.0, 1.0, 0.0),
                     goal=(6.0, 1.0), goal_radius=0.5)
        made.append(env)
        return env

    yield make
    for env in made:
        env.close()


def info_for(env, seed=3):
    base = env.unwrapped
    return EpisodeInfo(episode_id="e", task="fine", split="test", physics="tel_hop", scene_id="s",
                       instruction="go", action_space=base.action_space, action_space_name=base.action_spec.name,
                       action_spec=base.action_spec, max_steps=base.max_episode_steps, seed=seed)


def test_registry_names_configs_and_entry_points(tmp_path):
    assert {"random", "forward", "oracle", "replay"} <= set(AGENTS.names())
    agent = make_agent("random", {"stop_probability": 0.5, "forward_probability": 0.5})
    assert isinstance(agent, RandomAgent) and agent.config.stop_probability == 0.5
    with pytest.raises(ConfigError, match="unknown key.*stop_prob; valid keys"):
        make_agent("random", {"stop_prob": 0.1})
    with pytest.raises(ConfigError, match="must be <= 1"):
        make_agent("random", {"stop_probability": 0.5, "forward_probability": 0.6})
    with pytest.raises(RegistryError, match="unknown agent 'nope'; valid names: arna, cma, discussnav, .*forward, .*oracle, random, .*replay, seq2seq"):
        make_agent("nope")
    crash = make_agent("tests.eval.agents_for_tests:CrashingAgent")
    assert type(crash).__name__ == "CrashingAgent"
    config = tmp_path / "agent.yaml"
    config.write_text("stop_probability: 0.1\n")
    assert load_agent_config(config) == {"stop_probability": 0.1}
    config.write_text("- a list\n")
    with pytest.raises(ConfigError, match="must be a mapping"):
        load_agent_config(config)
    with pytest.raises(ConfigError, match="cannot read agent config"):
        load_agent_config(tmp_path / "missing.yaml")


def test_adapters_wrap_callables_and_policies(env_factory):
    env = env_factory()
    obs, _ = env.reset(seed=0)
    fn_agent = as_agent(lambda observation: 1, sensors=())
    assert isinstance(fn_agent, CallableAgent) and fn_agent.act(obs) == 1

    class SB3Like:
        def __init__(self):
            self.calls = []

        def predict(self, observation, state=None, deterministic=False):
            self.calls.append((state, deterministic))
            return 2, (state or 0) + 1

    policy = SB3Like()
    agent = as_agent(policy)
    assert isinstance(agent, PolicyAgent)
    agent.reset(info_for(env))
    assert [agent.act(obs), agent.act(obs)] == [2, 2]
    assert policy.calls == [(None, True), (1, True)]  # recurrent state is threaded through

    class WithAct:
        sensors = ()

        def reset(self):
            self.n = 0

        def act(self, observation):
            self.n += 1
            return 3

        def trace(self):
            return {"n": self.n}

    wrapped = as_agent(WithAct())
    wrapped.reset(info_for(env))
    wrapped.act(obs)
    assert wrapped.trace() == {"n": 1} and wrapped.sensors == ()
    plain = Agent()
    assert as_agent(plain) is plain
    with pytest.raises(ConfigError, match="cannot use int as an agent"):
        as_agent(5)


def test_random_agent_is_seeded_and_follows_its_distribution(env_factory):
    env = env_factory()
    agent = RandomAgent(RandomConfig(stop_probability=0.1, forward_probability=0.6))
    agent.reset(info_for(env, seed=11))
    first = [agent.act({}) for _ in range(4000)]
    agent.reset(info_for(env, seed=11))
    assert [agent.act({}) for _ in range(4000)] == first
    freq = np.bincount(first, minlength=4) / len(first)
    np.testing.assert_allclose(freq, [0.1, 0.6, 0.15, 0.15], atol=0.03)
    box_env = env_factory("waypoint")
    agent.reset(info_for(box_env))
    actions = np.array([agent.act({}) for _ in range(500)])
    assert all(box_env.action_space.contains(a) for a in actions)
    assert 0.03 < np.mean(actions[:, 2] >= 0.5) < 0.2


@pytest.mark.parametrize("space", ["discrete", "waypoint", "velocity"])
def test_forward_agent_drives_straight_in_every_action_space(env_factory, space):
    env = env_factory(space)
    agent = ForwardAgent()
    agent.reset(info_for(env))
    action = agent.act({})
    assert env.action_space.contains(action) if space != "discrete" else action == 1
    _, info = env.reset(seed=0)
    _, _, terminated, _, info = env.step(action)
    assert not terminated and info["pose"][0] > 2.0 and abs(info["pose"][1] - 1.0) < 1e-3


def test_oracle_agent_reaches_the_goal_and_needs_info(env_factory):
    env = env_factory("waypoint")
    agent = OracleAgent()
    obs, info = env.reset(seed=0)
    agent.reset(info_for(env))
    with pytest.raises(SimulationError, match="no oracle_action"):
        agent.act(obs)
    agent.observe_info(info)
    for _ in range(50):
        obs, _, terminated, truncated, info = env.step(agent.act(obs))
        agent.observe_info(info)
        if terminated or truncated:
            break
    assert info["success"]


def test_a_relative_checkpoint_in_an_agent_config_is_relative_to_the_file(tmp_path, monkeypatch):
    folder = tmp_path / "agents" / "cma"
    folder.mkdir(parents=True)
    config = folder / "agent.yaml"
    config.write_text("checkpoint: cma.pt\nwaypoint_checkpoint: ../w.pt\ndevice: cpu\n")
    monkeypatch.chdir(tmp_path)
    loaded = load_agent_config("agents/cma/agent.yaml")
    assert loaded == {"checkpoint": str(folder / "cma.pt"), "waypoint_checkpoint": str(tmp_path / "agents" / "w.pt"),
                      "device": "cpu"}
    config.write_text(f"checkpoint: {tmp_path / 'abs.pt'}\n")
    assert load_agent_config(config) == {"checkpoint": str(tmp_path / "abs.pt")}
