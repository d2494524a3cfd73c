"""Metrics computed from an agent's decision trace: DSCD-Nav's AORI and debate metrics.

Definitions follow DSCD-Nav (``papers/dscd_nav.txt``, Appendix A.4). The paper leaves
some quantities open; the choices made here are:

- **Visible region** ``V(x, y)``: a disk of radius ``view_radius`` around the decision
  location (the paper's Eq. 18 gives its size as a disk, ``pi * r^2`` in voxel units).
- **Overlap** ``||V_t ∩ V_i||``: the exact lens area of two equal disks, compared with
  ``tau`` given as a *fraction* of one disk's area (``overlap_threshold``), so the test
  does not depend on the voxel size.
- **Accumulated area** ``||A_t||`` and ``map_size^2``: voxel counts on a square grid of
  ``voxel_size`` cells; ``map_size`` is ``map_size`` metres when configured, else the side
  of the square bounding every visible disk of the episode.
- ``N_obs^(t)``: voxels containing at least ``revisit_count`` (3 in the paper) of the
  first ``t`` decision locations.
- An episode with a single decision has no pairs, so ``r_overlap = 0``.

DR / JOR / MPTR (Eqs. 20-23) are returned with their numerators and denominators so
that :mod:`vlnverse.eval.aggregate` can pool them over episodes exactly as the paper
sums over all steps (``sum of numerators / sum of denominators``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vlnverse.errors import ConfigError, MetricsError


@dataclass(frozen=True)
class AORIParams:
    """Parameters of AORI (see the module docstring for what each one fixes).

    Attributes:
        view_radius: radius (m) of the visible disk at each decision location.
        voxel_size: side (m) of the grid cells used for areas and visit counts.
        overlap_threshold: ``tau`` as a fraction of one visible disk's area.
        eta: scaling factor ``eta`` of the expected revisit density ``lambda_t``.
        w_c: weight of the overlap term (0.8 in the paper).
        w_d: weight of the density term (0.2 in the paper).
        revisit_count: visits that make a voxel count in ``N_obs`` (3 in the paper).
        map_size: map side (m) for ``map_size^2``; ``None`` uses the episode's extent.
    """

    view_radius: float = 3.0
    voxel_size: float = 0.25
    overlap_threshold: float = 0.5
    eta: float = 1.0
    w_c: float = 0.8
    w_d: float = 0.2
    revisit_count: int = 3
    map_size: float | None = None

    def __post_init__(self) -> None:
        for name in ("view_radius", "voxel_size", "eta") + (
            ("map_size",) if self.map_size is not None else ()
        ):
            value = getattr(self, name)
            if not math.isfinite(value) or value <= 0:
                raise ConfigError(f"AORIParams.{name} must be a positive number, got {value!r}")
        if not 0.0 <= self.overlap_threshold <= 1.0:
            raise ConfigError(
                f"AORIParams.overlap_threshold must be in [0, 1], got {self.overlap_threshold}"
            )
        if self.w_c < 0 or self.w_d < 0:
            raise ConfigError(
                f"AORIParams weights must be >= 0, got w_c={self.w_c}, w_d={self.w_d}"
            )
        if self.revisit_count < 1:
            raise ConfigError(f"AORIParams.revisit_count must be >= 1, got {self.revisit_count}")


def _disk_overlap_fraction(dist: np.ndarray, radius: float) -> np.ndarray:
    """Lens area of two disks of ``radius`` at centre distance ``dist``, over one disk's area."""
    d = np.minimum(np.asarray(dist, dtype=np.float64), 2.0 * radius)
    half = d / (2.0 * radius)
    lens = 2.0 * radius**2 * np.arccos(half) - 0.5 * d * np.sqrt(
        np.maximum(4.0 * radius**2 - d**2, 0.0)
    )
    return lens / (math.pi * radius**2)


def aori(waypoints: np.ndarray, params: AORIParams) -> dict[str, float]:
    """Area Overlap Redundancy Index of one episode (lower = less redundant).

    Args:
        waypoints: ``(T, 2)`` or ``(T, 3)`` decision locations (only x, y are used).
        params: AORI parameters.

    Returns:
        ``{"AORI", "r_overlap", "d_norm"}``.
    """
    pts = np.asarray(waypoints, dtype=np.float64)
    if pts.ndim != 2 or pts.shape[0] == 0 or pts.shape[1] not in (2, 3):
        raise MetricsError(
            f"AORI needs (T, 2|3) decision locations with T >= 1, got shape {pts.shape}"
        )
    if not np.all(np.isfinite(pts)):
        raise MetricsError("AORI decision locations contain NaN or inf")
    xy = pts[:, :2]
    t_len = xy.shape[0]
    r = params.view_radius

    # r_overlap (Eq. 16): for each t >= 2, the share of earlier views overlapping V_t by >= tau.
    if t_len > 1:
        dist = np.sqrt(np.sum(np.square(xy[:, None, :] - xy[None, :, :]), axis=2))
        hit = _disk_overlap_fraction(dist, r) >= params.overlap_threshold
        lower = np.tril(hit, k=-1)  # pairs i < t
        per_t = lower[1:].sum(axis=1) / np.arange(1, t_len)
        r_overlap = float(per_t.mean())
    else:
        r_overlap = 0.0

    # d_norm (Eq. 17) on a voxel grid covering every visible disk.
    vs = params.voxel_size
    lo = xy.min(axis=0) - r
    hi = xy.max(axis=0) + r
    shape = np.maximum(np.ceil((hi - lo) / vs).astype(int), 1)
    cx = lo[0] + (np.arange(shape[0]) + 0.5) * vs
    cy = lo[1] + (np.arange(shape[1]) + 0.5) * vs
    centres = np.stack(np.meshgrid(cx, cy, indexing="ij"), axis=-1).reshape(-1, 2)
    d2 = np.sum(np.square(centres[None, :, :] - xy[:, None, :]), axis=2)  # (T, cells)
    inside = d2 <= r * r
    seen = inside.any(axis=0)
    first_seen = np.where(seen, np.argmax(inside, axis=0), t_len)
    area_t = np.cumsum(np.bincount(first_seen[seen], minlength=t_len))  # ||A_t||, t = 1..T
    map_cells = (
        (params.map_size / vs) ** 2 if params.map_size is not None else float(max(shape)) ** 2
    )
    cell = np.floor((xy - lo) / vs).astype(np.int64)
    cell_id = cell[:, 0] * (int(shape[1]) + 1) + cell[:, 1]
    # Visit rank of each location within its voxel (1 = first visit there).
    rank = np.empty(t_len, dtype=np.int64)
    counts: dict[int, int] = {}
    for i, c in enumerate(cell_id.tolist()):
        counts[c] = counts.get(c, 0) + 1
        rank[i] = counts[c]
    n_obs = np.cumsum(rank == params.revisit_count)
    steps = np.arange(1, t_len + 1)
    lam = params.eta * area_t / map_cells * steps
    ratio = np.divide(n_obs, lam, out=np.zeros(t_len), where=lam > 0)
    d_norm = float(np.mean(np.minimum(1.0, ratio)))

    value = 1.0 - (params.w_c * (1.0 - r_overlap) ** 2 + params.w_d * (1.0 - d_norm))
    return {"AORI": float(value), "r_overlap": r_overlap, "d_norm": d_norm}


def _round_pair(entry: Any) -> tuple[Any, Any]:
    if isinstance(entry, Mapping):
        try:
            return entry["tsu"], entry["sib"]
        except KeyError as exc:
            raise MetricsError(f"debate round {dict(entry)!r} lacks key {exc.args[0]!r}") from None
    if isinstance(entry, Sequence) and not isinstance(entry, str) and len(entry) == 2:
        return entry[0], entry[1]
    raise MetricsError(f"debate round must be [tsu, sib] or {{'tsu', 'sib'}}, got {entry!r}")


def debate_metrics(
    steps: Sequence[Mapping[str, Any]], max_rounds: int
) -> dict[str, float | int | None]:
    """DR, JOR and MPTR (DSCD-Nav Eqs. 20-23) of one episode's debate trace.

    Args:
        steps: one mapping per decision step with ``rounds`` (a list of ``[tsu, sib]``
            preferred candidate ids, or ``{"tsu": .., "sib": ..}``, one per debate round),
            optional ``judge`` (the arbiter's final candidate id, ``None`` if it gave
            none) and optional ``micro_probe`` (bool, micro-probing was triggered).
        max_rounds: ``R_max``; a step enters arbitration when it ran ``R_max`` rounds,
            still disagrees in the last one, and has a judge decision.

    Returns:
        ``DR``, ``JOR``, ``MPTR`` (``None`` when their denominator is 0) and the counts
        ``debate_rounds``, ``debate_disagreements``, ``arbitrations``,
        ``judge_overrides``, ``micro_probes``.
    """
    rounds = disagreements = arbitrations = overrides = probes = 0
    for i, step in enumerate(steps):
        if not isinstance(step, Mapping):
            raise MetricsError(f"debate step {i} must be a mapping, got {type(step).__name__}")
        pairs = [_round_pair(e) for e in step.get("rounds", ())]
        rounds += len(pairs)
        disagreements += sum(1 for tsu, sib in pairs if tsu != sib)
        judge = step.get("judge")
        if (
            len(pairs) == max_rounds
            and pairs
            and pairs[-1][0] != pairs[-1][1]
            and judge is not None
        ):
            arbitrations += 1
            overrides += int(judge != pairs[-1][0])
            probes += int(bool(step.get("micro_probe", False)))
    return {
        "DR": disagreements / rounds if rounds else None,
        "JOR": overrides / arbitrations if arbitrations else None,
        "MPTR": probes / arbitrations if arbitrations else None,
        "debate_rounds": rounds,
        "debate_disagreements": disagreements,
        "arbitrations": arbitrations,
        "judge_overrides": overrides,
        "micro_probes": probes,
    }
