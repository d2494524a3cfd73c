"""``arna``: the Agentic Robotic Navigation Architecture (Lange et al., ARNA; ``papers/arna.txt``).

One episode follows the paper's Algorithm 1:

1. **Workflow generation** (§4.5, Appendix D.1–D.2), on the first step: termination
   conditions (zero-shot text), then self-discover in four stages — select a heuristic,
   adapt it, write pseudocode, implement it as a plan in ARNA's JSON grammar
   (:mod:`~vlnverse.agents.arna.plan`). ``workflow: cot`` asks for the plan in one
   chain-of-thought call instead (the Table 1c ablation). A plan outside the grammar is
   rejected, counted (``plan_rejections``) and asked for again (``plan_repairs``); then the
   run ends ``function_call_error`` as in the paper, or, with ``fallback_plan``, the
   built-in exploration plan runs (``plan_source: fallback``).
2. **Executor**: before each step the model decides whether the termination conditions
   hold and which plan line runs next (``NextStep``, Appendix D.3): the line in program order
   or any other line of the main plan (§4.5: no fixed ordering; the interpreter resumes there,
   enforcing the grammar and the budgets), and may have one of the plan's reasoning functions
   run first (the paper's "algorithm" step). A condition ``found(VAR)`` is decided by the
   model from its memory and the findings of the step that stored ``VAR`` (Appendix E.2), not
   by the tool's own flag. A high-level step
   becomes one tool call chosen by the model from the toolset
   (:mod:`~vlnverse.agents.arna.tools`) by tool calling; an invalid call (after its repair
   turn) is a function-call error.
3. **Memory update** (Appendix D.4) after each step: the model rewrites the memory from the
   tool result; after navigation, it first selects the relevant new observations
   (information selection) from the observation buffer.
4. **Navigation**: a goal from a tool is reached by A* over the agent's own occupancy
   grid, one waypoint action per environment step, replanning as the map grows and after
   bumps; every step's observations update the scene graph (perception) and the buffer.

Perception is the agent's own (:mod:`~vlnverse.agents.arna.worldmodel`): depth plus the
semantic sensor (``perception: gt``, which also reads the room label; recorded as
privileged) or the model's labels of the RGB views (``perception: vlm``). The env's scene
graph is never read.

Ending (Table 1): on EQA the model's terminal answer (an option letter or text) becomes
:class:`~vlnverse.eval.agent.Answer`; on the navigation tasks termination is STOP. Budgets
(§6.3): environment steps (the env's ``--max-steps``, one waypoint move each; the env ends
the episode, ``step_limit`` on EQA), list cost of the model calls (``max_cost_usd``, $3 →
``cost_limit``; or ``max_tokens_per_episode`` for a model without a price), wall time
(``max_wall_s`` → ``time_limit``) and failed function calls — invalid tool calls and
structured outputs that never followed their schema (→ ``function_call_error``); the
interpreter's statement limit ends the run as ``statement_limit``. A run ended so returns
:class:`~vlnverse.eval.agent.Inconclusive` with the reason (the episode's ``outcome`` is
``inconclusive``); a terminal answer that names no option gives ``no_answer``. The trace's
``arna`` entry keeps the answer, the reason and what led there.

Within the model's context window (:mod:`vlnverse.agents.fitting`): the memory's fields, the
workflow's texts and the visual analyses are capped (``answer_tokens``) when kept; a prompt
still too long loses the oldest new observations, then the ends of the long lines (memory,
plan, scene-graph listings); every structured or tool request keeps room for its repair
turn and, where the server takes no schema or tools natively, for their text. A request
that does not fit even so is counted (``too_long``) and its answer is missing (the same
fallbacks as an unusable answer), not a function-call error.
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, ValidationError

from vlnverse.agents.arna import prompts as P
from vlnverse.agents.arna.config import ARNAConfig
from vlnverse.agents.arna.failures import FailureCounter
from vlnverse.agents.arna.lineref import line_reference
from vlnverse.agents.arna.memory import Memory
from vlnverse.agents.arna.plan import (
    Interpreter,
    PlanRejected,
    Program,
    StepLimit,
    describe,
    validate,
)
from vlnverse.agents.arna.tools import (
    INTERFACES,
    KIND_TOOLS,
    NavGoal,
    ToolLibrary,
    ToolResult,
    argument_problems,
    tool_specs,
)
from vlnverse.agents.arna.worldmodel import UNKNOWN_COST, OccupancyGrid, SceneMemoryGraph
from vlnverse.agents.base import EpisodeState, LLMWaypointAgent, StepView, refuse_vlm
from vlnverse.agents.fitting import REPAIR_RESERVE
from vlnverse.agents.panorama import Panorama
from vlnverse.agents.prompts import Prompt, describe_messages
from vlnverse.agents.trace import TOO_LONG
from vlnverse.errors import ConfigError, LLMAnswerError, LLMContextExceeded, LLMUnsupportedFeature
from vlnverse.eval.agent import Answer, EpisodeInfo, Inconclusive
from vlnverse.llm.base import WrapperClient
from vlnverse.llm.context import text_bound
from vlnverse.llm.structured import schema_instruction, tool_instruction
from vlnverse.llm.types import ChatMessage

logger = logging.getLogger(__name__)

STOP_ACTION = (0.0, 0.0, 1.0)
OPTION_LETTERS = "ABCD"  # the EQA options' labels (A..D), as the env shows them

#: The built-in plan when the model gives none in the grammar: explore, checking termination.
FALLBACK_PLAN = {"main": [{"while": {"always": True}, "max_iterations": 50,
                           "body": [{"step": "explore", "goal": "explore the nearest promising frontier"}]}]}


class BudgetSpent(Exception):
    """A budget or the function-call limit ended the run (``reason``: an
    :data:`~vlnverse.eval.agent.OUTCOME_REASONS` entry)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


class _Terminated(Exception):
    def __init__(self, answer: str | None, rationale: str) -> None:
        self.answer = answer
        self.rationale = rationale


@dataclass
class Navigation:
    """A goal being driven to (the inner loop of Algorithm 1)."""

    goal: NavGoal
    steps: int = 0
    done: str | None = None           # why navigation ended (reached, unreachable, ...)
    new_images: list[int] = field(default_factory=list)
    new_objects: list[str] = field(default_factory=list)


@dataclass
class ARNAState(EpisodeState):
    """ARNA's per-episode memory."""

    graph: SceneMemoryGraph | None = None
    tools: ToolLibrary | None = None
    memory: Memory = field(default_factory=Memory)
    pose: np.ndarray = field(default_factory=lambda: np.zeros(4))
    workflow: dict[str, Any] = field(default_factory=dict)
    program: Program | None = None
    executor: Generator[Any, Any, Any] | None = None
    nav: Navigation | None = None
    executed: int = 0
    function_call_errors: list[str] = field(default_factory=list)
    perception_failures: FailureCounter | None = None
    plan_rejections: list[list[str]] = field(default_factory=list)
    list_cost_usd: float = 0.0
    started: float = 0.0
    ended: dict[str, Any] | None = None
    role: str = "workflow"
    reference: np.ndarray | None = None   # the visual-reference goal picture
    interpreter: Interpreter | None = None
    in_function: bool = False
    jumps: int = 0                         # steps the model chose out of program order


class _Meter(WrapperClient):
    """Counts every call (repairs included) of the agent's model into its trace and list cost."""

    def __init__(self, agent: ARNAAgent) -> None:
        super().__init__(agent.llm)
        self.agent = agent

    def send(self, request: Any) -> Any:
        self.agent.before_call()
        try:
            response = self.inner.send(request)
        except LLMUnsupportedFeature as exc:
            if exc.feature == "images":
                raise refuse_vlm(self.agent.name, exc) from None
            raise
        state = self.agent.state
        state.trace.count_call(response, state.role)
        if response.cost_usd is None and not self.agent.config.max_tokens_per_episode:
            raise ConfigError(f"arna: model {response.model!r} has no price, so max_cost_usd cannot hold: give "
                              "its price (VLNVERSE_LLM_PRICES) or set max_tokens_per_episode")
        state.list_cost_usd += float(response.cost_usd or 0.0)
        return response


class ARNAAgent(LLMWaypointAgent):
    """ARNA (see the module docs)."""

    config_class = ARNAConfig
    name = "arna"
    decision_role = "next_step"
    system_prompt = P.NEXT_STEP_SYSTEM

    def reply_fields(self, view: StepView) -> Mapping[str, str]:
        return {}  # ARNA's replies are structured outputs and tool calls

    def new_state(self, episode: EpisodeInfo) -> ARNAState:
        return ARNAState(episode, perception_failures=FailureCounter(
            "perception_error", self.config.max_perception_failures))

    def check_model(self, spec: str) -> None:
        """Refuse, before the run, a model without a price when no token cap is set."""
        from vlnverse.agents.arna.preflight import check_priced

        check_priced(spec, self.config.max_tokens_per_episode)

    # -- the model -----------------------------------------------------------------

    def before_call(self) -> None:
        """Refuse a call once the episode's time, cost or token budget is spent (checked at
        every call: one environment step may run many plan statements and model calls)."""
        state, cfg = self.state, self.config
        if cfg.max_wall_s and time.monotonic() - state.started > cfg.max_wall_s:
            raise BudgetSpent("time_limit", f"the episode ran longer than {cfg.max_wall_s:g} s (max_wall_s)")
        if state.list_cost_usd >= cfg.max_cost_usd:
            raise BudgetSpent("cost_limit", f"the episode's model calls cost ${state.list_cost_usd:.4f}, "
                                             f"its limit is ${cfg.max_cost_usd:.2f}")
        if cfg.max_tokens_per_episode and state.trace.tokens >= cfg.max_tokens_per_episode:
            raise BudgetSpent("cost_limit", f"the episode's model calls used {state.trace.tokens} tokens, "
                                             f"its limit is {cfg.max_tokens_per_episode} (max_tokens_per_episode)")

    def _params(self) -> dict[str, Any]:
        return {"temperature": self.config.temperature, "max_tokens": self.config.max_reply_tokens}

    def _call_record(self, role: str, messages: Sequence[ChatMessage], reply: Any) -> None:
        self.record.setdefault("consultations", []).append(
            {"purpose": role, "messages": describe_messages(messages), "reply": reply})

    def structured(self, role: str, system: str, prompt: Prompt, model: type[BaseModel], *,
                   on_failure: Any = None) -> Any | None:
        """A structured answer (a validated ``model``), or None after its repair failed
        (counted as a parse failure, then reported to ``on_failure``: by default a
        function-call error)."""
        self.state.role = role
        schema = P.schema(model)
        reserve = REPAIR_RESERVE + (0 if self.llm.supports_json_schema else text_bound(schema_instruction(schema)))
        messages = self.fitted(prompt, system, role, reserve=reserve).messages
        try:
            value, _ = _Meter(self).complete_structured(messages, schema, **self._params())
            parsed = model.model_validate(value)
        except LLMContextExceeded as exc:
            self._too_long(role, messages, exc)
            return None
        except (LLMAnswerError, ValidationError) as exc:
            self.state.trace.failures["schema"] += 1
            self._call_record(role, messages, {"error": str(exc)[:300]})
            (on_failure or self._function_call_error)(f"{role}: no answer in its structure ({str(exc)[:200]})")
            return None
        self._call_record(role, messages, value)
        return parsed

    def text(self, role: str, system: str, prompt: Prompt) -> str:
        """A free-text answer ("" when the request does not fit the context window)."""
        self.state.role = role
        messages = self.fitted(prompt, system, role).messages
        try:
            response = _Meter(self).complete(messages, **self._params())
        except LLMContextExceeded as exc:
            self._too_long(role, messages, exc)
            return ""
        self._call_record(role, messages, response.text)
        return response.text.strip()

    def _too_long(self, role: str, messages: Sequence[ChatMessage], exc: LLMContextExceeded) -> None:
        """A request that does not fit the context window: counted, its answer missing."""
        self.state.trace.failures[TOO_LONG] += 1
        self._call_record(role, messages, {"error": f"{TOO_LONG}: {str(exc)[:300]}"})

    # -- the episode loop ----------------------------------------------------------

    def act(self, observation: Mapping[str, Any]) -> Any:
        state = self.state
        if state is None:
            raise ConfigError(f"agent {self.name}: act() before reset()")
        if not state.started:
            state.started = time.monotonic()
            if observation.get("reference_image") is not None:
                state.reference = np.asarray(observation["reference_image"])
        pose = np.asarray(observation["pose"], dtype=np.float64)
        bump = bool(int(np.asarray(observation.get("bump", 0))))
        self.record = {"step": state.step, "pose": [round(float(v), 3) for v in pose[[0, 1, 3]]], "bump": bump,
                       "fallback": False, "repair": False}
        try:
            if state.executor is None and state.ended is None:   # Algorithm 1, line 1: before perceiving,
                self._generate_workflow()                         # so perception knows its targets
                state.executor = self._workflow()
            self._perceive_scene(observation, pose)
            if state.ended is None:
                self.before_call()
                action = self._advance(pose, bump)
        except BudgetSpent as exc:
            action = self._end(None, str(exc), reason=exc.reason)
        if state.ended is not None and state.ended["step"] < state.step:
            action = self._final_action()
        self.record["action"] = _json_action(action)
        state.trace.steps.append(self.record)
        state.trace.waypoints.append([round(float(pose[0]), 3), round(float(pose[1]), 3)])
        state.step += 1
        return action

    def _advance(self, pose: np.ndarray, bump: bool) -> np.ndarray:
        """Drive the executor until it asks for motion (one action) or ends."""
        state = self.state
        sent: str | None = None
        if state.nav is not None:
            action = self._nav_action(pose, bump)
            if action is not None:
                return action
            sent = self._arrived()
        for _ in range(self.config.max_plan_statements + 2):
            try:
                request = state.executor.send(sent) if sent is not None else next(state.executor)
            except StopIteration as stop:
                answer, rationale = stop.value
                return self._end(answer, rationale)
            if request is None:   # the end of a long-horizon leg
                self.record["leg_stop"] = state.leg
                return np.array(STOP_ACTION, dtype=np.float32)
            state.nav = Navigation(request)
            self.record.setdefault("navigation", []).append(request.label)
            action = self._nav_action(pose, bump=False)
            if action is not None:
                return action
            sent = self._arrived()
        raise BudgetSpent("statement_limit", "the executor took no action within its statement limit")

    def _end(self, answer: str | None, rationale: str, *, reason: str | None = None) -> Any:
        """Record how the run ended and return its last action."""
        state = self.state
        index = None
        if reason is None and "options" in state.episode.extra:
            index = option_index(answer, state.episode.extra["options"])
            reason = None if index is not None else "no_answer"
        state.ended = {"answer": answer, "answer_index": index, "rationale": rationale, "outcome_reason": reason,
                       "step": state.step}
        state.memory.log(f"step {state.step}: ended" + (f" (inconclusive: {reason})" if reason else "")
                         + (f", answer {answer!r}" if answer else "") + f": {rationale}")
        self.record["ended"] = state.ended
        return self._final_action()

    def _final_action(self) -> Any:
        ended = self.state.ended
        if ended["outcome_reason"] is not None:
            return Inconclusive(ended["outcome_reason"])
        if ended["answer_index"] is not None:
            return Answer(ended["answer_index"])
        return np.array(STOP_ACTION, dtype=np.float32)

    # -- perception (the agent's own scene graph) -------------------------------------

    def _perceive_scene(self, observation: Mapping[str, Any], pose: np.ndarray) -> None:
        state, cfg = self.state, self.config
        panorama = Panorama.from_observation(observation, cfg.panorama)
        if state.graph is None:
            state.graph = SceneMemoryGraph(OccupancyGrid(pose[:2], cfg.grid_extent, cfg.grid_resolution))
            state.tools = ToolLibrary(state.graph, lambda: self.state.pose, np.random.default_rng(state.episode.seed),
                                      self._analyse, lambda: self.state.memory.render(), cfg.panorama.hfov_deg)
        state.pose = pose
        graph, wp = state.graph, cfg.waypoints
        seen: dict[int, list[str]] = {}
        new_cells = {v: graph.grid.integrate(pose, panorama, wp.step_height, wp.body_height, view=v)
                     for v in range(cfg.panorama.views)}
        known = set(graph.objects)
        if cfg.perception == "gt":
            room_label = state.room_type or "unknown"
            for v in range(cfg.panorama.views):
                seen[v] = graph.add_semantic(pose, panorama, state.categories, v)
        else:
            room_label, seen = self._label_views(pose, panorama, [v for v, n in new_cells.items()
                                                                 if n >= cfg.min_new_cells])
        room = graph.add_place(pose[:2], room_label)
        stored = []
        for v in range(cfg.panorama.views):
            if new_cells[v] >= cfg.min_new_cells or set(seen.get(v, ())) - known:
                rgb = panorama.rgb[v] if panorama.rgb is not None else None
                record = graph.add_image(state.step, pose, float(pose[3] + panorama.yaws[v]), rgb, seen.get(v, ()), room)
                stored.append(record.image_id)
        self._forget_old_pixels()
        if state.nav is not None:
            state.nav.new_images += stored
            state.nav.new_objects += [n for n in graph.objects if n not in known]
        self.record["perception"] = {"room": room.name, "stored_images": stored,
                                     "new_objects": [n for n in graph.objects if n not in known]}

    def _label_views(self, pose: np.ndarray, panorama: Panorama, views: Sequence[int]) -> tuple[str, dict[int, list[str]]]:
        """``vlm`` perception: the model names the objects in the new views and the room."""
        state = self.state
        if not views or panorama.rgb is None:
            return (state.graph.rooms[-1].label if state.graph.rooms else "unknown"), {}
        prompt = Prompt()
        targets = state.workflow.get("targets", "")
        prompt.section("Objects of interest", targets or "any notable object")
        for v in views:
            prompt.image(str(v), panorama.rgb[v])
        answer = self.structured("perception", P.PERCEPTION_SYSTEM, prompt, P.Perception,
                                 on_failure=self._perception_failure)
        if answer is None:
            return "unknown", {}
        state.perception_failures.succeed()
        seen: dict[int, list[str]] = {}
        for det in answer.objects:
            if det.view in views and det.label.strip():
                name = state.graph.add_labelled(pose, panorama, det.view, det.label, det.column)
                if name is not None:
                    seen.setdefault(det.view, []).append(name)
        return answer.room, seen

    def _forget_old_pixels(self) -> None:
        images = self.state.graph.images
        for record in images[:max(0, len(images) - self.config.max_images)]:
            record.rgb = None

    # -- workflow generation (§4.5, Appendix D.1-D.2) --------------------------------

    def task_text(self) -> str:
        """The task as the prompts state it."""
        episode = self.state.episode
        category = episode.extra.get("object_category")
        if "options" in episode.extra:
            options = " ".join(f"{OPTION_LETTERS[k]}) {o}" for k, o in enumerate(episode.extra["options"]))
            return (f"Explore to answer this multiple-choice question from what you observe: "
                    f"{episode.extra['question']} Options: {options}. When terminating, answer with the option letter.")
        if category:
            return f"Find a {category} and stop close to it, with it in view."
        if self.state.long_horizon:
            return "Follow these navigation instructions and stop at each goal in order:\n" + \
                self.state.instruction(episode.instruction)
        if self.state.reference is not None:
            return (f"Go to the place shown in the goal picture and stop there: {episode.instruction}"
                    if episode.instruction else "Go to the place shown in the goal picture and stop there.")
        return f"Follow this navigation instruction and stop at its goal: {episode.instruction}"

    def _task_prompt(self) -> Prompt:
        prompt = Prompt()
        prompt.section("Task", self.task_text())
        if self.state.reference is not None:
            if self.config.perception == "vlm":
                prompt.image("goal", self.state.reference)
            else:
                prompt.section("Goal picture", "(a picture of the goal exists, but this text-only robot cannot see it)")
        if self.state.workflow.get("termination"):
            prompt.section("Termination conditions", self.state.workflow["termination"], cut="shorten")
        return prompt

    def _generate_workflow(self) -> None:
        state, wf = self.state, self.state.workflow
        wf["termination"] = self.capped(self.text("termination", P.TERMINATION_SYSTEM, self._task_prompt())) \
            or "- The task's goal is verified by the robot's own observations."
        if self.config.workflow == "self_discover":
            prompt = self._task_prompt()
            prompt.section("Heuristics", "\n".join(f"{i}. {h}" for i, h in enumerate(P.HEURISTICS, 1)))
            picked = self.structured("heuristic", P.SELECT_SYSTEM, prompt, P.HeuristicSelection)
            index = picked.heuristic if picked is not None and 1 <= picked.heuristic <= len(P.HEURISTICS) else 1
            state.trace.fallbacks += picked is None
            wf["heuristic"] = P.HEURISTICS[index - 1]
            prompt = self._task_prompt()
            prompt.section("Pre-selected heuristic", wf["heuristic"])
            adapted = self.structured("adapt", P.ADAPT_SYSTEM, prompt, P.AdaptHeuristic)
            wf["adapted"] = self.capped(adapted.adapted_heuristic) if adapted is not None else wf["heuristic"]
            prompt = self._task_prompt()
            prompt.section("Adapted heuristic", wf["adapted"])
            pseudo = self.structured("pseudocode", P.PSEUDOCODE_SYSTEM, prompt, P.PseudocodeHeuristic)
            wf["pseudocode"] = self.capped_items(list(pseudo.implementation)) if pseudo is not None else []
        if self.config.perception == "vlm":
            prompt = self._task_prompt()
            targets = self.structured("targets", P.TARGETS_SYSTEM, prompt, P.PerceptionTargets)
            wf["targets"] = ", ".join(targets.objects) if targets is not None else ""
        state.program = self._implement()
        wf["plan"] = state.program.to_dict()

    def _implement(self) -> Program:
        """The plan in the grammar (rejections counted; then the fallback plan)."""
        state, wf = self.state, self.state.workflow
        checkers = {name: argument_problems(name) for name in INTERFACES}
        tools = ", ".join(f"{t['name']} ({t['description']})" for t in tool_specs())
        system = (P.COT_SYSTEM if self.config.workflow == "cot" else P.IMPLEMENT_SYSTEM).replace("{tools}", tools)
        prompt = self._task_prompt()
        if wf.get("pseudocode"):
            prompt.section("Adapted heuristic", wf.get("adapted", ""))
            prompt.section("Pseudocode", "\n".join(wf["pseudocode"]))
        for _ in range(self.config.plan_repairs + 1):
            answer = self.structured("implementation", system, prompt, P.FunctionCallImplementation)
            if answer is None:
                state.plan_rejections.append(["no plan in the requested structure"])
                continue
            try:
                program = validate(answer.plan, checkers)
            except PlanRejected as exc:
                state.plan_rejections.append(exc.problems)
                logger.info("arna: %s", exc)
                prompt.section("Your previous plan was rejected", json.dumps(answer.plan)[:2000]
                               + "\nProblems:\n" + "\n".join(exc.problems[:12]) + "\nFollow the grammar exactly.",
                               cut="shorten")
                continue
            wf["plan_source"] = "model"
            return program
        if not self.config.fallback_plan:   # the paper: a plan that cannot be repaired ends the run
            detail = f"implementation: no plan in the grammar after {len(state.plan_rejections)} tries"
            state.function_call_errors.append(detail)
            state.trace.failures["function_call"] += 1
            raise BudgetSpent("function_call_error", detail)
        wf["plan_source"] = "fallback"
        state.trace.fallbacks += 1
        return validate(FALLBACK_PLAN, checkers)

    # -- the executor (Algorithm 1) ------------------------------------------------

    def _workflow(self) -> Generator[NavGoal | None, str | None, tuple[str | None, str]]:
        """Run the generated plan until termination; returns
        ``(answer, rationale)``. Yields navigation goals (receiving how they ended), and
        None for a STOP that ends one leg of a long-horizon episode."""
        state = self.state
        start: int | None = None
        while True:
            try:
                interpreter = state.interpreter = Interpreter(
                    state.program, self._execute, self.config.max_plan_statements - state.executed,
                    select=self._select, judge=self._judge)
                try:
                    yield from interpreter.run(start)
                finally:
                    state.executed += interpreter.executed
                choice = self._select_step("(the plan has finished: terminate if the conditions hold, else name "
                                           "the line to run next; by default it runs again from line 1)")
                start = self._chosen_line(choice, 0)
                state.memory.log("the plan finished without terminating; running it again"
                                 + (f" from line {start}" if start else ""))
            except _Terminated as done:
                if state.legs is not None and state.leg + 1 >= state.legs:
                    return done.answer, done.rationale  # else the env ends the episode at its last goal
                state.memory.log(f"step {state.step}: stopped at goal {state.leg + 1}: {done.rationale}")
                state.leg += 1
                yield None
            except StepLimit as exc:
                raise BudgetSpent("statement_limit", str(exc)) from None

    def _context(self, upcoming: str) -> Prompt:
        state = self.state
        prompt = self._task_prompt()
        if state.program is not None:
            prompt.section("Plan", state.program.listing(), cut="shorten")
        prompt.section("Next plan step", upcoming, cut="shorten")
        prompt.section("Memory", state.memory.render(), cut="shorten")
        prompt.section("Scene graph statistics", state.graph.statistics(), cut="shorten")
        pose = state.pose
        prompt.section("Robot state", f"step {state.step}, at ({pose[0]:.1f}, {pose[1]:.1f}) facing "
                       f"{math.degrees(pose[3]) % 360:.0f} deg; {state.episode.max_steps - state.step} environment "
                       "steps left")
        tools = state.tools
        prompt.section("Frontiers", tools.frontier_listing(), cut="shorten")
        known = [*state.graph.objects, *(r.name for r in state.graph.rooms),
                 *(f"Point_{i}" for i in tools.points)]
        prompt.section("Known nodes", ", ".join(known) or "none yet", cut="shorten_start")
        picture, ascii_map = tools.overlay_grid(pose[:2], 6.0, [], [])
        if self.config.perception == "vlm":
            prompt.image("occupancy grid", picture)
        else:
            prompt.section("Occupancy grid around you", ascii_map)
        return prompt

    def _select_step(self, upcoming: str) -> P.NextStep | None:
        """SELECTSTEP / TERMINATE: ask whether the termination conditions hold (and whether
        to run a reasoning function first)."""
        state = self.state
        answer = self.structured("next_step", P.NEXT_STEP_SYSTEM, self._context(upcoming), P.NextStep)
        if answer is None:
            state.trace.fallbacks += 1
            self.record["fallback"] = True
            return None
        self.record.setdefault("next_step", []).append(answer.model_dump())
        if answer.terminal:
            raise _Terminated(answer.answer, answer.rationale)
        return answer

    def _select(self, line: int | None, stmt: Mapping[str, Any]) -> Generator[NavGoal, str, int | None]:
        """SELECTSTEP before a statement runs: termination, a reasoning function to run first,
        and the main-plan line to run instead of this one (None: this one)."""
        upcoming = (f"line {line}: " if line else "(inside a reasoning function) ") + describe(stmt)
        if "answer" in stmt:
            upcoming += ": the plan reached its answer step; terminate if the conditions hold"
        choice = self._select_step(upcoming)
        yield from self._run_chosen_function(choice)
        return self._chosen_line(choice, line)

    def _chosen_line(self, choice: P.NextStep | None, line: int | None) -> int | None:
        """The line ``choice`` names when it names another one than ``line`` (0: the plan's
        end); a name that is no line of the plan is a function-call error."""
        state = self.state
        text = (choice.next_step or "").strip() if choice is not None else ""
        if not text or line is None:   # no choice, or inside a reasoning function (runs in order)
            return None
        target, count = line_reference(text), len(state.program.lines)
        if target is None or not 1 <= target <= count:
            self._function_call_error(f"next_step: {text[:60]!r} names no line of the plan (1 to {count})")
            return None
        if target == line:
            return None
        self.record.setdefault("jumps", []).append({"from": line or "end", "to": target})
        state.jumps += 1
        state.memory.log(f"step {state.step}: chose line {target} of the plan"
                         + (f" instead of line {line}" if line else " after its end"))
        return target

    def _judge(self, var: str) -> bool:
        """A ``found(var)`` condition, decided by the model from the memory and the findings
        of the step that stored ``var`` (its tool's flag when no usable answer came)."""
        state = self.state
        variables = state.interpreter.variables
        result = variables.get(var)
        flag = bool(getattr(result, "found", False))
        prompt = self._context(f"deciding the condition found({var})")
        prompt.section("Condition", f"found({var}): has the plan step that stores {var} "
                       f"({state.program.stored_by(var)}) found what it looked for? Decide from the memory and "
                       "the findings below, not from whether a tool answered.")
        findings = getattr(result, "text", None) or ("(that step has not run yet)" if var not in variables
                                                     else str(result))
        prompt.section("Findings of that step", findings, cut="shorten")
        answer = self.structured("condition", P.CONDITION_SYSTEM, prompt, P.ConditionCheck)
        holds = answer.holds if answer is not None else flag
        self.record.setdefault("conditions", []).append(
            {"condition": f"found({var})", "holds": holds, "tool_flag": flag,
             "rationale": answer.rationale if answer is not None else None})
        return holds

    def _run_chosen_function(self, choice: P.NextStep | None) -> Generator[NavGoal, str, None]:
        """The "algorithm" step: a reasoning function the model asked for, run now (not nested)."""
        state = self.state
        name = choice.run_function if choice is not None else None
        if not name or state.in_function or name not in state.program.functions:
            return
        state.memory.log(f"step {state.step}: running reasoning function {name}")
        state.in_function = True
        try:
            yield from state.interpreter.call(name)
        finally:
            state.in_function = False

    def _execute(self, stmt: Mapping[str, Any]) -> Generator[NavGoal, str, Any]:
        """EXECUTESTEP of one plan statement, then MEMORYUPDATE."""
        state = self.state
        line = describe(stmt)
        if "answer" in stmt:   # its termination check was the selection before it
            return None
        if "tool" in stmt:
            name, arguments = stmt["tool"], {"rationale": "planned step", **stmt.get("args", {})}
        else:
            name, arguments = self._choose_tool(stmt)
            if name is None:
                return ToolResult(False, "the tool call failed")
        try:
            result = state.tools.call(name, arguments)
        except ValidationError as exc:
            self._function_call_error(f"{name}: {exc.errors()[0]['msg'] if exc.errors() else exc}")
            return ToolResult(False, "the tool call failed")
        self.record.setdefault("tool_calls", []).append({"stmt": line, "tool": name, "arguments": arguments,
                                                         "found": result.found, "result": result.text[:500]})
        if result.goal is not None:
            ended = yield result.goal
            result.text += f" Navigation: {ended}."
        state.memory.log(f"step {state.step}: {line} -> {name}: {result.text[:160]}")
        self._update_memory(line, result)
        return result

    def _choose_tool(self, stmt: Mapping[str, Any]) -> tuple[str | None, dict[str, Any]]:
        """The exact tool call of a high-level step (tool calling over the step's tools)."""
        state = self.state
        state.role = "execute"
        specs = tool_specs(KIND_TOOLS[stmt["step"]])
        reserve = REPAIR_RESERVE + text_bound(tool_instruction(specs, "required"))  # the tools are prompt text too
        messages = self.fitted(self._context(describe(stmt)), P.EXECUTE_SYSTEM, "execute", reserve=reserve).messages
        try:
            response = _Meter(self).complete_tools(messages, specs, tool_choice="required", **self._params())
        except LLMContextExceeded as exc:
            self._too_long("execute", messages, exc)
            return None, {}
        except LLMAnswerError as exc:
            self._call_record("execute", messages, {"error": str(exc)[:300]})
            self._function_call_error(str(exc))
            return None, {}
        call = response.tool_calls[0]
        self._call_record("execute", messages, call.to_dict())
        return call.name, dict(call.arguments)

    def _function_call_error(self, detail: str) -> None:
        state = self.state
        state.function_call_errors.append(detail[:300])
        state.trace.failures["function_call"] += 1
        state.memory.log(f"step {state.step}: function call error: {detail[:160]}")
        if len(state.function_call_errors) >= self.config.max_function_call_errors:
            raise BudgetSpent("function_call_error", f"invalid tool call: {detail[:200]}")

    def _perception_failure(self, detail: str) -> None:
        """A perception reply without its structure: counted apart from function-call
        errors, ending the run (``perception_error``) after ``max_perception_failures`` in a row."""
        state = self.state
        state.trace.failures["perception"] += 1
        state.memory.log(f"step {state.step}: perception failed: {detail[:160]}")
        failures = state.perception_failures
        if failures.fail(detail):
            raise BudgetSpent(failures.reason, f"{failures.streak} perception replies in a row without their "
                                               f"structure: {detail[:200]}")

    def _update_memory(self, line: str, result: ToolResult, selected: str = "") -> None:
        if not self.config.memory_updates:
            return
        prompt = Prompt()
        prompt.section("Task", self.task_text())
        prompt.section("Current memory", self.state.memory.render(), cut="shorten")
        prompt.section("Step just executed", line, cut="shorten")
        prompt.section("New information", (selected + "\n" + result.text).strip(), cut="shorten")
        if self.config.perception == "vlm":
            for label, image in result.images[:4]:
                prompt.image(label, image)
        answer = self.structured("memory_update", P.MEMORY_SYSTEM, prompt, P.MemoryUpdate)
        if answer is None:
            self.state.trace.fallbacks += 1
            return
        self.state.memory.update({key: self.capped(value) for key, value in answer.model_dump().items()})

    def _analyse(self, rationale: str, records: list[Any], joint: bool) -> str:
        """The visual analysis tool's model call(s)."""
        groups = [records] if joint else [[r] for r in records]
        findings = []
        for group in groups[:6]:
            prompt = Prompt()
            prompt.section("Question", rationale, cut="shorten")
            for r in group:
                prompt.section(f"Image {r.image_id}", r.description)
                if self.config.perception == "vlm" and r.rgb is not None:
                    prompt.image(str(r.image_id), r.rgb)
            text = self.text("visual_analysis", P.ANALYSIS_SYSTEM, prompt)
            findings.append(f"[{', '.join(str(r.image_id) for r in group)}] {self.capped(text)}")
        return "\n".join(findings)

    # -- navigation ---------------------------------------------------------------

    def _nav_action(self, pose: np.ndarray, bump: bool) -> np.ndarray | None:
        """The next waypoint toward the navigation goal, or None once it ended."""
        nav, cfg = self.state.nav, self.config
        goal = nav.goal
        if goal.rotate is not None:
            if nav.steps:
                nav.done = f"rotated {math.degrees(goal.rotate):.0f} deg"
                return None
            nav.steps += 1
            return np.array([0.0, math.remainder(goal.rotate, 2 * math.pi), 0.0], dtype=np.float32)
        if np.linalg.norm(goal.point - pose[:2]) <= cfg.goal_tolerance:
            nav.done = f"reached {goal.label}"
            return None
        if nav.steps >= cfg.max_nav_steps:
            nav.done = f"gave up on {goal.label} after {nav.steps} steps"
            return None
        strict = self.state.episode.physics == "strict"   # a collision ends the episode: stay on seen floor
        path = self.state.graph.grid.plan(pose, goal.point, cfg.waypoints.body_radius + cfg.clearance,
                                          unknown_cost=math.inf if strict else UNKNOWN_COST)
        if path is None:
            nav.done = f"{goal.label} is unreachable on the current map"
            return None
        if not path or np.linalg.norm(path[-1] - pose[:2]) <= cfg.goal_tolerance:
            nav.done = f"reached the reachable point nearest {goal.label}"
            return None
        target = self.state.graph.grid.straight(pose, path, cfg.waypoint_step)
        dx, dy = target - pose[:2]
        nav.steps += 1
        return np.array([min(math.hypot(dx, dy), cfg.waypoint_step),
                         math.remainder(math.atan2(dy, dx) - pose[3], 2 * math.pi), 0.0], dtype=np.float32)

    def _arrived(self) -> str:
        """Close the navigation: MEMORYUPDATE from the observation buffer."""
        state = self.state
        nav, state.nav = state.nav, None
        if nav.new_images or nav.new_objects:
            graph = state.graph
            listing = [graph.images[i].description for i in nav.new_images[-24:]]
            listing += [graph.objects[n].describe() for n in nav.new_objects]
            prompt = Prompt()
            prompt.section("Task", self.task_text())
            prompt.section("New observations while moving", "\n".join(listing), cut="oldest")
            picked = self.structured("information_selection", P.SELECT_INFO_SYSTEM, prompt, P.InformationSelection)
            if picked is not None and not picked.done and picked.items:
                details = self._details(picked.items)
                self._update_memory(f"navigation to {nav.goal.label}", ToolResult(True, nav.done or "", details[1]),
                                    details[0])
        return nav.done or "ended"

    def _details(self, items: Sequence[str]) -> tuple[str, list[tuple[str, np.ndarray]]]:
        graph, lines, images = self.state.graph, [], []
        for item in items[:6]:
            key = item.strip().lower()
            digits = "".join(ch for ch in key if ch.isdigit())
            if key.startswith("image") and digits and int(digits) < len(graph.images):
                record = graph.images[int(digits)]
                lines.append(record.description)
                if record.rgb is not None:
                    images.append((f"image {record.image_id}", record.rgb))
            elif (nodes := graph.matching(key)):
                lines.append(nodes[0].describe())
            elif (room := graph.room(key)) is not None:
                lines.append(f"{room.name}: objects {', '.join(n.name for n in graph.objects.values() if graph.room_of(n.position) is room)}")
        return "\n".join(lines), images

    # -- trace ---------------------------------------------------------------------

    def trace(self) -> Mapping[str, Any] | None:
        out = super().trace()
        state = self.state
        if out is None:
            return None
        ended = state.ended or {}
        out["arna"] = {
            "workflow": state.workflow,
            "plan_rejections": len(state.plan_rejections),
            "plan_rejection_problems": state.plan_rejections,
            "function_call_errors": state.function_call_errors,
            "perception_failures": state.perception_failures.details,
            "statements_executed": state.executed,
            "out_of_order_steps": state.jumps,
            "answer": ended.get("answer"),
            "terminated": ended.get("rationale"),
            "outcome_reason": ended.get("outcome_reason"),
            "list_cost_usd": round(state.list_cost_usd, 8),
            "memory": state.memory.to_dict(),
            "scene_graph": state.graph.statistics() if state.graph is not None else "",
            "objects": {} if state.graph is None else {
                n.name: [round(float(v), 2) for v in n.position] for n in state.graph.objects.values()},
            "rooms": [] if state.graph is None else [r.name for r in state.graph.rooms],
        }
        return out


def option_index(answer: str | None, options: Sequence[str]) -> int | None:
    """The option an answer names: a letter standing alone or before ``)``, ``.`` or ``:``
    (``B``, ``B)``, ``Option B.``; not the article of "a bed") or an option's text (as
    whole words; the longest when one option's text holds another's)."""
    raw = str(answer or "").strip()
    letter = re.match(r"(?:option\s*)?\(?([a-z])\s*(?:[).:,]|$)", raw, re.IGNORECASE)
    if letter and letter.group(1).upper() in OPTION_LETTERS[:len(options)]:
        return OPTION_LETTERS.index(letter.group(1).upper())
    text = " " + " ".join(re.sub(r"[^\w\s]", " ", raw.lower()).split()) + " "
    named = {k: " ".join(o.lower().split()) for k, o in enumerate(options) if f" {' '.join(o.lower().split())} " in text}
    named = [k for k, o in named.items() if not any(o != p and f" {o} " in f" {p} " for p in named.values())]
    return named[0] if len(named) == 1 else None


def _json_action(action: Any) -> Any:
    if isinstance(action, Answer):
        return {"answer": action.index}
    if isinstance(action, Inconclusive):
        return {"inconclusive": action.reason}
    return [round(float(v), 4) for v in np.asarray(action).reshape(-1)]
