"""ARNA's workflow generation (paper §4.5, Appendix D.1–D.2), on the episode's first step.

Termination conditions come zero-shot (free text); then self-discover in four stages:
select a heuristic, adapt it, write pseudocode, implement it as a plan in ARNA's JSON
grammar (:mod:`~vlnverse.agents.arna.plan`). ``workflow: cot`` asks for the plan in one
chain-of-thought call instead (the Table 1c ablation); ``perception: vlm`` also asks for the
objects perception should look for. A plan outside the grammar is rejected, counted
(``plan_rejections``) and asked for again (``plan_repairs``); then the run ends
``function_call_error`` as in the paper, or, with ``fallback_plan``, :data:`FALLBACK_PLAN`
runs (``plan_source: fallback``).
"""

from __future__ import annotations

import json
import logging

from vlnverse.agents.arna import prompts as P
from vlnverse.agents.arna.plan import PlanRejected, Program, validate
from vlnverse.agents.arna.state import Part
from vlnverse.agents.arna.tools import INTERFACES, argument_problems, tool_specs

logger = logging.getLogger(__name__)

#: The built-in plan when the model gives none in the grammar: explore, checking termination.
FALLBACK_PLAN = {"main": [{"while": {"always": True}, "max_iterations": 50,
                           "body": [{"step": "explore", "goal": "explore the nearest promising frontier"}]}]}


class WorkflowGeneration(Part):
    """Writes the episode's workflow (``state.workflow``) and its plan (``state.program``)."""

    def generate(self) -> None:
        """Termination conditions, the self-discover stages (or none, for ``cot``), the
        perception targets (``vlm``), then the plan."""
        agent, state, wf = self.agent, self.state, self.state.workflow
        calls, briefing = agent.calls, agent.briefing
        wf["termination"] = agent.capped(calls.text("termination", P.TERMINATION_SYSTEM, briefing.task_prompt())) \
            or "- The task's goal is verified by the robot's own observations."
        if self.config.workflow == "self_discover":
            prompt = briefing.task_prompt()
            prompt.section("Heuristics", "\n".join(f"{i}. {h}" for i, h in enumerate(P.HEURISTICS, 1)))
            picked = calls.structured("heuristic", P.SELECT_SYSTEM, prompt, P.HeuristicSelection)
            index = picked.heuristic if picked is not None and 1 <= picked.heuristic <= len(P.HEURISTICS) else 1
            state.trace.fallbacks += picked is None
            wf["heuristic"] = P.HEURISTICS[index - 1]
            prompt = briefing.task_prompt()
            prompt.section("Pre-selected heuristic", wf["heuristic"])
            adapted = calls.structured("adapt", P.ADAPT_SYSTEM, prompt, P.AdaptHeuristic)
            wf["adapted"] = agent.capped(adapted.adapted_heuristic) if adapted is not None else wf["heuristic"]
            prompt = briefing.task_prompt()
            prompt.section("Adapted heuristic", wf["adapted"])
            pseudo = calls.structured("pseudocode", P.PSEUDOCODE_SYSTEM, prompt, P.PseudocodeHeuristic)
            wf["pseudocode"] = agent.capped_items(list(pseudo.implementation)) if pseudo is not None else []
        if self.config.perception == "vlm":
            prompt = briefing.task_prompt()
            targets = calls.structured("targets", P.TARGETS_SYSTEM, prompt, P.PerceptionTargets)
            wf["targets"] = ", ".join(targets.objects) if targets is not None else ""
        state.program = self.implement()
        wf["plan"] = state.program.to_dict()

    def implement(self) -> Program:
        """The plan in the grammar (rejections counted; then the fallback plan)."""
        state, wf = self.state, self.state.workflow
        checkers = {name: argument_problems(name) for name in INTERFACES}
        tools = ", ".join(f"{t['name']} ({t['description']})" for t in tool_specs())
        system = (P.COT_SYSTEM if self.config.workflow == "cot" else P.IMPLEMENT_SYSTEM).replace("{tools}", tools)
        prompt = self.agent.briefing.task_prompt()
        if wf.get("pseudocode"):
            prompt.section("Adapted heuristic", wf.get("adapted", ""))
            prompt.section("Pseudocode", "\n".join(wf["pseudocode"]))
        for _ in range(self.config.plan_repairs + 1):
            answer = self.agent.calls.structured("implementation", system, prompt, P.FunctionCallImplementation)
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
            self.agent.budgets.unrepaired_plan(
                f"implementation: no plan in the grammar after {len(state.plan_rejections)} tries")
        wf["plan_source"] = "fallback"
        state.trace.fallbacks += 1
        return validate(FALLBACK_PLAN, checkers)
