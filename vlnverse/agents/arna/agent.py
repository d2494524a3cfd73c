"""``arna``: the Agentic Robotic Navigation Architecture (Lange et al., ARNA; ``papers/arna.txt``).

One episode follows the paper's Algorithm 1, each part in its own module:

1. **Workflow generation** (§4.5, Appendix D.1–D.2; :mod:`~vlnverse.agents.arna.workflow`),
   on the first step: termination conditions (zero-shot text), then self-discover in four
   stages — select a heuristic, adapt it, write pseudocode, implement it as a plan in ARNA's
   JSON grammar (:mod:`~vlnverse.agents.arna.plan`). ``workflow: cot`` asks for the plan in
   one chain-of-thought call instead (the Table 1c ablation). A plan outside the grammar is
   rejected, counted (``plan_rejections``) and asked for again (``plan_repairs``); then the
   run ends ``function_call_error`` as in the paper, or, with ``fallback_plan``, the
   built-in exploration plan runs (``plan_source: fallback``).
2. **Executor** (Appendix D.3; :mod:`~vlnverse.agents.arna.executor`): before each step the
   model decides whether the termination conditions hold and which plan line runs next
   (``NextStep``): the line in program order or any other line of the main plan (§4.5: no
   fixed ordering; the interpreter resumes there, enforcing the grammar and the budgets),
   and may have one of the plan's reasoning functions run first (the paper's "algorithm"
   step). A condition ``found(VAR)`` is decided by the model from its memory and the
   findings of the step that stored ``VAR`` (Appendix E.2), not by the tool's own flag. A
   high-level step becomes one tool call chosen by the model from the toolset
   (:mod:`~vlnverse.agents.arna.tools`) by tool calling; an invalid call (after its repair
   turn) is a function-call error.
3. **Memory update** (Appendix D.4; :mod:`~vlnverse.agents.arna.memory_update`) after each
   step: the model rewrites the memory from the tool result; after navigation, it first
   selects the relevant new observations (information selection) from the observation buffer.
4. **Navigation** (:mod:`~vlnverse.agents.arna.navigation`): a goal from a tool is reached
   by A* over the agent's own occupancy grid, one waypoint action per environment step,
   replanning as the map grows and after bumps; every step's observations update the scene
   graph (perception) and the buffer.

Perception is the agent's own (:mod:`~vlnverse.agents.arna.perception`, into
:mod:`~vlnverse.agents.arna.worldmodel`): depth plus the semantic sensor (``perception: gt``,
which also reads the room label; recorded as privileged) or the model's labels of the RGB
views (``perception: vlm``). The env's scene graph is never read.

Ending (Table 1; this module): on EQA the model's terminal answer (an option letter or text)
becomes :class:`~vlnverse.eval.agent.Answer`; on the navigation tasks termination is STOP.
Budgets (§6.3; :mod:`~vlnverse.agents.arna.budgets`): environment steps (the env's
``--max-steps``, one waypoint move each; the env ends the episode, ``step_limit`` on EQA),
list cost of the model calls (``max_cost_usd``, $3 → ``cost_limit``; or
``max_tokens_per_episode`` for a model without a price), wall time (``max_wall_s`` →
``time_limit``) and failed function calls — invalid tool calls and structured outputs that
never followed their schema (→ ``function_call_error``); the interpreter's statement limit
ends the run as ``statement_limit``. A run ended so returns
:class:`~vlnverse.eval.agent.Inconclusive` with the reason (the episode's ``outcome`` is
``inconclusive``); a terminal answer that names no option gives ``no_answer``. The trace's
``arna`` entry keeps the answer, the reason and what led there.

Within the model's context window (:mod:`vlnverse.agents.fitting`;
:mod:`~vlnverse.agents.arna.calls`): the memory's fields, the workflow's texts and the
visual analyses are capped (``answer_tokens``) when kept; a prompt still too long loses the
oldest new observations, then the ends of the long lines (memory, plan, scene-graph
listings); every structured or tool request keeps room for its repair turn and, where the
server takes no schema or tools natively, for their text. A request that does not fit even
so is counted (``too_long``) and its answer is missing (the same fallbacks as an unusable
answer), not a function-call error.

:class:`ARNAAgent` holds the parts (one collaborator each, :class:`~vlnverse.agents.arna.state.Part`)
and runs the step loop: workflow generation on the first step, perception on every step,
then navigation or the executor until one action comes.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vlnverse.agents.arna import prompts as P
from vlnverse.agents.arna.briefing import OPTION_LETTERS, Briefing
from vlnverse.agents.arna.budgets import Budgets, BudgetSpent
from vlnverse.agents.arna.calls import ModelCalls
from vlnverse.agents.arna.config import ARNAConfig
from vlnverse.agents.arna.executor import Executor
from vlnverse.agents.arna.failures import FailureCounter
from vlnverse.agents.arna.memory_update import MemoryWriter
from vlnverse.agents.arna.navigation import Navigator
from vlnverse.agents.arna.perception import Perception
from vlnverse.agents.arna.state import ARNAState, Navigation
from vlnverse.agents.arna.workflow import WorkflowGeneration
from vlnverse.agents.base import LLMWaypointAgent, StepView
from vlnverse.agents.trace import TRACE_DECIMALS
from vlnverse.agents.waypoints.predictor import WaypointPredictor
from vlnverse.errors import ConfigError
from vlnverse.eval.agent import Answer, EpisodeInfo, Inconclusive, json_action

STOP_ACTION = (0.0, 0.0, 1.0)


class ARNAAgent(LLMWaypointAgent):
    """ARNA (see the module docs).

    Args:
        config: A mapping of settings (the ``--agent-config`` file) or :class:`ARNAConfig`.
        llm: The client to use; None builds one from ``config.llm`` on the first episode.
        predictor: Candidate waypoint predictor (default: the one ``config.waypoint_predictor`` names).
    """

    config_class = ARNAConfig
    name = "arna"
    decision_role = "next_step"
    system_prompt = P.NEXT_STEP_SYSTEM

    def __init__(self, config: Mapping[str, Any] | Any = None, *, llm: Any = None,
                 predictor: WaypointPredictor | None = None) -> None:
        super().__init__(config, llm=llm, predictor=predictor)
        self.budgets = Budgets(self)                  # §6.3: time, cost, failed function calls
        self.calls = ModelCalls(self)                 # the model, metered
        self.briefing = Briefing(self)                # the task and context sections of the prompts
        self.generation = WorkflowGeneration(self)    # §4.5: termination conditions and the plan
        self.execution = Executor(self)               # Algorithm 1: SELECTSTEP, EXECUTESTEP
        self.memory_writer = MemoryWriter(self)       # Algorithm 1: MEMORYUPDATE
        self.perception = Perception(self)            # UPDATEPERCEPTION: the agent's own scene graph
        self.navigator = Navigator(self)              # the inner loop: waypoints to a goal

    def reply_fields(self, view: StepView) -> Mapping[str, str]:
        return {}  # ARNA's replies are structured outputs and tool calls

    def new_state(self, episode: EpisodeInfo) -> ARNAState:
        return ARNAState(episode, perception_failures=FailureCounter(
            "perception_error", self.config.max_perception_failures))

    def check_model(self, spec: str) -> None:
        """Refuse, before the run, a model without a price when no token cap is set."""
        from vlnverse.agents.arna.preflight import check_priced

        check_priced(spec, self.config.max_tokens_per_episode)

    # -- the step loop ---------------------------------------------------------------

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
                self.generation.generate()                        # so perception knows its targets
                state.executor = self.execution.run()
            self.perception.perceive(observation, pose)
            if state.ended is None:
                self.budgets.check()
                action = self._advance(pose, bump)
        except BudgetSpent as exc:
            action = self._end(None, str(exc), reason=exc.reason)
        if state.ended is not None and state.ended["step"] < state.step:
            action = self._final_action()
        self.record["action"] = json_action(action, TRACE_DECIMALS)
        state.trace.steps.append(self.record)
        state.trace.waypoints.append([round(float(pose[0]), 3), round(float(pose[1]), 3)])
        state.step += 1
        return action

    def _advance(self, pose: np.ndarray, bump: bool) -> np.ndarray:
        """Drive the executor until it asks for motion (one action) or ends."""
        state = self.state
        sent: str | None = None
        if state.nav is not None:
            action = self.navigator.action(pose, bump)
            if action is not None:
                return action
            sent = self.navigator.arrive()
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
            action = self.navigator.action(pose, bump=False)
            if action is not None:
                return action
            sent = self.navigator.arrive()
        raise BudgetSpent("statement_limit", "the executor took no action within its statement limit")

    # -- the ending ------------------------------------------------------------------

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

    # -- trace -----------------------------------------------------------------------

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
