"""``summary.json`` and ``summary.md``: a run's metrics shaped like the paper's tables.

- **Table 5** (fine- and coarse-grained tasks): one row per agent and physics mode, Tel-Hop
  and Strict side by side, columns TL, NE, SR, OSR, SPL, nDTW, CR.
- **Table 6** (visual reference, dialogue, long-horizon): the same columns plus the
  conditional SR_1..SR_n, SR_All (final-goal success, the paper's) and SR_Ordered (every
  goal reached in order, not in the paper) of long-horizon episodes.

- **EQA** (ARNA's Table 1): accuracy as correct / incorrect, the inconclusive share, mean
  path length (TL) and mean tokens, with the inconclusive reasons counted (Table 1b).

Rates (SR, OSR, SPL, nDTW, CR, SR_n, the EQA outcomes) are shown in percent as in the paper, lengths in
metres. Every figure is a mean over episodes with a 95 % bootstrap interval in
``summary.json`` (and in the detail section of ``summary.md``). Records are sorted before
aggregating, so the summary does not depend on the order episodes finished in.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from vlnverse.eval.reporting.health import DEFAULT_FALLBACK_WARNING, health_markdown, run_health
from vlnverse.eval.reporting.llm_report import (
    budget_markdown,
    llm_totals,
    trace_metrics_markdown,
    usage_markdown,
)
from vlnverse.eval.scoring.aggregate import aggregate_metrics

TABLE5_TASKS = ("fine", "coarse")
TABLE6_TASKS = ("visual_reference", "dialogue", "long_horizon")
TASK_TITLES = {
    "fine": "Fine-grained task",
    "coarse": "Coarse-grained task",
    "visual_reference": "Visual reference",
    "dialogue": "Dialogue-based",
    "long_horizon": "Long-horizon",
    "eqa": "Embodied question answering (EQA)",
}
PHYSICS_TITLES = {"tel_hop": "Tel-Hop", "strict": "Strict", "slide": "Slide"}
PHYSICS_ORDER = ("tel_hop", "strict", "slide")
COLUMNS = ("TL", "NE", "SR", "OSR", "SPL", "nDTW", "CR")
EQA_COLUMNS = ("correct", "incorrect", "inconclusive", "TL", "tokens")
PERCENT = frozenset({"SR", "OSR", "SPL", "nDTW", "SDTW", "CR", "SR_All", "SR_Ordered", "correct", "incorrect",
                     "inconclusive"})
ARROWS = {"NE": "↓", "SR": "↑", "OSR": "↑", "SPL": "↑", "nDTW": "↑", "CR": "↓", "SR_All": "↑", "SR_Ordered": "↑",
          "correct": "↑", "incorrect": "↓", "TL": "", "tokens": "↓"}
DETAIL_METRICS = ("TL", "NE", "NE_euclidean", "SR", "OSR", "SPL", "nDTW", "SDTW", "CR", "steps")


def is_percent(name: str) -> bool:
    """Whether metric ``name`` is a rate, shown in %."""
    return name in PERCENT or name.startswith("SR_")


def _physics_rank(physics: str) -> tuple[int, str]:
    return (PHYSICS_ORDER.index(physics) if physics in PHYSICS_ORDER else len(PHYSICS_ORDER), physics)


def sort_records(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Records in a canonical order (task, split, physics, episode id)."""
    return sorted(records, key=lambda r: (str(r.get("task")), str(r.get("split")), str(r.get("physics")),
                                          str(r.get("episode_id"))))


def summarize(records: Iterable[Mapping[str, Any]], run: Mapping[str, Any], *, n_boot: int = 1000,
              seed: int = 0, budget: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``summary.json`` object of a run.

    Args:
        records: ``episodes.jsonl`` records.
        run: Run description (agent, dataset, physics modes, ...), copied in.
        n_boot: Bootstrap resamples.
        seed: Bootstrap seed.
        budget: The output folder's LLM spend and limits (copied in as ``budget``).

    Returns:
        ``{"run", "episodes", "errors", "groups", "overall", "health"}``: ``groups`` per
        (task, split, physics), ``overall`` per (task, physics) over all splits, ``health``
        whether the run measured the agent (:func:`vlnverse.eval.reporting.health.run_health`).
    """
    rows = sort_records(records)
    groups = aggregate_metrics(rows, group_by=("task", "split", "physics"), n_boot=n_boot, seed=seed)
    overall = aggregate_metrics(rows, group_by=("task", "physics"), n_boot=n_boot, seed=seed)
    errors = [r for r in rows if r.get("fail_reason") == "error"]
    out = {
        "run": dict(run),
        "episodes": len(rows),
        "errors": {
            "count": len(errors),
            "examples": [{"episode_id": r["episode_id"], "physics": r["physics"], "error": r.get("error")}
                         for r in errors[:10]],
        },
        "groups": [g.to_dict() for g in groups],
        "overall": [g.to_dict() for g in overall],
    }
    for group in (*out["groups"], *out["overall"]):
        if group["task"] == "eqa":
            reasons = Counter(str(r.get("outcome_reason")) for r in rows if r.get("outcome") == "inconclusive"
                              and all(r.get(k) == v for k, v in group.items() if k in ("task", "split", "physics")))
            group["inconclusive_reasons"] = dict(sorted(reasons.items()))
    out["health"] = run_health(rows, run.get("fallback_warning", DEFAULT_FALLBACK_WARNING))
    totals = llm_totals(rows)
    if totals is not None:
        out["llm"] = totals
    if budget is not None:
        out["budget"] = dict(budget)
    return out


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def _cell(metric: Mapping[str, Any] | None, name: str) -> str:
    if metric is None or metric.get("mean") is None or metric["mean"] != metric["mean"]:
        return "-"
    value = metric["mean"] * (100.0 if is_percent(name) else 1.0)
    return f"{value:.2f}"


def n_cell(group: Mapping[str, Any]) -> str:
    """A row's episode count, with how many of them ended in an error (their metrics are in the row)."""
    errored = group.get("fail_reasons", {}).get("error", 0)
    return f"{group.get('n_episodes', 0)}" + (f" ({errored} errored)" if errored else "")


def _table(title: str, columns: Sequence[str], rows: list[tuple[str, str, Mapping[str, Any]]]) -> list[str]:
    header = ["Agent", "Physics", *[f"{c}{ARROWS.get(c, '')}" for c in columns], "n"]
    lines = [f"#### {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for agent, physics, group in rows:
        metrics = group.get("metrics", {})
        cells = [_cell(metrics.get(c), c) for c in columns]
        lines.append("| " + " | ".join([agent, PHYSICS_TITLES.get(physics, physics), *cells, n_cell(group)]) + " |")
    return [*lines, ""]


def _sr_columns(groups: Iterable[Mapping[str, Any]]) -> list[str]:
    n = 0
    for group in groups:
        for name in group.get("metrics", {}):
            if name.startswith("SR_") and name[3:].isdigit():
                n = max(n, int(name[3:]))
    return [f"SR_{k}" for k in range(1, n + 1)] + (["SR_All", "SR_Ordered"] if n else [])


def markdown_tables(runs: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """Tables 5 and 6 for one or more runs (``(agent label, summary)``), one section per split."""
    by_split: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
    for label, summary in runs:
        for group in summary.get("groups", []):
            by_split.setdefault(group["split"], []).append((label, group))
    out: list[str] = []
    for split in sorted(by_split):
        entries = by_split[split]
        out += [f"### Split `{split}`", ""]
        tasks = {g["task"] for _, g in entries}
        t5 = [t for t in TABLE5_TASKS if t in tasks]
        t6 = [t for t in TABLE6_TASKS if t in tasks]
        others = sorted(tasks - set(TABLE5_TASKS) - set(TABLE6_TASKS) - {"eqa"})
        if t5:
            out += ["**Table 5** — Strict vs Tel-Hop collision settings.", ""]
        for task in [*t5, *others]:
            out += _table(TASK_TITLES.get(task, task), COLUMNS, _rows(entries, task))
        if t6:
            out += ["**Table 6** — visual reference, dialogue and long-horizon tasks.", ""]
        for task in t6:
            rows = _rows(entries, task)
            out += _table(TASK_TITLES[task], _columns(task, rows), rows)
        if "eqa" in tasks:
            rows = _rows(entries, "eqa")
            out += ["**EQA** (as ARNA's Table 1) — accuracy as correct / incorrect / inconclusive (%), "
                    "mean path length (m), mean tokens per episode.", ""]
            out += _table(TASK_TITLES["eqa"], EQA_COLUMNS, rows) + _inconclusive_lines(rows)
    return "\n".join(out)


def _columns(task: str, rows: Sequence[tuple[str, str, Mapping[str, Any]]]) -> list[str]:
    """A task's table columns: EQA's Table 1, long-horizon's SR_n added, else Table 5's."""
    if task == "eqa":
        return list(EQA_COLUMNS)
    return [*COLUMNS, *(_sr_columns(g for _, _, g in rows) if task == "long_horizon" else [])]


def _inconclusive_lines(rows: Sequence[tuple[str, str, Mapping[str, Any]]]) -> list[str]:
    """EQA's inconclusive runs by reason (ARNA Table 1b), one line per agent and physics mode."""
    lines = [f"- inconclusive ({agent}, {PHYSICS_TITLES.get(physics, physics)}): "
             + ", ".join(f"{k} {v}" for k, v in group.get("inconclusive_reasons", {}).items())
             for agent, physics, group in rows if group.get("inconclusive_reasons")]
    return [*lines, ""] if lines else []


def _rows(entries: Sequence[tuple[str, Mapping[str, Any]]], task: str) -> list[tuple[str, str, Mapping[str, Any]]]:
    rows = [(label, g["physics"], g) for label, g in entries if g["task"] == task]
    order = {label: i for i, (label, _) in enumerate(entries)}
    return sorted(rows, key=lambda r: (order[r[0]], _physics_rank(r[1])))


def _details(summary: Mapping[str, Any]) -> list[str]:
    lines = ["### Details (mean [95 % bootstrap CI], n episodes)", ""]
    for group in summary.get("groups", []):
        lines.append(f"- **{group['task']} / {group['split']} / "
                     f"{PHYSICS_TITLES.get(group['physics'], group['physics'])}** "
                     f"({group['n_episodes']} episodes; ends: "
                     + ", ".join(f"{k} {v}" for k, v in group.get("fail_reasons", {}).items()) + ")")
        metrics = group.get("metrics", {})
        names = [m for m in DETAIL_METRICS if m in metrics]
        names += sorted(m for m in metrics if m.startswith("SR_"))
        names += sorted(m for m in metrics if m not in names and m not in ("nav_steps", "collision_count"))
        parts = []
        for name in names:
            m = metrics[name]
            scale = 100.0 if is_percent(name) else 1.0
            if not _finite(m.get("mean")):
                continue  # undefined for these episodes (e.g. CR of episodes without a step)
            low, high = m.get("ci_low"), m.get("ci_high")
            ci = f" [{low * scale:.2f}, {high * scale:.2f}]" if _finite(low) and _finite(high) else ""
            parts.append(f"{name} {m['mean'] * scale:.2f}{ci}")
        lines.append("  " + "; ".join(parts))
    return [*lines, ""]


def _legend(summary: Mapping[str, Any]) -> list[str]:
    """What the figures mean, for the tasks the run holds (the VLN success rule only when
    a navigation task is there)."""
    run = summary.get("run", {})
    tasks = {g["task"] for g in summary.get("groups", [])}
    lines = []
    if tasks - {"eqa"} or not tasks:
        lines += [f"Success: STOP with geodesic distance to the goal < {run.get('success_distance', 3.0)} m. "
                  "Rates in %, TL and NE in metres; CR = collisions per navigation step, pooled: a group's "
                  "collisions over its navigation steps, not a mean of the episodes' rates. Long-horizon: "
                  "SR = SR_All = the final STOP within the radius of the final goal (paper §3.4); "
                  "SR_n conditional on goals 1..n-1; SR_Ordered = every goal reached in order.", ""]
    if "eqa" in tasks:
        lines += ["EQA: an episode is correct or incorrect by the option the agent answered, inconclusive "
                  "when it ended without an answer (the reason is counted); TL in metres, tokens per episode. "
                  "The navigation figures in the details (SR, SPL, ...) measure the answering pose against "
                  "the relevant objects' viewpoints.", ""]
    return lines


def summary_markdown(summary: Mapping[str, Any], *, label: str | None = None) -> str:
    """The ``summary.md`` text of one run."""
    run = summary.get("run", {})
    label = label or str(run.get("label") or run.get("agent", "agent"))
    lines = [
        f"# VLNVerse evaluation — agent `{label}`",
        "",
        f"Dataset `{run.get('dataset', '?')}` · split `{run.get('split', 'all')}` · task "
        f"`{run.get('task', 'all')}` · physics {', '.join(run.get('physics', []))} · "
        f"{summary.get('episodes', 0)} episode records · seed {run.get('seed', 0)}.",
        "",
        *health_markdown(summary.get("health")),
        *_legend(summary),
        markdown_tables([(label, summary)]),
    ]
    errors = summary.get("errors", {})
    if errors.get("count"):
        lines += [f"### Episodes that ended in an error: {errors['count']}", ""]
        lines += [f"- `{e['episode_id']}` ({e['physics']}): {e['error']}" for e in errors.get("examples", [])]
        lines.append("")
    lines += usage_markdown(summary.get("llm"))
    lines += budget_markdown(summary.get("budget"))
    lines += trace_metrics_markdown(summary)
    lines += _details(summary)
    return "\n".join(lines)


def table_data(runs: Sequence[tuple[str, Mapping[str, Any]]], task: str) -> tuple[list[str], list[list[str]]]:
    """Columns and formatted rows of one task's table over all splits (``overall``
    groups), for printing: one row per (agent label, physics mode)."""
    entries = [(label, g) for label, summary in runs for g in summary.get("overall", []) if g["task"] == task]
    rows = _rows(entries, task)
    columns = _columns(task, rows)
    header = ["Agent", "Physics", *[f"{c}{ARROWS.get(c, '')}" for c in columns], "n"]
    body = [[label, PHYSICS_TITLES.get(physics, physics), *[_cell(g["metrics"].get(c), c) for c in columns],
             n_cell(g)] for label, physics, g in rows]
    return header, body


def table_title(runs: Sequence[tuple[str, Mapping[str, Any]]], task: str) -> str:
    """The printed table's title: the task and the split(s) its rows pool."""
    splits = sorted({str(g["split"]) for _, summary in runs for g in summary.get("groups", []) if g["task"] == task})
    title = TASK_TITLES.get(task, task)
    if len(splits) == 1:
        return f"{title} · split {splits[0]}"
    return f"{title} · splits {' + '.join(splits) or '?'} pooled (summary.md has one table per split)"


def tasks_in(runs: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """The tasks present in ``runs``, in the paper's table order."""
    present = {g["task"] for _, summary in runs for g in summary.get("overall", [])}
    known = [t for t in (*TABLE5_TASKS, *TABLE6_TASKS) if t in present]
    return known + sorted(present - set(known))
