"""Metrics of an episode's path and decision trace: DSCD-Nav's AORI and debate metrics.

Definitions follow DSCD-Nav (``papers/dscd_nav.txt``, Appendix A.4). AORI is computed
from the trajectory the harness recorded (every pose after every env step), never from
locations an agent reports, so every agent is measured the same way. The paper leaves
some quantities open; the choices made here are:

- **Locations** ``(x_t, y_t)``, ``t = 1..T``: points every ``sample_spacing`` metres of
  path length along the recorded trajectory (the start first; the end point too when at
  least half a spacing is left). T is then a distance, not a count of actions: a
  discrete agent's 0.25 m steps and turns in place and a waypoint agent's 3 m hops along
  the same path give the same T and the same AORI.
- **Visible region** ``V(x, y)``: a disk of radius ``view_radius`` around a location
  (the paper's Eq. 18 gives its size as a disk, ``pi * r^2`` in voxel units).
- **Overlap** ``||V_t ∩ V_i||``: the exact lens area of two equal disks, compared with
  ``tau`` given as a *fraction* of one disk's area (``overlap_threshold``), so the test
  does not depend on the voxel size.
- **Accumulated area** ``||A_t||`` and ``map_size^2``: voxel counts on a square grid of
  ``voxel_size`` cells; ``map_size`` is ``map_size`` metres when configured, else the side
  of the square bounding every visible disk of the episode.
- **Visits** (``N_obs^(t)``, "voxels visited at least three times"): a visit is an
  *entry* of the path into a voxel, along the whole driven path (the segment between two
  recorded poses is traversed, sampled every half voxel), so a corridor driven through
  three times counts even when no pose lands in it, and turning or idling in one voxel is
  one visit. ``N_obs^(t)``: voxels entered at least ``revisit_count`` (3 in the paper)
  times within the first ``s_t`` metres of path, ``s_t`` the path length at location t.
- A path with a single location has no pairs, so ``r_overlap = 0``.

DR / JOR / MPTR (Eqs. 20-23) are returned with their numerators and denominators so
that :mod:`vlnverse.eval.scoring.aggregate` can pool them over episodes exactly as the paper
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
        sample_spacing: path length (m) between two AORI locations.
    """

    view_radius: float = 3.0
    voxel_size: float = 0.25
    overlap_threshold: float = 0.5
    eta: float = 1.0
    w_c: float = 0.8
    w_d: float = 0.2
    revisit_count: int = 3
    map_size: float | None = None
    sample_spacing: float = 1.0

    def __post_init__(self) -> None:
        for name in ("view_radius", "voxel_size", "eta", "sample_spacing") + (
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


def path_locations(path: np.ndarray, spacing: float) -> tuple[np.ndarray, np.ndarray]:
    """The AORI locations of a recorded path (see the module docs) and their path lengths.

    Args:
        path: ``(P, 2)`` positions in the order driven.
        spacing: metres of path between two locations.

    Returns:
        ``((T, 2) locations, (T,) path length at each)``.
    """
    arc = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(path, axis=0), axis=1))])
    total = float(arc[-1])
    marks = np.arange(0.0, total + 1e-9, spacing)
    if total - marks[-1] >= spacing / 2.0:
        marks = np.append(marks, total)
    return _along(path, arc, marks), marks


def _along(path: np.ndarray, arc: np.ndarray, marks: np.ndarray) -> np.ndarray:
    """Points at path lengths ``marks`` (linear between the recorded positions)."""
    return np.stack([np.interp(marks, arc, path[:, 0]), np.interp(marks, arc, path[:, 1])], axis=1)


def aori(path: np.ndarray, params: AORIParams) -> dict[str, float]:
    """Area Overlap Redundancy Index of one episode's path (lower = less redundant).

    Args:
        path: ``(P, 2)`` or ``(P, 3)`` recorded positions, start first (only x, y are used).
        params: AORI parameters.

    Returns:
        ``{"AORI", "r_overlap", "d_norm", "T"}``.
    """
    pts = np.asarray(path, dtype=np.float64)
    if pts.ndim != 2 or pts.shape[0] == 0 or pts.shape[1] not in (2, 3):
        raise MetricsError(f"AORI needs (P, 2|3) positions with P >= 1, got shape {pts.shape}")
    if not np.all(np.isfinite(pts)):
        raise MetricsError("AORI positions contain NaN or inf")
    driven = pts[:, :2]
    xy, marks = path_locations(driven, params.sample_spacing)
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

    # d_norm (Eq. 17) on a voxel grid covering every visible disk and the whole path.
    vs = params.voxel_size
    arc = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(driven, axis=0), axis=1))])
    dense_marks = np.union1d(np.arange(0.0, arc[-1] + 1e-9, vs / 2.0), arc)
    dense = _along(driven, arc, dense_marks)
    lo = np.minimum(xy.min(axis=0) - r, dense.min(axis=0))
    hi = np.maximum(xy.max(axis=0) + r, dense.max(axis=0))
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
    cell = np.minimum(np.floor((dense - lo) / vs).astype(np.int64), shape - 1)
    cell_id = cell[:, 0] * int(shape[1]) + cell[:, 1]
    entered = np.concatenate([[True], cell_id[1:] != cell_id[:-1]])
    # Path length at which each voxel is entered for the revisit_count-th time.
    counts: dict[int, int] = {}
    crossed: list[float] = []
    for c, at in zip(cell_id[entered].tolist(), dense_marks[entered].tolist(), strict=True):
        counts[c] = counts.get(c, 0) + 1
        if counts[c] == params.revisit_count:
            crossed.append(at)
    n_obs = np.searchsorted(np.sort(crossed), marks + 1e-9, side="right")
    steps = np.arange(1, t_len + 1)
    lam = params.eta * area_t / map_cells * steps
    ratio = np.divide(n_obs, lam, out=np.zeros(t_len), where=lam > 0)
    d_norm = float(np.mean(np.minimum(1.0, ratio)))

    value = 1.0 - (params.w_c * (1.0 - r_overlap) ** 2 + params.w_d * (1.0 - d_norm))
    return {"AORI": float(value), "r_overlap": r_overlap, "d_norm": d_norm, "T": t_len}


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
