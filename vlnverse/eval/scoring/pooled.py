"""Pooled figures: every task of a split together (fine + coarse on a track), each metric with
the 95 % bootstrap interval of the pooled episodes, and how the episodes ended.

This is what a results page summarises in one number per split and physics mode; the
per-task tables of ``vlnverse eval table`` keep the tasks apart.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vlnverse.eval.reporting.report import PHYSICS_ORDER, PHYSICS_TITLES, is_percent
from vlnverse.eval.scoring.aggregate import MetricSummary, aggregate_metrics
from vlnverse.tasks.episode import SPLITS

POOLED_COLUMNS = ("SR", "SPL", "OSR", "NE")
ENDINGS = ("stop", "step_budget", "collision")
"""The endings a table shows, as shares of the episodes; any other (an error, a timeout) is counted under ``other``
(``error or other`` in words)."""


@dataclass(frozen=True)
class PooledGroup:
    """One split and physics mode of a run, its tasks pooled.

    Attributes:
        split, physics: The group.
        n: Episodes.
        metrics: Each metric's mean and 95 % bootstrap interval over the pooled episodes.
        endings: Share (0-1) of the episodes per ending: :data:`ENDINGS` and ``other``.
    """

    split: str
    physics: str
    n: int
    metrics: Mapping[str, MetricSummary]
    endings: Mapping[str, float]

    def to_dict(self) -> dict[str, Any]:
        return {"split": self.split, "physics": self.physics, "n": self.n,
                "metrics": {name: metric.to_dict() for name, metric in self.metrics.items()},
                "endings": dict(self.endings)}


def pooled_groups(records: Iterable[Mapping[str, Any]], seed: int = 0) -> list[PooledGroup]:
    """The records of a run (``episodes.jsonl``) pooled over tasks, per split and physics mode."""
    return [PooledGroup(group.key["split"], group.key["physics"], group.n_episodes, dict(group.metrics),
                        ending_shares(group.fail_reasons, group.n_episodes))
            for group in aggregate_metrics(records, group_by=("split", "physics"), seed=seed)]


def ending_shares(fail_reasons: Mapping[str, int], n: int) -> dict[str, float]:
    """Share (0-1) of ``n`` episodes per ending of :data:`ENDINGS`, the rest under ``other``."""
    shares = {name: fail_reasons.get(name, 0) / n if n else 0.0 for name in ENDINGS}
    shares["other"] = max(0.0, 1.0 - sum(shares.values())) if n else 0.0
    return shares


def endings_by_physics(records: Iterable[Mapping[str, Any]]) -> str:
    """How the episodes of each physics mode ended, as shares: ``Tel-Hop ends: stop 76 / ...``."""
    reasons: dict[str, Counter[str]] = {}
    for record in records:
        reasons.setdefault(str(record.get("physics")), Counter())[str(record.get("fail_reason"))] += 1
    order = sorted(reasons, key=lambda p: PHYSICS_ORDER.index(p) if p in PHYSICS_ORDER else len(PHYSICS_ORDER))
    return " · ".join(f"{PHYSICS_TITLES.get(p, p)} ends: {endings_text(ending_shares(reasons[p], reasons[p].total()))}"
                      for p in order)


def endings_text(shares: Mapping[str, float]) -> str:
    """``stop 87 / step budget 13 / collision 0 / other 0 %``: the shares as whole percents."""
    words = {"step_budget": "step budget", "other": "error or other"}
    return " / ".join(f"{words.get(name, name)} {100 * shares.get(name, 0.0):.0f}" for name in (*ENDINGS, "other")) \
        + " %"


def _physics_order(group: PooledGroup) -> int:
    return PHYSICS_ORDER.index(group.physics) if group.physics in PHYSICS_ORDER else len(PHYSICS_ORDER)


def _cell(metric: MetricSummary | None, name: str) -> str:
    if metric is None:
        return "-"
    scale = 100.0 if is_percent(name) else 1.0
    return f"{metric.mean * scale:.1f} [{metric.ci_low * scale:.1f}, {metric.ci_high * scale:.1f}]"


def pooled_markdown(runs: Sequence[tuple[str, Sequence[PooledGroup]]]) -> str:
    """One table per split: a row per run and physics mode, each metric with its interval, the
    episodes and the share of each ending."""
    present = {group.split for _, groups in runs for group in groups}
    splits = [split for split in SPLITS if split in present] + sorted(present - set(SPLITS))
    header = ["Agent", "Physics", *[f"{c} %" if is_percent(c) else f"{c} m" for c in POOLED_COLUMNS], "n",
              "ends: stop / step budget / collision / other %"]
    lines = ["Every task of the split pooled; each cell: mean [95 % bootstrap CI over the pooled episodes].", ""]
    for split in splits:
        lines += [f"#### {split}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for label, groups in runs:
            for group in sorted((g for g in groups if g.split == split), key=_physics_order):
                ends = " / ".join(f"{100 * group.endings[k]:.0f}" for k in (*ENDINGS, "other"))
                cells = [_cell(group.metrics.get(name), name) for name in POOLED_COLUMNS]
                lines.append("| " + " | ".join([label, PHYSICS_TITLES.get(group.physics, group.physics), *cells,
                                                 str(group.n), ends]) + " |")
        lines.append("")
    return "\n".join(lines)
