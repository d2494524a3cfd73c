"""ARNA's workflow executor (paper Algorithm 1, Appendix D.3): the plan run until termination.

Before each step the model decides whether the termination conditions hold and which plan
line runs next (``NextStep``): the line in program order or any other line of the main
plan (§4.5: no fixed ordering; the interpreter resumes there, enforcing the grammar and
the budgets), and may have one of the plan's reasoning functions run first (the paper's
"algorithm" step). A condition ``found(VAR)`` is decided by the model from its memory and
the findings of the step that stored ``VAR`` (Appendix E.2), not by the tool's own flag. A
high-level step becomes one tool call chosen by the model from the toolset
(:mod:`~vlnverse.agents.arna.tools`) by tool calling; an invalid call (after its repair
turn) is a function-call error. After each step the memory is updated
(:mod:`~vlnverse.agents.arna.memory_update`); a step with a navigation goal hands it to
the agent, which drives the robot there (:mod:`~vlnverse.agents.arna.navigation`).
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any

from pydantic import ValidationError

from vlnverse.agents.arna import prompts as P
from vlnverse.agents.arna.budgets import BudgetSpent
from vlnverse.agents.arna.lineref import line_reference
from vlnverse.agents.arna.plan import Interpreter, StepLimit, describe
from vlnverse.agents.arna.state import Part
from vlnverse.agents.arna.tools import KIND_TOOLS, NavGoal, ToolResult, tool_specs


class Terminated(Exception):
    """The model decided that the termination conditions hold."""

    def __init__(self, answer: str | None, rationale: str) -> None:
        self.answer = answer
        self.rationale = rationale


class Executor(Part):
    """SELECTSTEP, TERMINATE and EXECUTESTEP over the interpreter of the generated plan."""

    def run(self) -> Generator[NavGoal | None, str | None, tuple[str | None, str]]:
        """Run the generated plan until termination; returns
        ``(answer, rationale)``. Yields navigation goals (receiving how they ended), and
        None for a STOP that ends one leg of a long-horizon episode."""
        state = self.state
        start: int | None = None
        while True:
            try:
                interpreter = state.interpreter = Interpreter(
                    state.program, self.execute, self.config.max_plan_statements - state.executed,
                    select=self.select, judge=self.judge)
                try:
                    yield from interpreter.run(start)
                finally:
                    state.executed += interpreter.executed
                choice = self.select_step("(the plan has finished: terminate if the conditions hold, else name "
                                          "the line to run next; by default it runs again from line 1)")
                start = self.chosen_line(choice, 0)
                state.memory.log("the plan finished without terminating; running it again"
                                 + (f" from line {start}" if start else ""))
            except Terminated as done:
                if state.legs is not None and state.leg + 1 >= state.legs:
                    return done.answer, done.rationale  # else the env ends the episode at its last goal
                state.memory.log(f"step {state.step}: stopped at goal {state.leg + 1}: {done.rationale}")
                state.leg += 1
                yield None
            except StepLimit as exc:
                raise BudgetSpent("statement_limit", str(exc)) from None

    # -- SELECTSTEP / TERMINATE ------------------------------------------------------

    def select_step(self, upcoming: str) -> P.NextStep | None:
        """SELECTSTEP / TERMINATE: ask whether the termination conditions hold (and whether
        to run a reasoning function first)."""
        state = self.state
        answer = self.agent.calls.structured("next_step", P.NEXT_STEP_SYSTEM,
                                             self.agent.briefing.step_prompt(upcoming), P.NextStep)
        if answer is None:
            state.trace.fallbacks += 1
            self.record["fallback"] = True
            return None
        self.record.setdefault("next_step", []).append(answer.model_dump())
        if answer.terminal:
            raise Terminated(answer.answer, answer.rationale)
        return answer

    def select(self, line: int | None, stmt: Mapping[str, Any]) -> Generator[NavGoal, str, int | None]:
        """SELECTSTEP before a statement runs: termination, a reasoning function to run first,
        and the main-plan line to run instead of this one (None: this one)."""
        upcoming = (f"line {line}: " if line else "(inside a reasoning function) ") + describe(stmt)
        if "answer" in stmt:
            upcoming += ": the plan reached its answer step; terminate if the conditions hold"
        choice = self.select_step(upcoming)
        yield from self.run_chosen_function(choice)
        return self.chosen_line(choice, line)

    def chosen_line(self, choice: P.NextStep | None, line: int | None) -> int | None:
        """The line ``choice`` names when it names another one than ``line`` (0: the plan's
        end); a name that is no line of the plan is a function-call error."""
        state = self.state
        text = (choice.next_step or "").strip() if choice is not None else ""
        if not text or line is None:   # no choice, or inside a reasoning function (runs in order)
            return None
        target, count = line_reference(text), len(state.program.lines)
        if target is None or not 1 <= target <= count:
            self.agent.budgets.function_call_error(f"next_step: {text[:60]!r} names no line of the plan (1 to {count})")
            return None
        if target == line:
            return None
        self.record.setdefault("jumps", []).append({"from": line or "end", "to": target})
        state.jumps += 1
        state.memory.log(f"step {state.step}: chose line {target} of the plan"
                         + (f" instead of line {line}" if line else " after its end"))
        return target

    def judge(self, var: str) -> bool:
        """A ``found(var)`` condition, decided by the model from the memory and the findings
        of the step that stored ``var`` (its tool's flag when no usable answer came)."""
        state = self.state
        variables = state.interpreter.variables
        result = variables.get(var)
        flag = bool(getattr(result, "found", False))
        prompt = self.agent.briefing.step_prompt(f"deciding the condition found({var})")
        prompt.section("Condition", f"found({var}): has the plan step that stores {var} "
                       f"({state.program.stored_by(var)}) found what it looked for? Decide from the memory and "
                       "the findings below, not from whether a tool answered.")
        findings = getattr(result, "text", None) or ("(that step has not run yet)" if var not in variables
                                                     else str(result))
        prompt.section("Findings of that step", findings, cut="shorten")
        answer = self.agent.calls.structured("condition", P.CONDITION_SYSTEM, prompt, P.ConditionCheck)
        holds = answer.holds if answer is not None else flag
        self.record.setdefault("conditions", []).append(
            {"condition": f"found({var})", "holds": holds, "tool_flag": flag,
             "rationale": answer.rationale if answer is not None else None})
        return holds

    def run_chosen_function(self, choice: P.NextStep | None) -> Generator[NavGoal, str, None]:
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

    # -- EXECUTESTEP -------------------------------------------------------------------

    def execute(self, stmt: Mapping[str, Any]) -> Generator[NavGoal, str, Any]:
        """EXECUTESTEP of one plan statement, then MEMORYUPDATE."""
        state = self.state
        line = describe(stmt)
        if "answer" in stmt:   # its termination check was the selection before it
            return None
        if "tool" in stmt:
            name, arguments = stmt["tool"], {"rationale": "planned step", **stmt.get("args", {})}
        else:
            name, arguments = self.choose_tool(stmt)
            if name is None:
                return ToolResult(False, "the tool call failed")
        try:
            result = state.tools.call(name, arguments)
        except ValidationError as exc:
            self.agent.budgets.function_call_error(f"{name}: {exc.errors()[0]['msg'] if exc.errors() else exc}")
            return ToolResult(False, "the tool call failed")
        self.record.setdefault("tool_calls", []).append({"stmt": line, "tool": name, "arguments": arguments,
                                                         "found": result.found, "result": result.text[:500]})
        if result.goal is not None:
            ended = yield result.goal
            result.text += f" Navigation: {ended}."
        state.memory.log(f"step {state.step}: {line} -> {name}: {result.text[:160]}")
        self.agent.memory_writer.update(line, result)
        return result

    def choose_tool(self, stmt: Mapping[str, Any]) -> tuple[str | None, dict[str, Any]]:
        """The exact tool call of a high-level step (tool calling over the step's tools)."""
        specs = tool_specs(KIND_TOOLS[stmt["step"]])
        call = self.agent.calls.tool_call("execute", P.EXECUTE_SYSTEM, self.agent.briefing.step_prompt(describe(stmt)),
                                          specs)
        if call is None:
            return None, {}
        return call.name, dict(call.arguments)
