"""The machinery every LLM waypoint agent shares: perceive, prompt, ask, parse, act, trace.

One step of :class:`LLMWaypointAgent`:

1. **Perceive** from the agent's own sensors: the panorama (depth; RGB in ``vlm`` mode,
   semantics in ``gt`` mode), the bump flag, the dialogue answer, the instruction leg.
2. **Propose** candidate waypoints (:class:`~vlnverse.agents.waypoints.predictor.WaypointPredictor`);
   with none, turning in place 90° either way (:func:`~vlnverse.agents.waypoints.candidate.turn_options`),
   never STOP alone.
3. **Prompt**: the subclass fills a :class:`~vlnverse.agents.prompts.Prompt` from a
   :class:`StepView`; the base adds the reply format for the valid options.
4. **Decide**: ``samples`` completions (one request with ``n`` where the server honours
   it, else concurrent requests: :func:`~vlnverse.llm.sampling.sample_n`), asked as
   structured output (the reply's JSON schema, its ``action`` one of the options) where the
   server takes it and the prompt asks for JSON, else as text read by
   :mod:`~vlnverse.agents.parsing`; the client's ``features_used`` records which
   (``replies``: ``json_schema`` / ``text``, in ``run.json``'s ``llm_features``); the most
   frequent valid action wins (a subclass may ``pick`` otherwise). A reply with
   no valid action (``empty`` / ``malformed`` / ``unknown_id``, counted as
   ``parse_failures``) gets **one repair prompt** (``repairs``); if that fails too the
   **fallback** (``fallbacks``) is the candidate nearest straight ahead (the longer one
   on a tie; the left turn when only turns are offered). A failed reply is
   never turned into STOP. Every prompt is fitted to the model's context window first
   (:mod:`vlnverse.agents.fitting`); a request that does not fit even so is a bad request
   (``failures["too_long"]``) and goes to the fallback at once (a repair would be longer).
5. **Act**: a candidate → waypoint ``(distance, heading, 0)``; STOP → ``(0, 0, 1)``;
   ASK → :class:`~vlnverse.eval.agent.Ask` (dialogue episodes, within the budget).
6. **Remember**: the subclass updates its memory (summary, map, plan) from the decision.

Subclasses set :attr:`system_prompt` and implement :meth:`build_prompt`,
:meth:`reply_fields` and :meth:`remember`; agents that call the model several times per
step (experts, debates, tools) override :meth:`LLMWaypointAgent.decide`, making the
intermediate calls with :meth:`~LLMWaypointAgent.consult` and the final one with
:meth:`~LLMWaypointAgent.choose`. Agents hold no module-level state: one
instance runs one episode at a time, many instances may run in threads.
"""

from __future__ import annotations

import abc
import logging
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from vlnverse.agents.config import LLMAgentConfig
from vlnverse.agents.fitting import Fit, cap, cap_items, fit_prompt, reserve_for, window_budget
from vlnverse.agents.gt_perception import ViewObjects, visible_objects
from vlnverse.agents.localmap import build_local_map
from vlnverse.agents.panorama import Panorama, make_rig
from vlnverse.agents.parsing import Decision, ReplyError, parse_reply
from vlnverse.agents.prompts import (
    ASK,
    STOP,
    Prompt,
    action_options,
    describe_messages,
    instruction_text,
    output_format,
    reply_schema,
    spread_views,
    view_label,
)
from vlnverse.agents.trace import TOO_LONG, TRACE_DECIMALS, AgentTrace
from vlnverse.agents.waypoints.candidate import Candidate, turn_options
from vlnverse.agents.waypoints.predictor import (
    WaypointPredictor,
    describe_predictor,
    predictor_named,
)
from vlnverse.config import config_from_mapping
from vlnverse.deadline import run_all
from vlnverse.errors import (
    ConfigError,
    LLMBudgetExceeded,
    LLMContextExceeded,
    LLMUnsupportedFeature,
)
from vlnverse.eval.agent import Agent, Ask, EpisodeInfo, json_action
from vlnverse.llm.context import repair_echo
from vlnverse.llm.sampling import merge_responses, sample_n
from vlnverse.llm.types import ChatMessage, LLMResponse

logger = logging.getLogger(__name__)

DEFAULT_QUESTION_BUDGET = 3
FREE_SPACE_HINT = ("\nYour movement is physical: bumping into things can end the episode, so prefer "
                   "candidates with free space.")


class EpisodeBudgetExceeded(LLMBudgetExceeded):
    """The agent's per-episode token cap (``max_tokens_per_episode``) is spent (the
    harness ends the episode with ``fail_reason = "llm_budget"``)."""

    def __init__(self, message: str, scope: str = "episode") -> None:
        super().__init__(message, scope)


@dataclass(frozen=True)
class StepView:
    """What the agent knows at one step (the input of :meth:`LLMWaypointAgent.build_prompt`)."""

    step: int
    pose: np.ndarray
    instruction: str
    panorama: Panorama
    candidates: tuple[Candidate, ...]
    options: tuple[str, ...]
    objects: tuple[ViewObjects, ...] | None
    room_type: str | None
    reference_image: np.ndarray | None
    bump: bool
    dialogue: bool

    def world(self, candidate: Candidate) -> np.ndarray:
        """A candidate's end point in the odometry frame."""
        x, y, yaw = float(self.pose[0]), float(self.pose[1]), float(self.pose[3])
        dx, dy = candidate.offset
        return np.array([x + dx * math.cos(yaw) - dy * math.sin(yaw), y + dx * math.sin(yaw) + dy * math.cos(yaw)])


@dataclass
class EpisodeState:
    """The per-episode memory shared by all agents (subclasses add their own fields)."""

    episode: EpisodeInfo
    trace: AgentTrace = field(default_factory=AgentTrace)
    step: int = 0
    leg: int = 0
    history: list[str] = field(default_factory=list)
    exchanges: list[tuple[str, str]] = field(default_factory=list)
    pending_question: str | None = None
    categories: tuple[str, ...] = ()
    room_type: str | None = None
    memory: str = ""
    subgoals: tuple[str, ...] = ()  # the privileged sub-goal split (``privileged_subgoals``)

    @property
    def long_horizon(self) -> bool:
        return self.episode.task == "long_horizon"

    @property
    def legs(self) -> int | None:
        """Goals to STOP at: 1, the privileged split's count, or None on a long-horizon
        episode without it (the chained instruction does not say how many)."""
        if not self.long_horizon:
            return 1
        return len(self.subgoals) or None

    def instruction(self, text: str) -> str:
        """The instruction as prompts show it (:func:`~vlnverse.agents.prompts.instruction_text`)."""
        return instruction_text(text, long_horizon=self.long_horizon, stops=self.leg, subgoals=self.subgoals)

    @property
    def questions_left(self) -> int:
        budget = self.episode.extra.get("question_budget", DEFAULT_QUESTION_BUDGET)
        return max(0, int(budget) - len(self.exchanges) - (self.pending_question is not None))


def _as_config(cls: type, config: Any, name: str) -> Any:
    if isinstance(config, cls):
        return config
    if config is None or isinstance(config, Mapping):
        return config_from_mapping(cls, dict(config or {}), where=f"agent {name}")
    raise ConfigError(f"agent {name}: expected a mapping of settings, got {type(config).__name__}")


class LLMWaypointAgent(Agent, abc.ABC):
    """Base of the LLM agents (see the module docs).

    Args:
        config: A mapping of settings (the ``--agent-config`` file) or the config object.
        llm: The client to use; None builds one from ``config.llm`` on the first episode.
        predictor: Candidate waypoint predictor (default: the one ``config.waypoint_predictor`` names).
    """

    config_class: ClassVar[type] = LLMAgentConfig
    name: ClassVar[str] = "llm"
    cot: ClassVar[bool] = False
    system_prompt: ClassVar[str] = ""
    stop_first: ClassVar[bool] = False  # list STOP before the candidates (MapGPT)
    decision_role: ClassVar[str] = "decision"  # the role the action's tokens count under
    needs_llm: ClassVar[bool] = True  # the harness refuses a run that gives it no model
    action_space = "waypoint"

    def __init__(self, config: Mapping[str, Any] | Any = None, *, llm: Any = None,
                 predictor: WaypointPredictor | None = None) -> None:
        self.config = _as_config(self.config_class, config, self.name)
        self._llm = llm
        self.predictor = predictor or make_predictor(self.config)
        kinds = ("depth", "semantic") if self.config.perception == "gt" else ("rgb", "depth")
        self.sensors = dict(make_rig(self.config.panorama, kinds).items())
        self.privileged = self.config.privileged
        self.waypoint_predictor_info = describe_predictor(self.predictor, self.config.waypoint_predictor)
        self.state: EpisodeState | None = None
        self.record: dict[str, Any] = {}  # the trace record of the step being decided

    # -- the model ---------------------------------------------------------------------

    @property
    def llm(self) -> Any:
        """The client (built from ``config.llm`` on first use when none was given)."""
        if self._llm is None:
            from vlnverse.llm import make_llm

            self._llm = make_llm(self.config.llm)
            if self._llm is None:
                raise ConfigError(f"agent {self.name} needs a model: set 'llm:' in its config "
                                  "(e.g. openai:MODEL) or pass one with --llm")
        return self._llm

    def _request(self, messages: Sequence[ChatMessage], **overrides: Any) -> list[Any]:
        """Send one request (``n`` samples through :func:`~vlnverse.llm.sampling.sample_n`);
        thread-safe: counts nothing (see :meth:`_count`). A request too long for the
        model's context gives a placeholder reply (empty, ``finish_reason`` ``too_long``)."""
        params: dict[str, Any] = {"temperature": self.config.temperature,
                                  "max_tokens": self.config.max_reply_tokens, "n": self.config.samples}
        if self.config.prompt_variant == "json":
            params["response_format"] = "json"
        params.update(overrides)
        try:
            return sample_n(self.llm, list(messages), params.pop("n"), **params)
        except LLMContextExceeded as exc:
            logger.info("agent %s: a request did not fit the model's context (%s)", self.name, exc)
            return [LLMResponse(text="", model=self.llm.model, finish_reason=TOO_LONG)]
        except LLMUnsupportedFeature as exc:
            if exc.feature == "images":
                raise refuse_vlm(self.name, exc) from None
            if exc.feature == "json_schema" and overrides.get("json_schema") is not None:
                return self._request(messages, **{**overrides, "json_schema": None})  # the text parser reads it
            raise

    def fitted(self, prompt: Prompt, system: str, purpose: str, *, reserve: int = 0) -> Fit:
        """``prompt`` (with ``system``) fitted to the model's context window less the reply
        cap and ``reserve`` (:func:`~vlnverse.agents.fitting.fit_prompt`); what was cut is
        counted in the trace and noted in the step's record under ``fits``."""
        fit = fit_prompt(prompt, system, window_budget(self.llm, self.config.max_reply_tokens, reserve))
        if fit.cuts:
            self.state.trace.note_fit(fit.before - fit.after)
            self.record.setdefault("fits", []).append({"purpose": purpose, **fit.to_dict()})
        return fit

    def capped(self, text: str, tokens: int | None = None) -> str:
        """A model answer as later prompts carry it: at most ``tokens`` (default
        ``answer_tokens``), counted in the trace when cut."""
        text, cut = cap(text, tokens or self.config.answer_tokens)
        self.state.trace.fitting["answers_capped"] += cut
        return text

    def capped_items(self, items: Sequence[str], tokens: int | None = None) -> list[str]:
        """A list a model answered (actions, landmarks, steps) as later prompts carry it:
        the first items within ``tokens`` (default ``answer_tokens``), counted when cut."""
        kept, cut = cap_items(items, tokens or self.config.answer_tokens)
        self.state.trace.fitting["answers_capped"] += cut
        return kept

    def _check_cap(self) -> None:
        trace, cap = self.state.trace, self.config.max_tokens_per_episode
        if cap and trace.tokens >= cap:
            raise EpisodeBudgetExceeded(f"agent {self.name}: the episode used {trace.tokens} tokens, "
                                        f"its cap is {cap} (max_tokens_per_episode)")

    def _count(self, responses: Sequence[Any], role: str) -> Any:
        for response in responses:
            self.state.trace.count_call(response, role)
        return merge_responses(responses)

    def _complete(self, messages: Sequence[ChatMessage], role: str | None = None, **overrides: Any) -> Any:
        """One counted model call (``overrides``: generation parameters such as
        ``temperature`` or ``n``); its tokens count under ``role`` (default
        :attr:`decision_role`)."""
        self._check_cap()
        return self._count(self._request(messages, **overrides), role or self.decision_role)

    # -- the episode loop ----------------------------------------------------------------

    def new_state(self, episode: EpisodeInfo) -> EpisodeState:
        """The per-episode memory (subclasses return their own subclass of it)."""
        return EpisodeState(episode)

    def reset(self, episode: EpisodeInfo) -> None:
        self.state = self.new_state(episode)
        if self.config.privileged_subgoals and self.state.long_horizon:
            self.state.subgoals = tuple(episode.subgoal_instructions)

    def observe_info(self, info: Mapping[str, Any]) -> None:
        """``gt`` perception only: the semantic table (at reset) and the room type."""
        if self.config.perception != "gt" or self.state is None:
            return
        if "semantic_categories" in info:
            self.state.categories = tuple(info["semantic_categories"])
        self.state.room_type = info.get("room_type")

    def act(self, observation: Mapping[str, Any]) -> Any:
        state = self.state
        if state is None:
            raise ConfigError(f"agent {self.name}: act() before reset()")
        view = self._perceive(observation)
        self.record = {"step": view.step, "pose": [round(float(v), 3) for v in view.pose[[0, 1, 3]]],
                       "candidates": [c.to_dict() for c in view.candidates], "options": list(view.options),
                       "bump": view.bump, "fallback": False, "repair": False}
        decision = self.decide(view)
        action = self._action(decision, view)
        self.record["action"] = json_action(action, TRACE_DECIMALS)
        state.trace.steps.append(self.record)
        state.trace.waypoints.append([round(float(view.pose[0]), 3), round(float(view.pose[1]), 3)])
        self.remember(view, decision)
        self._log_step(view, decision)
        state.step += 1
        return action

    def decide(self, view: StepView) -> Decision | None:
        """This step's decision: one prompt (:meth:`build_prompt`) through :meth:`choose`.

        Agents with several model calls per step (experts, debates, tools) override this,
        use :meth:`consult` for the intermediate calls and :meth:`choose` for the last.
        """
        prompt = self.build_prompt(view)
        prompt.section("Reply format", output_format(self.config.prompt_variant,
                                                     dict(self.reply_fields(view)), view.options))
        return self.choose(prompt, view)

    def trace(self) -> Mapping[str, Any] | None:
        return self.state.trace.to_dict() if self.state is not None else None

    def close(self) -> None:
        if self._llm is not None:
            self._llm.close()

    # -- steps -----------------------------------------------------------------------------

    def _perceive(self, observation: Mapping[str, Any]) -> StepView:
        state, cfg = self.state, self.config
        if state.pending_question is not None:
            answer = str(observation.get("oracle_answer", "")).strip() or "(no answer)"
            state.exchanges.append((state.pending_question, answer))
            state.history[-1] += f' Answer: "{answer}"'
            state.pending_question = None
        bump = bool(int(np.asarray(observation.get("bump", 0))))
        if bump and state.history:
            state.history[-1] += " You bumped into something on the way."
        panorama = Panorama.from_observation(observation, cfg.panorama)
        candidates = tuple(self.predictor.predict(panorama)) or tuple(turn_options(panorama))
        objects = tuple(visible_objects(panorama, state.categories)) if cfg.perception == "gt" else None
        can_ask = cfg.ask_oracle and "oracle_answer" in observation and state.questions_left > 0
        reference = observation.get("reference_image")
        return StepView(
            step=state.step, pose=np.asarray(observation["pose"], dtype=np.float64),
            instruction=str(observation.get("instruction", state.episode.instruction)),
            panorama=panorama, candidates=candidates,
            options=tuple(action_options(candidates, can_ask=can_ask, can_stop=state.step >= cfg.min_steps_before_stop,
                                         stop_first=self.stop_first)), objects=objects,
            room_type=state.room_type if cfg.perception == "gt" else None,
            reference_image=None if reference is None else np.asarray(reference), bump=bump,
            dialogue="oracle_answer" in observation)

    def consult(self, messages: Sequence[ChatMessage], purpose: str, **params: Any) -> Any:
        """An intermediate model call of this step (counted under the role ``purpose``, and
        kept in the step's trace under ``consultations``); returns the response."""
        return self.consult_many([(messages, purpose)], **params)[0]

    def consult_many(self, calls: Sequence[tuple[Sequence[ChatMessage], str]], *, workers: int = 4,
                     **params: Any) -> list[Any]:
        """:meth:`consult` for several independent calls, made concurrently (at most
        ``workers`` at a time, one sample each unless ``n`` says otherwise, within the
        episode's deadline: :func:`vlnverse.deadline.run_all`); counted and traced in the
        order given."""
        params.setdefault("n", 1)
        self._check_cap()
        answered = run_all(lambda call: self._request(call[0], **params), calls, workers)
        responses = []
        for (messages, purpose), parts in zip(calls, answered, strict=True):
            response = self._count(parts, purpose)
            self.record.setdefault("consultations", []).append(
                {"purpose": purpose, "messages": describe_messages(messages), "reply": response.text})
            responses.append(response)
        return responses

    def choose(self, prompt: Prompt, view: StepView, *,
               pick: Callable[[list[Decision]], Decision] | None = None, **params: Any) -> Decision | None:
        """Ask for the action: the samples' valid decisions go to ``pick`` (default
        :func:`majority`), one repair prompt, then the fallback (None; see the module
        docs). ``params`` override generation parameters. Fills the step's trace record."""
        state, record, system = self.state, self.record, self.system_text()
        fit = self.fitted(prompt, system, self.decision_role)
        record["messages"] = fit.prompt.describe(system)
        params = {**self._reply_params(view), **params}
        response = self._complete(fit.messages, **params)
        self.llm.note_feature("replies", "json_schema" if params.get("json_schema") is not None
                              and self.llm.supports_json_schema else "text")
        record["reply"] = response.text
        decision, error = self._vote(_replies(response), view.options, pick)
        if decision is None and response.finish_reason != TOO_LONG:
            state.trace.repairs += 1
            record["repair"] = True
            turns = [ChatMessage.assistant(repair_echo(response.text)), ChatMessage.user(self._repair_text(error, view))]
            fit = self.fitted(prompt, system, "repair", reserve=reserve_for(turns))
            record["repair_messages"] = describe_messages(turns)
            response = self._complete([*fit.messages, *turns], **params)
            record["repair_reply"] = response.text
            decision, error = self._vote(_replies(response), view.options, pick)
        if decision is None:
            state.trace.fallbacks += 1
            record["fallback"] = True
            record["parsed"] = ({"error": TOO_LONG, "message": "the request does not fit the model's context window"}
                                if response.finish_reason == TOO_LONG else {"error": error.kind, "message": str(error)})
        else:
            record["parsed"] = decision.to_dict()
        return decision

    def _reply_params(self, view: StepView) -> dict[str, Any]:
        """The decision request's schema (structured output) when the prompt asks for JSON
        and the server takes schemas; none otherwise (the text parser reads the reply)."""
        if self.config.prompt_variant != "json" or not self.llm.supports_json_schema:
            return {}
        return {"json_schema": reply_schema(dict(self.reply_fields(view)), view.options)}

    def _vote(self, replies: Sequence[str], options: Sequence[str],
              pick: Callable[[list[Decision]], Decision] | None = None,
              ) -> tuple[Decision | None, ReplyError | None]:
        """The decision ``pick`` (default :func:`majority`) makes from the valid ``replies``."""
        decisions, error = [], None
        for text in replies:
            try:
                decisions.append(parse_reply(text, options))
            except ReplyError as exc:
                self.state.trace.failures[exc.kind] += 1
                error = error or exc
        if not decisions:
            return None, error
        return (pick or majority)(decisions), None

    def _repair_text(self, error: ReplyError, view: StepView) -> str:
        fields = dict(self.reply_fields(view))
        return (f"Your reply could not be used ({error}). "
                + output_format(self.config.prompt_variant, fields, view.options))

    def _action(self, decision: Decision | None, view: StepView) -> Any:
        if decision is None:
            return _fallback(view.candidates)
        if decision.action == STOP:
            return np.array([0.0, 0.0, 1.0], dtype=np.float32)
        if decision.action == ASK:
            self.state.pending_question = self.capped(decision.question)
            return Ask(self.state.pending_question)
        chosen = next(c for c in view.candidates if c.id == decision.action)
        return np.array([chosen.distance, chosen.heading, 0.0], dtype=np.float32)

    def _log_step(self, view: StepView, decision: Decision | None) -> None:
        """Append this step to the shared step history (the prompt's ``History``)."""
        state = self.state
        if decision is None:
            fallback = _fallback(view.candidates)
            what = f"could not decide; moved {fallback[0]:.1f} m at {math.degrees(fallback[1]):.0f} deg (fallback)"
        elif decision.action == STOP:
            what = "stopped" + (f" at goal {state.leg + 1}" if state.long_horizon else "")
            state.leg = state.leg + 1 if state.legs is None else min(state.leg + 1, state.legs - 1)
        elif decision.action == ASK:
            what = f'asked "{decision.question}"'
        else:
            chosen = next(c for c in view.candidates if c.id == decision.action)
            what = f"moved to {chosen.id} ({chosen.phrase})"
        state.history.append(f"step {view.step}: {what}.")

    # -- what subclasses provide ---------------------------------------------------------

    def build_prompt(self, view: StepView) -> Prompt:
        """The user turn of this step (without the reply format), for the one-prompt
        :meth:`decide`; agents that override :meth:`decide` need not provide it."""
        raise TypeError(f"{type(self).__name__} overrides neither decide() nor build_prompt()")

    @abc.abstractmethod
    def reply_fields(self, view: StepView) -> Mapping[str, str]:
        """The reply's fields in order, name → description (``action`` last)."""

    def remember(self, view: StepView, decision: Decision | None) -> None:
        """Update the agent's memory from this step's decision."""

    # -- shared prompt pieces ----------------------------------------------------------

    def observation_sections(self, prompt: Prompt, view: StepView) -> None:
        """What the agent perceives now: room and objects (gt) or views (vlm), the local
        map, the reference image and the dialogue."""
        from vlnverse.agents.prompts import candidate_cards, dialogue_text

        if view.room_type is not None:
            prompt.section("Current room", view.room_type)
        if view.objects is not None:
            prompt.section("What you see around you", "\n".join(o.describe() for o in view.objects), cut="shorten")
        if self.config.local_map:
            local = build_local_map(view.panorama, self.config.waypoints)
            prompt.section("Local map (top-down, you are @ facing up, # obstacle, . free, letters = candidates)",
                           local.ascii(view.candidates))
        if view.panorama.rgb is not None:
            pano = view.panorama.config
            for index in spread_views(pano.views, self.config.panorama_images, [c.view for c in view.candidates]):
                prompt.image(view_label(index, pano.step_deg), view.panorama.rgb[index])
        if view.reference_image is not None:
            prompt.section("Goal picture", "The picture below shows what the goal looks like; "
                           "STOP where you see this view.")
            prompt.image("goal", view.reference_image)
        state = self.state
        if view.dialogue and self.config.ask_oracle:
            prompt.section("Dialogue with a guide who knows the house", dialogue_text(
                state.exchanges, state.questions_left if ASK in view.options else 0), cut="oldest")
        prompt.section("Candidate places you can move to", candidate_cards(view.candidates, views=view.objects,
                                                                            notes=self.candidate_notes(view)))

    def candidate_notes(self, view: StepView) -> Mapping[str, str]:
        """Extra text per candidate id (the map agent names the place it leads to)."""
        return {}

    def system_text(self) -> str:
        """The system prompt, with the free-space hint when ``free_space_hint`` is on."""
        return self.system_prompt + (FREE_SPACE_HINT if self.config.free_space_hint else "")

    def common_fields(self, view: StepView, memory: tuple[str, str]) -> dict[str, str]:
        """Reply fields: ``thought`` (CoT), the agent's memory field, ``action``, ``question``."""
        fields: dict[str, str] = {}
        if self.cot:
            fields["thought"] = "reason step by step about the instruction, what you see and your progress"
        fields[memory[0]] = memory[1]
        fields["action"] = "one option"
        if ASK in view.options:
            fields["question"] = "your question for the guide if the action is ASK, else empty"
        return fields


def refuse_vlm(agent: str, exc: LLMUnsupportedFeature) -> LLMUnsupportedFeature:
    """The one-line refusal of ``vlm`` perception where the model takes no image parts."""
    return LLMUnsupportedFeature(f"agent {agent}: perception 'vlm' needs a model that takes images, and {exc}; "
                                 "use perception: gt, or an image model", "images")


def make_predictor(config: LLMAgentConfig) -> WaypointPredictor:
    """The candidate predictor ``config.waypoint_predictor`` names."""
    return predictor_named(config.waypoint_predictor, config.waypoints, config.waypoint_checkpoint)


def majority(decisions: Sequence[Decision]) -> Decision:
    """The most frequent action among ``decisions`` (the first one wins ties)."""
    counts = Counter(d.action for d in decisions)
    best = max(counts.values())
    return next(d for d in decisions if counts[d.action] == best)


def _fallback(candidates: Sequence[Candidate]) -> np.ndarray:
    """The documented fallback: nearest straight ahead (longer on a tie; the first of the
    turns when only turns are offered)."""
    best = min(candidates, key=lambda c: (round(abs(c.heading), 6), -c.distance))
    return np.array([best.distance, best.heading, 0.0], dtype=np.float32)


def _replies(response: Any) -> tuple[str, ...]:
    """A response's choices to parse (none for a request that was too long to send)."""
    return () if response.finish_reason == TOO_LONG else response.choices
