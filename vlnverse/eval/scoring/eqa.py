"""EQA outcomes (ARNA Table 1): each episode is ``correct``, ``incorrect`` or ``inconclusive``.

An episode the agent ended with an answer (:class:`~vlnverse.eval.agent.Answer` or a
discrete answer action) is ``correct`` or ``incorrect``. Any other end is ``inconclusive``
with an ``outcome_reason`` (:data:`~vlnverse.eval.agent.OUTCOME_REASONS`): the one the agent
gave with :class:`~vlnverse.eval.agent.Inconclusive`, else the runner's end of the episode —
the step budget (``step_limit``, 500 steps in ARNA §6.3), the episode time limit
(``time_limit``), the per-episode LLM cost cap (``cost_limit``), a STOP without an answer
(``no_answer``), a collision in Strict (``collision``) or an agent/env error (``error``).

The record gets ``outcome``, ``outcome_reason``, ``answer`` and ``answer_correct``; its
``metrics`` get ``correct``/``incorrect``/``inconclusive`` (1 or 0), so a group's means are
Table 1's accuracy split and its ``TL`` and ``tokens`` are the mean path length and tokens.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

OUTCOMES = ("correct", "incorrect", "inconclusive")
#: The runner's ``fail_reason`` → the ``outcome_reason`` of an unanswered episode.
REASON_OF_END = {"step_budget": "step_limit", "timeout": "time_limit", "llm_budget": "cost_limit",
                 "stop": "no_answer", "collision": "collision", "error": "error"}


def episode_outcome(fail_reason: str | None, info: Mapping[str, Any], agent_reason: str | None) -> dict[str, Any]:
    """``outcome``, ``outcome_reason``, ``answer`` and ``answer_correct`` of one EQA episode.

    Args:
        fail_reason: How the runner saw the episode end (``stop`` for a terminating step).
        info: The env's last ``info`` (``answer``, ``answer_correct`` after an answer).
        agent_reason: The reason of an :class:`~vlnverse.eval.agent.Inconclusive` the agent returned.
    """
    answer = info.get("answer") if fail_reason == "stop" else None
    if answer is not None:
        correct = bool(info.get("answer_correct"))
        return {"outcome": "correct" if correct else "incorrect", "outcome_reason": None, "answer": int(answer),
                "answer_correct": correct}
    reason = agent_reason or REASON_OF_END.get(str(fail_reason), "error")
    return {"outcome": "inconclusive", "outcome_reason": reason, "answer": None, "answer_correct": False}


def outcome_metrics(outcome: str) -> dict[str, float]:
    """One-hot ``correct``/``incorrect``/``inconclusive`` for the aggregates."""
    return {name: float(name == outcome) for name in OUTCOMES}
