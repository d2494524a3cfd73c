"""The LLM side of a run's summary: usage totals and the agents' trace metrics.

- **Usage** sums each record's ``llm`` field (:class:`~vlnverse.llm.budget.UsageMeter`):
  calls and cache hits, tokens (cache hits included), billed cost (cache hits cost 0)
  and list cost (as if nothing were cached), plus the agents' reply-handling counters
  from their traces (``fallbacks``, ``repairs``, ``parse_failures``), so unusable model
  replies are visible in every report, and the traces' calls and tokens per role
  (``roles``: the decision, or each expert of a multi-call agent such as DiscussNav), and
  what was cut to fit the model's context window (``FITTING``, from the traces'
  ``fitting`` counts; ``too_long``: requests that did not fit even so and fell back).
- **Trace metrics** (AORI, DR, JOR, MPTR) get a table when any episode has them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

USAGE_FIELDS = ("calls", "cached_calls", "prompt_tokens", "completion_tokens", "tokens",
                "cost_usd", "list_cost_usd", "unpriced_calls", "failed_calls", "unreachable_calls",
                "estimated_calls")
TRACE_COUNTERS = ("fallbacks", "repairs", "parse_failures")
TRACE_METRICS = ("AORI", "DR", "JOR", "MPTR")
FITTING = ("requests_cut", "tokens_cut", "answers_capped", "too_long")


def llm_totals(records: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Per-run LLM totals (None when no record used a model or traced reply handling)."""
    totals: dict[str, Any] = {name: 0 for name in (*USAGE_FIELDS, *TRACE_COUNTERS, *FITTING)}
    roles: dict[str, dict[str, int]] = {}
    episodes = 0
    seen = False
    for record in records:
        usage = record.get("llm")
        trace = record.get("agent_trace")
        counted = False
        if isinstance(usage, Mapping):
            for name in USAGE_FIELDS:
                totals[name] += usage.get(name) or 0
            counted = True
        if isinstance(trace, Mapping) and any(name in trace for name in TRACE_COUNTERS):
            for name in TRACE_COUNTERS:
                value = trace.get(name)
                totals[name] += value if isinstance(value, int) and not isinstance(value, bool) else 0
            counted = True
        if isinstance(trace, Mapping):
            fitting = trace.get("fitting") if isinstance(trace.get("fitting"), Mapping) else {}
            failures = trace.get("failures") if isinstance(trace.get("failures"), Mapping) else {}
            for name, value in (*((n, fitting.get(n)) for n in FITTING[:3]), ("too_long", failures.get("too_long"))):
                totals[name] += value if isinstance(value, int) and not isinstance(value, bool) else 0
        if isinstance(trace, Mapping) and isinstance(trace.get("roles"), Mapping):
            for role, counts in trace["roles"].items():
                into = roles.setdefault(str(role), {"calls": 0, "prompt": 0, "completion": 0})
                for name in into:
                    into[name] += int(counts.get(name) or 0) if isinstance(counts, Mapping) else 0
        episodes += counted
        seen = seen or counted
    if not seen:
        return None
    totals["cost_usd"] = round(totals["cost_usd"], 6)
    totals["list_cost_usd"] = round(totals["list_cost_usd"], 6)
    totals["episodes"] = episodes
    if roles:
        totals["roles"] = dict(sorted(roles.items()))
    return totals


def usage_markdown(totals: Mapping[str, Any] | None) -> list[str]:
    """The ``summary.md`` lines of the usage totals."""
    if not totals:
        return []
    per_episode = totals["tokens"] / totals["episodes"] if totals["episodes"] else 0.0
    lines = [
        "### LLM usage (this run's records)", "",
        "| Episodes | Calls | Cache hits | Prompt tokens | Completion tokens | Tokens / episode "
        "| Billed $ | List $ | Fallbacks | Repairs | Parse failures |",
        "|" + "---|" * 11,
        f"| {totals['episodes']} | {totals['calls']} | {totals['cached_calls']} | {totals['prompt_tokens']} "
        f"| {totals['completion_tokens']} | {per_episode:.0f} | {totals['cost_usd']:.4f} "
        f"| {totals['list_cost_usd']:.4f} | {totals['fallbacks']} | {totals['repairs']} "
        f"| {totals['parse_failures']} |",
        "",
        "Tokens include cache hits; billed $ counts only calls sent to the endpoint, list $ prices "
        "every call as if uncached.",
    ]
    if totals.get("unpriced_calls"):
        lines.append(f"{totals['unpriced_calls']} call(s) were to a model without a price; they add no cost.")
    if totals.get("estimated_calls"):
        lines.append(f"{totals['estimated_calls']} call(s) came without token usage; their tokens are estimates "
                     "(vlnverse.llm.usage: UTF-8 bytes / 4, images by OpenAI's tile rule).")
    lines += fitting_markdown(totals)
    return [*lines, "", *roles_markdown(totals.get("roles"))]


def fitting_markdown(totals: Mapping[str, Any]) -> list[str]:
    """The ``summary.md`` lines saying when prompts were cut to fit the context window."""
    lines = []
    if totals.get("requests_cut"):
        lines.append(f"Prompts were cut to fit the model's context window in {totals['requests_cut']} request(s) "
                     f"(about {totals['tokens_cut']} tokens, estimated; vlnverse.agents.fitting).")
    if totals.get("answers_capped"):
        lines.append(f"{totals['answers_capped']} model answer(s) were capped before going into later prompts.")
    if totals.get("too_long"):
        lines.append(f"{totals['too_long']} request(s) did not fit the context window even so; they were not sent "
                     "and counted as bad replies (the agent's fallback).")
    return lines


def budget_markdown(budget: Mapping[str, Any] | None) -> list[str]:
    """The ``summary.md`` lines of the output folder's LLM spend against its budget."""
    if not budget:
        return []

    def limit(value: Any, fmt: str) -> str:
        return "no limit" if value is None else fmt.format(value)

    lines = ["### LLM budget (this output folder, every invocation)", "",
             f"Billed {budget['tokens']} tokens of {limit(budget.get('max_tokens'), '{}')} and "
             f"${budget['usd']:.4f} of {limit(budget.get('max_usd'), '${:.4f}')} over {budget['calls']} call(s)."]
    if budget.get("estimated_tokens"):
        lines.append(f"{budget['estimated_tokens']} of those tokens are estimates (replies without usage).")
    return [*lines, ""]


def roles_markdown(roles: Mapping[str, Mapping[str, int]] | None) -> list[str]:
    """A table of calls and tokens per role (where a multi-call agent's tokens go)."""
    if not roles or set(roles) == {"decision"}:
        return []
    grand = sum(c["prompt"] + c["completion"] for c in roles.values()) or 1
    lines = ["### LLM tokens by role (agent traces)", "",
             "| Role | Calls | Prompt tokens | Completion tokens | Share of tokens |", "|---|---|---|---|---|"]
    for role, c in sorted(roles.items(), key=lambda item: -(item[1]["prompt"] + item[1]["completion"])):
        share = 100.0 * (c["prompt"] + c["completion"]) / grand
        lines.append(f"| {role} | {c['calls']} | {c['prompt']} | {c['completion']} | {share:.1f}% |")
    return [*lines, ""]


def trace_metrics_markdown(summary: Mapping[str, Any]) -> list[str]:
    """A table of AORI / DR / JOR / MPTR per (task, physics), when any group has them."""
    groups = [g for g in summary.get("overall", []) if any(m in g.get("metrics", {}) for m in TRACE_METRICS)]
    if not groups:
        return []
    run = summary.get("run", {})
    lines = ["### Trace metrics", ""]
    if run.get("trace_metrics"):
        lines += ["Parameters: " + ", ".join(f"{k} = {v}" for k, v in run["trace_metrics"].items()), ""]
    lines += ["| Task | Physics | " + " | ".join(TRACE_METRICS) + " | n |", "|" + "---|" * (len(TRACE_METRICS) + 3)]
    for group in groups:
        metrics = group["metrics"]
        cells = []
        for name in TRACE_METRICS:
            mean = (metrics.get(name) or {}).get("mean")
            cells.append("-" if mean is None else f"{mean:.3f}")
        lines.append(f"| {group['task']} | {group['physics']} | " + " | ".join(cells) + f" | {group['n_episodes']} |")
    return [*lines, ""]
