"""The decision trace of an LLM agent's episode (JSON-ready; the viewer and metrics read it).

Shape::

    {"steps": [{"step", "pose", "candidates", "messages", "reply", "parsed", "action",
                "fallback", "repair", ...}],
     "fallbacks", "repairs", "parse_failures", "failures": {kind: n},
     "tokens": {"prompt", "completion"}, "cost_usd", "calls", "cached_calls", "truncations",
     "waypoints": [[x, y], ...], "roles": {role: {"calls", "prompt", "completion"}},
     "fitting": {"requests_cut", "tokens_cut", "answers_capped"}}

``tokens`` count every answered call, cached or not; ``cost_usd`` is what was billed
(cache hits cost nothing); ``roles`` splits the calls and tokens by the role that made
them (``decision`` for the action; multi-call agents name their experts). ``truncations``
counts replies cut at the reply budget (``finish_reason == "length"``; of a request with
``n`` choices only the first one's reason is known), apart from the parse failures they
may cause. ``waypoints`` are the decision locations (shown to the reader; AORI is computed
from the harness's recorded trajectory, not from them). ``fitting`` counts what was cut
to fit the model's context window (:mod:`vlnverse.agents.fitting`): requests whose prompt
was cut, the estimated tokens cut, and model answers capped before they went into later
prompts; a request that did not fit even so is a failure of kind ``too_long`` (no call
is counted: nothing was answered).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from vlnverse.llm.types import LLMResponse

TOO_LONG = "too_long"
"""The failure kind (and the placeholder reply's ``finish_reason``) of a request that did
not fit the model's context window."""

TRACE_DECIMALS = 4
"""Actions in an agent's trace are rounded to 4 decimals (0.1 mm, 0.1 mrad)."""


@dataclass
class AgentTrace:
    """Counts and per-step records of one episode."""

    steps: list[dict[str, Any]] = field(default_factory=list)
    fallbacks: int = 0
    repairs: int = 0
    failures: Counter = field(default_factory=Counter)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0
    cached_calls: int = 0
    truncations: int = 0
    waypoints: list[list[float]] = field(default_factory=list)
    roles: dict[str, dict[str, int]] = field(default_factory=dict)
    fitting: Counter = field(default_factory=Counter)

    def note_fit(self, tokens_cut: int) -> None:
        """Count one request whose prompt was cut by ``tokens_cut`` (estimated) to fit."""
        self.fitting["requests_cut"] += 1
        self.fitting["tokens_cut"] += tokens_cut

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def count_call(self, response: LLMResponse, role: str = "decision") -> None:
        """Add one answered call's usage and cost (its tokens also under ``role``); a
        placeholder for a request too long to send counts as a ``too_long`` failure."""
        if response.finish_reason == TOO_LONG:
            self.failures[TOO_LONG] += 1
            return
        per_role = self.roles.setdefault(role, {"calls": 0, "prompt": 0, "completion": 0})
        per_role["calls"] += 1
        per_role["prompt"] += response.usage.prompt_tokens
        per_role["completion"] += response.usage.completion_tokens
        self.calls += 1
        self.prompt_tokens += response.usage.prompt_tokens
        self.completion_tokens += response.usage.completion_tokens
        if response.finish_reason == "length":
            self.truncations += 1
        if response.cached:
            self.cached_calls += 1
        elif response.cost_usd is not None:
            self.cost_usd += float(response.cost_usd)

    def to_dict(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "fallbacks": self.fallbacks,
            "repairs": self.repairs,
            "parse_failures": sum(self.failures.values()),
            "failures": dict(sorted(self.failures.items())),
            "tokens": {"prompt": self.prompt_tokens, "completion": self.completion_tokens},
            "cost_usd": round(self.cost_usd, 8),
            "calls": self.calls,
            "cached_calls": self.cached_calls,
            "truncations": self.truncations,
            "waypoints": self.waypoints,
            "roles": {role: dict(counts) for role, counts in sorted(self.roles.items())},
            "fitting": {name: self.fitting[name] for name in ("requests_cut", "tokens_cut", "answers_capped")},
        }
