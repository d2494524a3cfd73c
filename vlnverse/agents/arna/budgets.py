"""ARNA's budgets (paper §6.3) and the failures that end a run.

Before every model call: the episode's wall time (``max_wall_s`` → ``time_limit``) and the
list cost of its model calls (``max_cost_usd`` → ``cost_limit``, or
``max_tokens_per_episode`` for a model without a price). Failed function calls (an invalid
tool call, a structured output that never followed its schema, a line reference to no line
of the plan) end the run as ``function_call_error`` after ``max_function_call_errors``; a
perception reply without its structure is counted apart and ends it as
``perception_error`` (:mod:`~vlnverse.agents.arna.failures`). A run so ended raises
:class:`BudgetSpent`, which the agent turns into
:class:`~vlnverse.eval.agent.Inconclusive`.
"""

from __future__ import annotations

import time
from typing import NoReturn

from vlnverse.agents.arna.state import Part


class BudgetSpent(Exception):
    """A budget or the function-call limit ended the run (``reason``: an
    :data:`~vlnverse.eval.agent.OUTCOME_REASONS` entry)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


class Budgets(Part):
    """The episode's budgets and failure counts."""

    def check(self) -> None:
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

    def function_call_error(self, detail: str) -> None:
        """A failed function call: counted, logged in the memory, and the end of the run at
        ``max_function_call_errors``."""
        state = self.state
        state.function_call_errors.append(detail[:300])
        state.trace.failures["function_call"] += 1
        state.memory.log(f"step {state.step}: function call error: {detail[:160]}")
        if len(state.function_call_errors) >= self.config.max_function_call_errors:
            raise BudgetSpent("function_call_error", f"invalid tool call: {detail[:200]}")

    def unrepaired_plan(self, detail: str) -> NoReturn:
        """No plan in the grammar after its repairs: a function-call error that ends the run
        (the paper's ending when no fallback plan is allowed)."""
        state = self.state
        state.function_call_errors.append(detail)
        state.trace.failures["function_call"] += 1
        raise BudgetSpent("function_call_error", detail)

    def perception_failure(self, detail: str) -> None:
        """A perception reply without its structure: counted apart from function-call
        errors, ending the run (``perception_error``) after ``max_perception_failures`` in a row."""
        state = self.state
        state.trace.failures["perception"] += 1
        state.memory.log(f"step {state.step}: perception failed: {detail[:160]}")
        failures = state.perception_failures
        if failures.fail(detail):
            raise BudgetSpent(failures.reason, f"{failures.streak} perception replies in a row without their "
                                               f"structure: {detail[:200]}")
