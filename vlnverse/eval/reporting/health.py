"""Whether a run measured the agent: errors, an unreachable model server, fallback moves.

A run can finish, print a table and still have measured nothing: every episode ended in an
error, the model server could not be reached, or the model's replies were unusable so
nearly every step was the agents' fallback move (then the figures are the fallback
walker's). :func:`run_health` counts what tells these apart, from the records alone:

- ``errors``: records that ended in ``error`` (an agent exception, a dead worker, a
  request that failed for good); ``unreachable``: records with a model call that could not
  reach the server (:class:`~vlnverse.errors.LLMServerUnreachable`, whether the agent
  then failed or fell back) or whose policy server could not be reached
  (:class:`~vlnverse.agents.remote.protocol.RemoteUnreachable`);
- ``steps`` / ``fallback_steps``: the agents' traced steps, and those decided by the
  fallback rather than the model (``fallback_share``); ``repairs``: repair prompts sent;
- ``estimated_calls``: model calls whose reply had no token usage (estimated, see
  :mod:`vlnverse.llm.usage`);
- ``warnings``: one sentence per problem (fallback share above the run's
  ``fallback_warning`` threshold, any error, any unreachable call, estimated usage);
- ``verdict``: ``ok``, ``all_errored`` (every record ended in an error) or
  ``unreachable`` (the server could not be reached). ``vlnverse eval`` exits with a
  distinct status for each of the latter (see :mod:`vlnverse.cli.eval`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

DEFAULT_FALLBACK_WARNING = 0.5
"""Share of fallback steps above which a run is flagged (the replies ignored the format)."""

UNREACHABLE_ERRORS = ("LLMServerUnreachable", "RemoteUnreachable")
"""The error types named at the start of a record's ``error`` when the model server (an LLM's,
a policy's) was not reached."""


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _usage(record: Mapping[str, Any], name: str) -> int:
    usage = record.get("llm")
    return _count(usage.get(name)) if isinstance(usage, Mapping) else 0


def _unreachable(record: Mapping[str, Any]) -> bool:
    return bool(_usage(record, "unreachable_calls")) or str(record.get("error") or "").startswith(UNREACHABLE_ERRORS)


def run_health(records: Iterable[Mapping[str, Any]], fallback_warning: float = DEFAULT_FALLBACK_WARNING) -> dict[str, Any]:
    """The ``health`` object of a run's summary (see the module docs)."""
    rows = list(records)
    errors = [r for r in rows if r.get("fail_reason") == "error"]
    unreachable = sum(_unreachable(r) for r in rows)
    steps = fallback_steps = repairs = parse_failures = 0
    for record in rows:
        trace = record.get("agent_trace")
        if not isinstance(trace, Mapping):
            continue
        traced = trace.get("steps")
        if isinstance(traced, list):
            steps += len(traced)
            fallback_steps += sum(1 for s in traced if isinstance(s, Mapping) and s.get("fallback") is True)
        repairs += _count(trace.get("repairs"))
        parse_failures += _count(trace.get("parse_failures"))
    share = fallback_steps / steps if steps else None
    estimated = sum(_usage(r, "estimated_calls") for r in rows)
    warnings = []
    if unreachable:
        warnings.append(f"the model server could not be reached in {unreachable} of {len(rows)} episode(s); "
                        "check the --llm base_url (or the policy server's url) and that the server is up")
    if errors:
        sources = sorted({str(r.get("error_source") or "unknown") for r in errors})
        warnings.append(f"{len(errors)} of {len(rows)} episode(s) ended in an error (source: {', '.join(sources)}; "
                        f"first: {errors[0].get('error')}); --debug shows each traceback; fix the cause and re-run with "
                        "--retry-errors")
    if share is not None and share > fallback_warning:
        warnings.append(f"{100 * share:.0f}% of the agent's steps ({fallback_steps} of {steps}) were fallback moves, "
                        f"above the {100 * fallback_warning:.0f}% threshold: the model's replies did not follow the "
                        f"reply format ({repairs} repair prompts), so the figures measure the fallback walker")
    if estimated:
        warnings.append(f"{estimated} model call(s) came without token usage; their tokens were estimated "
                        "(UTF-8 bytes / 4, images by OpenAI's tile rule) and counted against the budget")
    verdict = "ok"
    if unreachable:
        verdict = "unreachable"
    elif rows and len(errors) == len(rows):
        verdict = "all_errored"
    return {"records": len(rows), "errors": len(errors), "unreachable": unreachable, "steps": steps,
            "fallback_steps": fallback_steps, "fallback_share": share, "repairs": repairs,
            "parse_failures": parse_failures, "estimated_calls": estimated, "fallback_warning": fallback_warning, "warnings": warnings,
            "verdict": verdict}


def health_line(health: Mapping[str, Any]) -> str:
    """One line of the counts (the terminal's and ``summary.md``'s)."""
    share = health.get("fallback_share")
    fallback = (f"{health['fallback_steps']} of {health['steps']} steps by fallback ({100 * share:.1f}%)"
                if share is not None else "no traced steps")
    return (f"{fallback} · {health['repairs']} repair prompts · {health['errors']} error episode(s) · "
            f"{health['unreachable']} with the model server unreachable")


def health_markdown(health: Mapping[str, Any] | None) -> list[str]:
    """The ``summary.md`` lines: the counts, then each warning."""
    if not health:
        return []
    lines = ["### Run health", "", health_line(health) + ".", ""]
    lines += [f"- **Warning:** {w}." for w in health.get("warnings", [])]
    return [*lines, ""] if health.get("warnings") else lines
