"""Baseline agents: ``random``, ``forward`` and ``oracle`` (the sanity floor and ceiling).

- ``random`` draws actions from a fixed distribution; for the discrete space the default
  is VLN-CE's random baseline (the train-split action frequencies: STOP 2 %, FORWARD 68 %,
  LEFT 15 %, RIGHT 15 %). Continuous spaces draw uniformly from the action box and STOP
  with ``stop_probability``. Its randomness comes from :attr:`EpisodeInfo.seed`, so an
  episode gives the same actions on any worker.
- ``forward`` always moves straight ahead and never stops (the step budget ends it;
  in ``strict`` the first wall does).
- ``oracle`` follows the env's ``info["oracle_action"]`` (the shortest path descending
  the goal's geodesic distance field): SR 100 % in ``tel_hop`` is its sanity figure.

EQA (``task == "eqa"``): where ``random`` would STOP it answers an option drawn uniformly
(chance: 25 %); ``forward`` never answers (inconclusive: step limit); ``oracle`` walks to
the nearest relevant target and, where it would STOP, answers with the env's privileged
``info["eqa_answer"]`` (100 % correct when it gets there).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from vlnverse.errors import ConfigError, SimulationError
from vlnverse.eval.agent import Agent, Answer, EpisodeInfo
from vlnverse.eval.scoring.episode_record import is_stop_action
from vlnverse.tasks.episode import OPTION_COUNT


@dataclass(frozen=True)
class RandomConfig:
    """Settings of the ``random`` agent.

    Attributes:
        action_space: Env action space name (``discrete``, ``waypoint``, ``velocity``).
        stop_probability: Chance of STOP at each step.
        forward_probability: Discrete: chance of MOVE_FORWARD (the rest splits evenly
            between the two turns).
    """

    action_space: str = "discrete"
    stop_probability: float = 0.02
    forward_probability: float = 0.68

    def __post_init__(self) -> None:
        for name in ("stop_probability", "forward_probability"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
                raise ConfigError(f"RandomConfig.{name} must be in [0, 1], got {value!r}")
        if self.stop_probability + self.forward_probability > 1.0 + 1e-9:
            raise ConfigError("RandomConfig: stop_probability + forward_probability must be <= 1")


class RandomAgent(Agent):
    """Random actions (see the module docs)."""

    config_class = RandomConfig
    sensors = ()

    def __init__(self, config: RandomConfig | None = None) -> None:
        self.config = config or RandomConfig()
        self.action_space = self.config.action_space
        self._rng = np.random.default_rng(0)
        self._space: Any = None
        self._kind = "discrete"
        self._eqa = False

    def reset(self, episode: EpisodeInfo) -> None:
        self._rng = np.random.default_rng(episode.seed)
        self._space = episode.action_space
        self._kind = episode.action_space_name
        self._eqa = episode.task == "eqa"

    def act(self, observation: Mapping[str, Any]) -> Any:
        cfg, rng = self.config, self._rng
        if self._kind == "discrete":
            turn = (1.0 - cfg.stop_probability - cfg.forward_probability) / 2.0
            action: Any = int(rng.choice(4, p=[cfg.stop_probability, cfg.forward_probability, turn, turn]))
        else:
            low, high = self._space.low.astype(np.float64), self._space.high.astype(np.float64)
            action = rng.uniform(low, high)
            action[-1] = 1.0 if rng.random() < cfg.stop_probability else 0.0
            action = action.astype(np.float32)
        if self._eqa and _stops(action):
            return Answer(int(rng.integers(OPTION_COUNT)))
        return action


@dataclass(frozen=True)
class ForwardConfig:
    """Settings of the ``forward`` agent.

    Attributes:
        action_space: Env action space name.
        waypoint_distance: Waypoint space: metres per step (clipped to the space).
    """

    action_space: str = "discrete"
    waypoint_distance: float = 0.25

    def __post_init__(self) -> None:
        if not isinstance(self.waypoint_distance, (int, float)) or not self.waypoint_distance > 0:
            raise ConfigError(f"ForwardConfig.waypoint_distance must be positive, got {self.waypoint_distance!r}")


class ForwardAgent(Agent):
    """Always straight ahead, never STOP."""

    config_class = ForwardConfig
    sensors = ()

    def __init__(self, config: ForwardConfig | None = None) -> None:
        self.config = config or ForwardConfig()
        self.action_space = self.config.action_space
        self._action: Any = 1

    def reset(self, episode: EpisodeInfo) -> None:
        kind = episode.action_space_name
        if kind == "discrete":
            self._action = 1
        elif kind == "waypoint":
            r = min(self.config.waypoint_distance, float(episode.action_space.high[0]))
            self._action = np.array([r, 0.0, 0.0], dtype=np.float32)
        else:
            self._action = np.array([float(episode.action_space.high[0]), 0.0, 0.0], dtype=np.float32)

    def act(self, observation: Mapping[str, Any]) -> Any:
        return self._action


@dataclass(frozen=True)
class OracleConfig:
    """Settings of the ``oracle`` agent.

    Attributes:
        action_space: Env action space name.
    """

    action_space: str = "discrete"


class OracleAgent(Agent):
    """Follows ``info["oracle_action"]`` (privileged: the shortest-path action)."""

    config_class = OracleConfig
    sensors = ()
    privileged = ("oracle_action", "eqa_answer")

    def __init__(self, config: OracleConfig | None = None) -> None:
        self.config = config or OracleConfig()
        self.action_space = self.config.action_space
        self._next: Any = None
        self._answer: int | None = None

    def reset(self, episode: EpisodeInfo) -> None:
        self._next = None
        self._answer = None

    def observe_info(self, info: Mapping[str, Any]) -> None:
        self._next = info.get("oracle_action")
        self._answer = info.get("eqa_answer")

    def act(self, observation: Mapping[str, Any]) -> Any:
        if self._next is None:
            raise SimulationError("the env reported no oracle_action")
        action = self._next
        if isinstance(action, float) and math.isnan(action):
            raise SimulationError("the env's oracle_action is NaN")
        if self._answer is not None and _stops(action):
            return Answer(int(self._answer))
        return action


def _stops(action: Any) -> bool:
    """Whether ``action`` is STOP: discrete id 0, or a continuous action with its stop flag set."""
    if isinstance(action, np.ndarray) and action.ndim == 1:
        return bool(action[-1] >= 0.5)
    return is_stop_action(action)
