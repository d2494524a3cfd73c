"""The agent interface the evaluation harness drives, and adapters for plain policies.

An agent is reset once per episode with an :class:`EpisodeInfo` and then asked for one
action per step. The harness also hands it the env's ``info`` after every reset and step
through :meth:`Agent.observe_info`; that dict is *privileged* (it holds the oracle action
and the geodesic distance to the goal), so only reference agents (``oracle``, ``replay``)
read it; agents under evaluation should ignore it.

Anything with an ``act(observation)`` method, a stable-baselines-style
``predict(observation) -> (action, state)`` method, or any callable ``f(observation)``
becomes an agent through :func:`as_agent`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vlnverse.errors import ConfigError


@dataclass(frozen=True)
class Ask:
    """An action that asks the dialogue oracle a free-text question instead of moving.

    The runner passes it to ``env.unwrapped.ask(question)``: a step (it counts against
    the step budget); the answer is the next observation's ``oracle_answer``. Only
    valid when the env has dialogue (the observation has ``oracle_answer``).
    """

    question: str


@dataclass(frozen=True)
class Answer:
    """EQA: answer option ``index`` (0 = A) of the episode's question; ends the episode.

    The runner passes it to ``env.unwrapped.answer(index)`` (any action space; a discrete
    agent may return ``env.unwrapped.answer_action(index)`` instead). A bad index ends the
    episode with an ``invalid_action`` error (outcome ``inconclusive``).
    """

    index: int


#: Why an EQA episode ended without an answer (``outcome_reason`` of an ``inconclusive`` outcome).
OUTCOME_REASONS = ("step_limit", "time_limit", "cost_limit", "function_call_error", "perception_error",
                   "statement_limit", "gave_up", "no_answer", "collision", "error")


@dataclass(frozen=True)
class Inconclusive:
    """End the episode without an answer, saying why (one of :data:`OUTCOME_REASONS`).

    An agent that runs out of its own budget (time, cost) or whose tool calls failed
    returns this instead of an action; the record gets ``outcome = "inconclusive"`` and
    ``outcome_reason = reason``. Valid on every task (the episode simply ends).
    """

    reason: str

    def __post_init__(self) -> None:
        if self.reason not in OUTCOME_REASONS:
            raise ConfigError(f"unknown outcome reason {self.reason!r}; valid: {', '.join(OUTCOME_REASONS)}")


def json_action(action: Any, decimals: int = 6) -> Any:
    """``action`` as JSON: numbers rounded to ``decimals``, arrays as lists, :class:`Ask`,
    :class:`Answer` and :class:`Inconclusive` as one-key objects, anything else as its ``repr``."""
    if isinstance(action, Ask):
        return {"ask": action.question}
    if isinstance(action, Answer):
        return {"answer": json_action(action.index, decimals)}
    if isinstance(action, Inconclusive):
        return {"inconclusive": action.reason}
    if isinstance(action, (bool, np.bool_)):
        return bool(action)
    if isinstance(action, (int, np.integer)):
        return int(action)
    if isinstance(action, (float, np.floating)):
        return round(float(action), decimals)
    if isinstance(action, np.ndarray):
        return [round(float(v), decimals) for v in action.reshape(-1)]
    if isinstance(action, (list, tuple)):
        return [json_action(v, decimals) for v in action]
    if isinstance(action, Mapping):
        return {str(k): json_action(v, decimals) for k, v in action.items()}
    return repr(action)


@dataclass(frozen=True)
class EpisodeInfo:
    """What an agent learns about an episode when it is reset.

    Attributes:
        episode_id: The episode's id in its dataset.
        task: Task name (``fine``, ``coarse``, ``visual_reference``, ``long_horizon``, ``dialogue``).
        split: Dataset split.
        physics: Physics mode of this run (``strict``, ``slide``, ``tel_hop``).
        scene_id: Scene identifier.
        instruction: The instruction text.
        subgoal_instructions: Long-horizon: one instruction per sub-goal — privileged (the
            env observes only the chained instruction), so it is filled only for an agent
            whose ``privileged`` lists ``"subgoal_instructions"`` (then in ``run.json``), and
            empty for every other agent.
        reference_image: Visual-reference: absolute path of the goal image, if any.
        action_space: The env's gymnasium action space.
        action_space_name: ``discrete``, ``waypoint`` or ``velocity``.
        action_spec: The action-space config (step sizes, limits), a
            :class:`vlnverse.sim.actions.ActionSpaceSpec`.
        max_steps: The step budget.
        seed: A seed for the agent's own randomness, derived from the run seed and the
            episode so results do not depend on which worker runs it.
        extra: Task-specific extras: dialogue ``question_budget``; ObjectNav ``object_category`` and
            ``success_distance`` (the task's success radius, m);
            EQA ``question`` (text), ``options`` (four texts, A to D) and ``question_kind``.
    """

    episode_id: str
    task: str
    split: str
    physics: str
    scene_id: str
    instruction: str
    action_space: Any
    action_space_name: str
    max_steps: int
    seed: int
    action_spec: Any = None
    subgoal_instructions: tuple[str, ...] = ()
    reference_image: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


class Agent:
    """Base class of agents the harness can evaluate.

    Class attributes:
        action_space: The env action space the agent speaks (a name or a spec mapping
            accepted by :func:`vlnverse.sim.actions.make_action_space`).
        sensors: The sensors the agent needs (``()`` skips rendering entirely).
    """

    action_space: Any = "discrete"
    sensors: Any = ("rgb", "depth")
    privileged: tuple[str, ...] = ()
    """Privileged inputs the agent reads (recorded in ``run.json``), e.g. ``("oracle_action",)``."""

    def reset(self, episode: EpisodeInfo) -> None:
        """Start a new episode."""

    def act(self, observation: Mapping[str, Any]) -> Any:
        """The next action: an element of ``episode.action_space``, :class:`Ask`, :class:`Answer` or
        :class:`Inconclusive`."""
        raise TypeError(f"{type(self).__name__} does not implement act()")

    def observe_info(self, info: Mapping[str, Any]) -> None:
        """Receive the env's privileged ``info`` after reset and after each step."""

    def trace(self) -> Mapping[str, Any] | None:
        """The agent's decision trace of the finished episode (JSON-ready), if any.

        Recognised keys: ``waypoints`` (AORI), ``debate`` (DR/JOR/MPTR), ``tokens`` and
        ``cost``; anything else is stored as is.
        """
        return None

    def close(self) -> None:
        """Release resources (called once when the worker is done)."""


class CallableAgent(Agent):
    """An agent around ``f(observation) -> action``."""

    def __init__(self, fn: Callable[[Mapping[str, Any]], Any], *, action_space: Any = "discrete",
                 sensors: Any = ("rgb", "depth")) -> None:
        self.fn = fn
        self.action_space = action_space
        self.sensors = sensors

    def act(self, observation: Mapping[str, Any]) -> Any:
        return self.fn(observation)


class PolicyAgent(Agent):
    """An agent around a gymnasium-style policy object.

    The policy needs ``act(observation)`` or ``predict(observation) -> (action, state)``
    (stable-baselines3; called with ``deterministic=True`` and the recurrent state);
    ``reset()``/``reset(episode_info)`` and ``trace()`` are used when present.
    """

    def __init__(self, policy: Any, *, action_space: Any = None, sensors: Any = None) -> None:
        if not (hasattr(policy, "act") or hasattr(policy, "predict")):
            raise ConfigError(f"{type(policy).__name__} has neither act() nor predict()")
        self.policy = policy
        self.action_space = action_space or getattr(policy, "action_space_name", "discrete")
        self.sensors = sensors if sensors is not None else getattr(policy, "sensors", ("rgb", "depth"))
        self._state: Any = None

    def reset(self, episode: EpisodeInfo) -> None:
        self._state = None
        reset = getattr(self.policy, "reset", None)
        if callable(reset):
            try:
                reset(episode)
            except TypeError:
                reset()

    def act(self, observation: Mapping[str, Any]) -> Any:
        if hasattr(self.policy, "act"):
            return self.policy.act(observation)
        action, self._state = self.policy.predict(observation, state=self._state, deterministic=True)
        return action

    def trace(self) -> Mapping[str, Any] | None:
        trace = getattr(self.policy, "trace", None)
        return trace() if callable(trace) else None


def as_agent(obj: Any, **kwargs: Any) -> Agent:
    """``obj`` as an :class:`Agent`: agents pass through, policies and callables are wrapped.

    Args:
        obj: An :class:`Agent`, a policy with ``act``/``predict``, or a callable.
        **kwargs: ``action_space`` / ``sensors`` for the wrapper.

    Raises:
        ConfigError: ``obj`` is none of these.
    """
    if isinstance(obj, Agent):
        return obj
    if hasattr(obj, "act") or hasattr(obj, "predict"):
        return PolicyAgent(obj, **kwargs)
    if callable(obj):
        return CallableAgent(obj, **kwargs)
    raise ConfigError(f"cannot use {type(obj).__name__} as an agent: needs act(), predict() or __call__")
