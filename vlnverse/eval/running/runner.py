"""Run one agent through one episode and turn what happened into an ``episodes.jsonl`` record.

The runner records the pose after every step (the physics-visible result of each action),
the actions, per-action collision events and the STOPs, then scores the episode with
:func:`vlnverse.eval.scoring.metrics.compute_episode_metrics`.

Long-horizon episodes are played by the env as one sequential episode: the agent's
``k``-th STOP ends leg ``k`` and the env makes the next sub-goal and sub-instruction
active (``info["subgoal_stop"]``; the agent is not moved, the step budget spans the whole
episode). STOPs are judged by the metrics (SR_n is conditional), so a missed goal does not
end the episode early.

Failures of the agent are data, not crashes: an exception from the agent, or an action
the env rejects, ends the episode with ``fail_reason = "error"`` and the error message;
an episode that runs past its time limit ends with ``fail_reason = "timeout"``. Either is
scored on what it did so far (no STOP, so SR = 0). The limit is cooperative: model calls see
it as their deadline (:mod:`vlnverse.deadline`) and the runner checks it between the agent's
calls; nothing is raised into the agent's thread. An agent that does not return is stopped by
killing its worker process (:func:`vlnverse.eval.running.worker.hard_limit`). A malformed agent trace
(its trace metrics cannot be computed) fails that episode the same way
(``error_source = "trace"``).

LLM agents: with a :class:`~vlnverse.llm.budget.UsageMeter` the record gets the episode's
``llm`` usage (calls, cache hits, tokens, billed and list cost), which also feeds the
``tokens``/``cost`` metrics. An episode whose per-episode cap is spent ends with
``fail_reason = "llm_budget"``; one interrupted by the *run's* budget is not a result at
all: :class:`~vlnverse.errors.LLMBudgetExceeded` propagates so it is run again when the
run resumes. An :class:`~vlnverse.eval.agent.Ask` action asks the dialogue oracle.

EQA: an :class:`~vlnverse.eval.agent.Answer` action answers (``env.unwrapped.answer``); an
:class:`~vlnverse.eval.agent.Inconclusive` action ends any episode without a step
(``fail_reason = "inconclusive"``). EQA records get ``outcome``, ``outcome_reason``,
``answer`` and ``answer_correct`` (:mod:`vlnverse.eval.scoring.eqa`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vlnverse.deadline import EpisodeTimeout, within
from vlnverse.deadline import check as check_deadline
from vlnverse.errors import InvalidActionError, LLMBudgetExceeded, MetricsError
from vlnverse.eval.agent import Agent, Answer, Ask, EpisodeInfo, Inconclusive, json_action
from vlnverse.eval.running.store import TRACE_TEXT_CHARS, bounded, unstorable
from vlnverse.eval.scoring.episode_record import EpisodeRecord, MetricsConfig
from vlnverse.eval.scoring.eqa import episode_outcome, outcome_metrics
from vlnverse.eval.scoring.metrics import compute_episode_metrics
from vlnverse.tasks.registry import task_family

logger = logging.getLogger(__name__)

PRIVILEGED_SUBGOALS = "subgoal_instructions"
"""The ``privileged`` entry an agent declares to be told the sub-goal split (the env shows
only the chained instruction; ``run.json`` lists it)."""

POSE_DECIMALS = 4
"""Stored coordinates are rounded to 0.1 mm (metrics use the unrounded values)."""


@dataclass
class EpisodeTiming:
    """Where an episode's wall time went (seconds).

    ``total`` runs from the env's reset to the record; ``waited`` (part of it) is the wait
    for the env lock while the worker's other episodes held it; ``build`` (before it) is
    getting the episode's env, built or reused, lock waits included; ``built`` says
    whether the episode built its env (False: it reset an idle one of its worker)."""

    env: float = 0.0
    agent: float = 0.0
    total: float = 0.0
    waited: float = 0.0
    build: float = 0.0
    built: bool = False

    @property
    def harness(self) -> float:
        """Time spent neither in the env nor in the agent: the harness's own overhead."""
        return max(0.0, self.total - self.env - self.agent)


@contextlib.contextmanager
def _held(lock: Any, timing: EpisodeTiming) -> Iterator[None]:
    """``lock`` held, the wait for it counted in ``timing.waited``."""
    t0 = time.perf_counter()
    with lock:
        timing.waited += time.perf_counter() - t0
        yield


def _env_episode(episode: Any, radius: float) -> Any:
    """The env episode of ``episode``, every goal judged within ``radius`` (sequential for long-horizon)."""
    from vlnverse.envs.episode import Goal, NavEpisode

    long_horizon = episode.task == "long_horizon"
    return NavEpisode(
        episode_id=episode.episode_id,
        start=(episode.start_position[0], episode.start_position[1], episode.start_yaw),
        goals=tuple(Goal(tuple(g.position), radius) for g in episode.goals),
        instruction=episode.instruction.text,
        reference_path=episode.reference_path or None,
        sequential=long_horizon,
        subgoal_instructions=tuple(episode.instruction.subgoals) if long_horizon else (),
        source=episode,
    )


def episode_seed(seed: int, episode_id: str, physics: str) -> int:
    """A stable 63-bit seed for one (episode, physics) of a run, independent of workers."""
    import zlib

    return int(np.random.SeedSequence([seed, zlib.crc32(f"{episode_id}\x1f{physics}".encode())])
               .generate_state(2, np.uint32).view(np.uint64)[0] >> np.uint64(1))


def run_episode(
    env: Any,
    agent: Agent,
    episode: Any,
    *,
    physics: str,
    seed: int = 0,
    metrics: MetricsConfig | None = None,
    reference_image: str | None = None,
    env_lock: Any = None,
    usage: Any = None,
    timeout: float | None = None,
    on_observation: Callable[[int, Mapping[str, Any]], None] | None = None,
    timed_out: bool = False,
    trace_text_chars: int = TRACE_TEXT_CHARS,
) -> tuple[dict[str, Any], EpisodeTiming]:
    """Run ``agent`` through ``episode`` in ``env`` and return its record and timing.

    Args:
        env: A ``VLNVerse/Nav-v0`` env (:class:`vlnverse.envs.nav_env.NavEnv`) of the
            episode's scene, built with the agent's action space and sensors.
        agent: The agent.
        episode: A :class:`vlnverse.tasks.episode.Episode`.
        physics: The env's physics mode (recorded).
        seed: The run seed; the env reset and the agent get :func:`episode_seed`.
        metrics: Scoring settings.
        reference_image: Absolute path of the visual-reference image, if any (the env
            observes it when built with ``reference_image=True``).
        env_lock: A lock held around every env call (a worker running several episodes
            at once keeps its env work on one core); None: no lock.
        usage: The episode's :class:`~vlnverse.llm.budget.UsageMeter` (reset here), if any.
        timeout: Wall-clock limit (s) of the agent's part of the episode (``None``: none);
            past it the episode ends with ``fail_reason = "timeout"``.
        on_observation: Called with (step index, observation) before the agent acts on it
            (the episode viewer captures panoramas so); not timed.
        timed_out: The episode already ran past its time limit in a worker process that
            was killed for it: record it as timed out from its start, without the agent.
        trace_text_chars: The most characters kept of one text of the agent's trace (a
            model's reply); longer ones are cut and counted (``truncated``), as are
            structures nested too deeply (:func:`vlnverse.eval.running.store.bounded`).

    Returns:
        ``(record, timing)``; the record is JSON-ready (see :mod:`vlnverse.eval.running.store`).

    Raises:
        LLMBudgetExceeded: the run's LLM budget ran out during the episode (no record).
    """
    run = EpisodeRun(env, agent, episode, physics=physics, seed=seed, metrics=metrics or MetricsConfig(),
                     reference_image=reference_image, env_lock=env_lock, usage=usage, timeout=timeout,
                     on_observation=on_observation, timed_out=timed_out, trace_text_chars=trace_text_chars)
    return run.run(), run.timing


@dataclass
class Steps:
    """What the episode did, step by step: ``poses`` and ``leg_distances`` (the geodesic
    distance to the active goal) start with the reset pose, the other lists have one entry
    per step taken."""

    poses: list[np.ndarray]
    leg_distances: list[float]
    actions: list[Any] = field(default_factory=list)
    collisions: list[int] = field(default_factory=list)
    hits: dict[int, list[str]] = field(default_factory=dict)  # step → categories a collision touched
    stops: list[int] = field(default_factory=list)  # the pose index each STOP was issued at

    def add(self, action: Any, info: Mapping[str, Any]) -> None:
        """Book one step: its JSON action and what the env's ``info`` says happened."""
        self.actions.append(json_action(action))
        self.collisions.append(int(bool(info["collision"])))
        if info["collision"]:
            self.hits[len(self.collisions) - 1] = sorted({str(c) for c in info.get("contact_categories") or ()})
        self.poses.append(np.asarray(info["pose"], dtype=np.float64))
        self.leg_distances.append(float(info["geodesic_distance"]))

    def trim(self) -> None:
        """Drop a step interrupted between the env's answer and its bookkeeping."""
        steps = min(len(self.actions), len(self.collisions), len(self.poses) - 1, len(self.leg_distances) - 1)
        del self.actions[steps:], self.collisions[steps:], self.poses[steps + 1:], self.leg_distances[steps + 1:]
        self.stops[:] = [s for s in self.stops if s < steps]
        self.hits = {k: v for k, v in self.hits.items() if k < steps}


@dataclass
class Ending:
    """How the episode ended: ``fail_reason`` (None while it runs), and for a failure the
    error message and its source (agent, env, invalid_action, trace, timeout)."""

    fail_reason: str | None = None
    error: str | None = None
    error_source: str | None = None
    agent_reason: str | None = None  # an Inconclusive action's reason


class EpisodeRun:
    """One agent's run through one episode: the loop's state (:class:`Steps`, :class:`Ending`,
    the current observation and ``info``, the active leg) and the record made from it.
    :func:`run_episode` documents the arguments."""

    def __init__(self, env: Any, agent: Agent, episode: Any, *, physics: str, seed: int, metrics: MetricsConfig,
                 reference_image: str | None, env_lock: Any, usage: Any, timeout: float | None,
                 on_observation: Callable[[int, Mapping[str, Any]], None] | None, timed_out: bool,
                 trace_text_chars: int) -> None:
        self.env, self.base, self.agent, self.episode, self.physics = env, env.unwrapped, agent, episode, physics
        if task_family(episode.task).own_radius:  # e.g. ObjectNav's, EQA's: stored in the goals at generation
            metrics = dataclasses.replace(metrics, success_distance=episode.goals[0].radius)
        self.metrics, self.radius = metrics, float(metrics.success_distance)
        self.seed = episode_seed(seed, episode.episode_id, physics)
        self.reference_image, self.usage, self.timeout = reference_image, usage, timeout
        self.env_lock = env_lock if env_lock is not None else contextlib.nullcontext()
        self.on_observation, self.timed_out, self.trace_text_chars = on_observation, timed_out, trace_text_chars
        self.legs = len(episode.goals) if episode.task == "long_horizon" else 1
        self.timing = EpisodeTiming()
        self.ending = Ending()
        self.leg = 0
        self.obs: Any = None
        self.info: dict[str, Any] = {}
        self.steps: Steps | None = None

    def run(self) -> dict[str, Any]:
        """Play the episode and return its JSON-ready record (the time taken is in :attr:`timing`)."""
        if self.usage is not None:
            self.usage.reset_counts()
        t_start = time.perf_counter()
        self._reset()
        try:
            if self.timed_out:
                raise EpisodeTimeout
            with within(self.timeout):
                self._play()
        except EpisodeTimeout:
            self._time_out()
        self.steps.trim()
        poses = np.array(self.steps.poses)  # (steps + 1, 4): x, y, z, yaw
        trace = self._trace()
        refused = getattr(self.usage, "refused", None)
        if refused is not None and refused.scope == "run":
            raise refused  # the agent went on after the refusal, but the run stops here
        llm = self._llm_usage()
        if llm is not None and llm["calls"]:
            tokens: Any = {"prompt": llm["prompt_tokens"], "completion": llm["completion_tokens"]}
            cost = llm["cost_usd"]
        else:
            tokens = (trace or {}).get("tokens")
            cost = (trace or {}).get("cost", (trace or {}).get("cost_usd"))
        record, scores = self._score(poses[:, :3], trace, tokens, cost)
        outcome = episode_outcome(self.ending.fail_reason, self.info, self.ending.agent_reason) \
            if self.episode.task == "eqa" else None
        if outcome is not None:
            scores.update(outcome_metrics(outcome["outcome"]))
        self.timing.total = time.perf_counter() - t_start
        return self._output(record, scores, poses, trace, llm, outcome)

    def _episode_info(self) -> EpisodeInfo:
        episode, base = self.episode, self.base
        eqa = episode.question if episode.task == "eqa" else None
        return EpisodeInfo(
            episode_id=episode.episode_id, task=episode.task, split=episode.split, physics=self.physics,
            scene_id=episode.scene_id, instruction=episode.instruction.text, action_space=base.action_space,
            action_space_name=base.action_spec.name, action_spec=base.action_spec,
            max_steps=base.max_episode_steps, seed=self.seed,
            subgoal_instructions=tuple(episode.instruction.subgoals) if PRIVILEGED_SUBGOALS in
            getattr(self.agent, "privileged", ()) else (), reference_image=self.reference_image,
            extra=({"question_budget": episode.question_budget} if episode.question_budget is not None else {})
            | ({"object_category": episode.goals[0].category, "success_distance": self.radius}
               if episode.task == "objectnav" else {})
            | ({"question": eqa.text, "options": eqa.options, "question_kind": eqa.kind} if eqa else {}),
        )

    def _reset(self) -> None:
        options: dict[str, Any] = {"episode": _env_episode(self.episode, self.radius)}
        if self.reference_image and "reference_image" in self.base.observation_space.spaces:
            options["reference_image"] = self.reference_image
        with _held(self.env_lock, self.timing):
            t0 = time.perf_counter()
            self.obs, self.info = self.env.reset(seed=self.seed % (2**31), options=options)
            self.timing.env += time.perf_counter() - t0
        self.steps = Steps([np.asarray(self.info["pose"], dtype=np.float64)],
                           [float(self.info["geodesic_distance"])])

    def _fail(self, source: str, exc: BaseException) -> None:
        """End the episode with ``exc`` from ``source`` (the run's LLM budget is re-raised)."""
        ending = self.ending
        ending.error = f"{type(exc).__name__}: {exc}"
        ending.error_source, ending.fail_reason = source, "error"
        if isinstance(exc, LLMBudgetExceeded):
            if exc.scope == "run":
                raise exc
            ending.fail_reason = "llm_budget"
        logger.warning("episode %s (%s): %s error: %s", self.episode.episode_id, self.physics, source, ending.error)
        logger.debug("%s", traceback.format_exc())

    def _time_out(self) -> None:
        error = f"the episode ran longer than {self.timeout or 0:g} s"
        if self.timed_out:
            error += " (it did not stop, so its worker process was killed)"
        self.ending.error, self.ending.error_source, self.ending.fail_reason = error, "timeout", "timeout"
        logger.warning("episode %s (%s): %s", self.episode.episode_id, self.physics, error)

    def _agent_call(self, call: Callable[..., Any], *args: Any) -> Any:
        """``call(*args)``, its time counted as the agent's (exceptions propagate)."""
        t0 = time.perf_counter()
        result = call(*args)
        self.timing.agent += time.perf_counter() - t0
        return result

    def _play(self) -> None:
        try:
            self._agent_call(self.agent.reset, self._episode_info())
            self._agent_call(self.agent.observe_info, self.info)
        except Exception as exc:  # noqa: BLE001 - any agent failure is recorded, not raised
            self._fail("agent", exc)
        while self.ending.fail_reason is None:
            check_deadline()  # the time limit is cooperative: it is checked between calls
            if self.on_observation is not None:
                self.on_observation(len(self.steps.actions), self.obs)
            try:
                action = self._agent_call(self.agent.act, self.obs)
                check_deadline()  # an action that came too late is not taken
            except Exception as exc:  # noqa: BLE001
                self._fail("agent", exc)
                break
            if isinstance(action, Inconclusive):
                self.ending.fail_reason, self.ending.agent_reason = "inconclusive", action.reason
                break
            if not self._step(action):
                break
            if self.ending.fail_reason is None:
                try:
                    self._agent_call(self.agent.observe_info, self.info)
                except Exception as exc:  # noqa: BLE001
                    self._fail("agent", exc)

    def _step(self, action: Any) -> bool:
        """Take ``action`` in the env and book it; False when the env failed (the episode's error)."""
        try:
            with _held(self.env_lock, self.timing):
                t0 = time.perf_counter()
                if isinstance(action, Ask):
                    self.obs, _, terminated, truncated, self.info = self.base.ask(action.question)
                elif isinstance(action, Answer):
                    self.obs, _, terminated, truncated, self.info = self.base.answer(action.index)
                else:
                    self.obs, _, terminated, truncated, self.info = self.env.step(action)
                self.timing.env += time.perf_counter() - t0
        except InvalidActionError as exc:
            self._fail("invalid_action", exc)
            return False
        except Exception as exc:  # noqa: BLE001 - a broken env step is this episode's error
            self._fail("env", exc)
            return False
        info, steps = self.info, self.steps
        steps.add(action, info)
        stopped = (terminated and info.get("fail_reason") != "collision") or bool(info.get("subgoal_stop"))
        if stopped:
            steps.stops.append(len(steps.poses) - 2)  # issued at the pose before the (motionless) STOP
            self.leg += 1
        if terminated and not stopped:
            self.ending.fail_reason = "collision"
        elif stopped and self.leg >= self.legs:
            self.ending.fail_reason = "stop"
        elif len(steps.actions) >= self.base.max_episode_steps or truncated:
            self.ending.fail_reason = "step_budget"
        return True

    def _trace(self) -> dict[str, Any] | None:
        """The agent's trace, bounded and storable (a trace that cannot be stored fails the episode)."""
        episode_id = self.episode.episode_id
        trace = None
        try:
            trace = None if self.timed_out else self.agent.trace()
        except Exception as exc:  # noqa: BLE001 - a broken trace loses the trace only
            logger.warning("episode %s: agent trace failed: %s", episode_id, exc)
        trace = dict(trace) if isinstance(trace, Mapping) else None
        if trace is not None:
            trace, cut = bounded(trace, self.trace_text_chars)
            if cut:
                trace["truncated"] = cut
                logger.warning("episode %s: %d text(s) or structure(s) of the agent trace cut to fit", episode_id, cut)
        if trace is not None and (problem := unstorable(trace)) is not None:  # fails this episode, not the run
            self._fail("trace", MetricsError(f"the agent trace cannot be stored: {problem}"))
            trace = None
        return trace

    def _llm_usage(self) -> dict[str, Any] | None:
        usage = self.usage
        llm = usage.summary() if usage is not None else None
        if llm is not None and getattr(usage, "features_used", None):
            llm["features"] = {k: list(v) for k, v in usage.features_used.items()}  # the worker's client so far
        return llm

    def _score(self, positions: np.ndarray, trace: dict[str, Any] | None, tokens: Any,
               cost: Any) -> tuple[EpisodeRecord, dict[str, Any]]:
        """The episode's :class:`EpisodeRecord` and its metrics (a malformed trace fails the episode)."""
        episode, base, steps = self.episode, self.base, self.steps
        goals = np.array([g.position for g in episode.goals], dtype=np.float64)
        if episode.task == "long_horizon":
            goal_distances = base.goal_distances(positions[:, :2])  # the fields the env built at reset
        else:
            goal_distances = np.array(steps.leg_distances)[None, :]  # to the nearest goal when any goal counts
            goals = goals[[int(np.argmin(base.goal_distances(positions[-1:, :2])[:, 0]))]] if len(goals) > 1 else goals
        stop_visible = None
        if episode.task == "objectnav":
            from vlnverse.tasks.objectnav import stops_with_target_in_view

            stop_visible = stops_with_target_in_view(base, episode, positions, steps.stops)
        reference = np.array(episode.reference_path, dtype=np.float64) if episode.reference_path else None
        record = EpisodeRecord(
            positions=positions, goals=goals, geodesic_distance=episode.geodesic_distance,
            actions=tuple(steps.actions), stops=tuple(steps.stops),
            collisions=np.array(steps.collisions, dtype=np.float64), reference_path=reference,
            goal_distances=goal_distances, fail_reason=self.ending.fail_reason, agent_trace=trace, tokens=tokens,
            cost=cost, stop_visible=stop_visible, episode_id=episode.episode_id, task=episode.task,
            split=episode.split, physics=self.physics,
        )
        try:
            scores = compute_episode_metrics(record, self.metrics).to_dict()
        except MetricsError as exc:  # a malformed trace fails this episode, not the run
            if trace is None:
                raise
            self._fail("trace", exc)
            record = dataclasses.replace(record, agent_trace=None, fail_reason=self.ending.fail_reason)
            scores = compute_episode_metrics(record, self.metrics).to_dict()
        for key in ("episode_id", "task", "split", "physics", "fail_reason", "geodesic"):
            scores.pop(key, None)
        return record, scores

    def _output(self, record: EpisodeRecord, scores: dict[str, Any], poses: np.ndarray, trace: dict[str, Any] | None,
                llm: dict[str, Any] | None, outcome: dict[str, Any] | None) -> dict[str, Any]:
        """The JSON-ready ``episodes.jsonl`` record (``trace`` kept when its metrics failed, for reading)."""
        episode, ending = self.episode, self.ending
        out = {
            "episode_id": episode.episode_id,
            "task": episode.task,
            "split": episode.split,
            "physics": self.physics,
            "scene_id": episode.scene_id,
            "instruction": episode.instruction.text,
            "geodesic_distance": episode.geodesic_distance,
            "metrics": scores,
            "trajectory": np.round(poses[:, :3], POSE_DECIMALS).tolist(),
            "headings": np.round(poses[:, 3], POSE_DECIMALS).tolist(),
            "reference_path": [list(p) for p in episode.reference_path],
            "goals": [{"position": list(g.position), "radius": self.radius} for g in episode.goals],
            "goal_distances": [[round(v, POSE_DECIMALS) if math.isfinite(v) else None for v in row]
                               for row in np.asarray(record.goal_distances).tolist()],
            "actions": self.steps.actions,
            "collisions": self.steps.collisions,
            "hits": {str(k): v for k, v in sorted(self.steps.hits.items())},
            "action_space": self.base.action_spec.name,
            "stops": self.steps.stops,
            "fail_reason": ending.fail_reason,
            "error": ending.error,
            "error_source": ending.error_source,
            "agent_trace": trace,
        }
        if llm is not None:
            out["llm"] = llm
        if record.stop_visible is not None:
            out["stop_visible"] = list(record.stop_visible)
        if outcome is not None:
            out.update(outcome)
        return out
