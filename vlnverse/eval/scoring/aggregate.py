"""Aggregate per-episode metrics: means with 95 % bootstrap confidence intervals, by group.

Every metric is aggregated as a ratio of sums, ``sum(num) / sum(den)`` over episodes,
which covers three cases with one code path:

- plain metrics (TL, SR, nDTW, ...): ``num`` = the value, ``den`` = 1, so the ratio is
  the mean over the episodes that have the metric (``None`` values are left out, so
  e.g. nDTW is averaged over episodes that have a reference path);
- ``SR_n``: ``None`` when a preceding goal was missed, so its mean is the paper's
  *conditional* success rate;
- pooled rates (:data:`POOLED`): CR = total collisions / total navigation actions
  (Table 8), DR / JOR / MPTR = summed events / summed opportunities (DSCD-Nav Eqs. 20-23).

Confidence intervals are percentile bootstrap intervals over episodes (resampling
episodes with replacement, all metrics of a group from the same resamples). Randomness
comes from ``numpy.random.Generator`` seeded by ``seed`` and a stable hash of the group,
so a group's result does not depend on which other groups are present.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vlnverse.errors import ConfigError, MetricsError
from vlnverse.eval.scoring.metrics import EpisodeMetrics

POOLED: dict[str, tuple[str, str]] = {
    "CR": ("collision_count", "nav_steps"),
    "DR": ("debate_disagreements", "debate_rounds"),
    "JOR": ("judge_overrides", "arbitrations"),
    "MPTR": ("micro_probes", "arbitrations"),
}
"""Rates pooled over episodes: metric -> (numerator key, denominator key)."""

NON_METRIC_KEYS = frozenset({"episode_id", "task", "split", "physics", "fail_reason", "geodesic"})
_COUNT_KEYS = frozenset(k for pair in POOLED.values() for k in pair)


@dataclass(frozen=True)
class MetricSummary:
    """One aggregated metric: its mean, bootstrap CI and the episodes it covers."""

    mean: float
    ci_low: float
    ci_high: float
    n: int

    def to_dict(self) -> dict[str, float | int]:
        """JSON-ready dict."""
        return {"mean": self.mean, "ci_low": self.ci_low, "ci_high": self.ci_high, "n": self.n}


@dataclass(frozen=True)
class GroupSummary:
    """Aggregated metrics of one group of episodes (e.g. one task, split and physics mode)."""

    key: Mapping[str, str]
    n_episodes: int
    metrics: Mapping[str, MetricSummary]
    fail_reasons: Mapping[str, int]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            **dict(self.key),
            "n_episodes": self.n_episodes,
            "metrics": {k: v.to_dict() for k, v in self.metrics.items()},
            "fail_reasons": dict(self.fail_reasons),
        }


def _flat(item: EpisodeMetrics | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(item, EpisodeMetrics):
        return item.to_dict()
    if isinstance(item, Mapping):
        nested = item.get("metrics")
        if isinstance(nested, Mapping):  # an episodes.jsonl record
            return {
                **nested,
                **{k: item[k] for k in ("task", "split", "physics", "fail_reason") if k in item},
            }
        return item
    raise MetricsError(f"expected EpisodeMetrics or a mapping, got {type(item).__name__}")


def _number(value: Any) -> float | None:
    """The float of a numeric metric value; ``None`` for missing, NaN or non-numeric."""
    if isinstance(value, (bool, int, float, np.integer, np.floating, np.bool_)):
        v = float(value)
        return None if math.isnan(v) else v
    return None


def bootstrap_ratio_ci(
    num: np.ndarray,
    den: np.ndarray,
    rng: np.random.Generator,
    *,
    n_boot: int = 1000,
    confidence: float = 0.95,
    max_block: int = 2_000_000,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ratio-of-sums estimates and percentile bootstrap CIs for several metrics at once.

    Args:
        num: ``(n, K)`` per-episode numerators.
        den: ``(n, K)`` per-episode denominators (0 where an episode lacks the metric).
        rng: source of the resamples.
        n_boot: bootstrap resamples.
        confidence: CI level.
        max_block: cap on ``resamples x episodes`` held in memory at once.

    Returns:
        ``(estimate (K,), low (K,), high (K,))``; NaN where a metric has no data.
    """
    n, k = num.shape
    tot_den = den.sum(axis=0)
    est = np.divide(num.sum(axis=0), tot_den, out=np.full(k, np.nan), where=tot_den > 0)
    if n == 0:
        return est, est.copy(), est.copy()
    stats = np.empty((n_boot, k))
    block = max(1, min(n_boot, max_block // max(n, 1)))
    for start in range(0, n_boot, block):
        b = min(block, n_boot - start)
        idx = rng.integers(0, n, size=(b, n))
        counts = np.bincount((idx + (np.arange(b) * n)[:, None]).ravel(), minlength=b * n).reshape(
            b, n
        )
        s_num = counts @ num
        s_den = counts @ den
        stats[start : start + b] = np.divide(
            s_num, s_den, out=np.full((b, k), np.nan), where=s_den > 0
        )
    alpha = (1.0 - confidence) / 2.0
    valid = ~np.all(np.isnan(stats), axis=0)
    low = np.full(k, np.nan)
    high = np.full(k, np.nan)
    if valid.any():
        q = np.nanquantile(stats[:, valid], [alpha, 1.0 - alpha], axis=0)
        low[valid], high[valid] = q[0], q[1]
    return est, low, high


def _group_seed(seed: int, key: Mapping[str, str]) -> np.random.Generator:
    text = "\x1f".join(f"{k}={v}" for k, v in sorted(key.items()))
    return np.random.Generator(
        np.random.PCG64(np.random.SeedSequence([seed, zlib.crc32(text.encode())]))
    )


def aggregate_metrics(
    items: Iterable[EpisodeMetrics | Mapping[str, Any]],
    *,
    group_by: Sequence[str] = ("task", "split", "physics"),
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[GroupSummary]:
    """Means with bootstrap CIs per group.

    Args:
        items: :class:`EpisodeMetrics`, their ``to_dict()``, or ``episodes.jsonl``
            records (a mapping with a nested ``metrics`` object).
        group_by: identification keys to group by (``()`` = one group of everything).
        n_boot: bootstrap resamples per group.
        confidence: CI level (0.95 = 95 %).
        seed: base seed; same inputs and seed give identical summaries.

    Returns:
        One :class:`GroupSummary` per group, sorted by group key.
    """
    if n_boot < 1:
        raise ConfigError(f"n_boot must be >= 1, got {n_boot}")
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must be in (0, 1), got {confidence}")
    groups: dict[tuple[str, ...], list[Mapping[str, Any]]] = {}
    for item in items:
        flat = _flat(item)
        key = tuple(str(flat.get(g, "")) for g in group_by)
        groups.setdefault(key, []).append(flat)

    summaries = []
    for key in sorted(groups):
        rows = groups[key]
        names = sorted(
            {
                k
                for row in rows
                for k, v in row.items()
                if k not in NON_METRIC_KEYS and k not in _COUNT_KEYS and _number(v) is not None
            }
            | {m for m in POOLED if any(row.get(POOLED[m][1]) for row in rows)}
        )
        n = len(rows)
        num = np.zeros((n, len(names)))
        den = np.zeros((n, len(names)))
        for i, row in enumerate(rows):
            for j, name in enumerate(names):
                if name in POOLED:
                    a = _number(row.get(POOLED[name][0]))
                    b = _number(row.get(POOLED[name][1]))
                    if a is not None and b is not None:
                        num[i, j], den[i, j] = a, b
                else:
                    v = _number(row.get(name))
                    if v is not None:
                        num[i, j], den[i, j] = v, 1.0
        group_key = dict(zip(group_by, key, strict=True))
        est, low, high = bootstrap_ratio_ci(
            num, den, _group_seed(seed, group_key), n_boot=n_boot, confidence=confidence
        )
        covered = (den > 0).sum(axis=0)
        metrics = {
            name: MetricSummary(float(est[j]), float(low[j]), float(high[j]), int(covered[j]))
            for j, name in enumerate(names)
        }
        reasons: dict[str, int] = {}
        for row in rows:
            reason = row.get("fail_reason")
            if reason is not None:
                reasons[str(reason)] = reasons.get(str(reason), 0) + 1
        summaries.append(GroupSummary(group_key, n, metrics, dict(sorted(reasons.items()))))
    return summaries
