"""What the metrics are computed from: an episode's record (:class:`EpisodeRecord`, read from
``episodes.jsonl`` or built by the harness) and the settings of the scoring
(:class:`MetricsConfig`); the metrics themselves are :mod:`vlnverse.eval.scoring.metrics`."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vlnverse.errors import ConfigError, MetricsError
from vlnverse.eval.scoring.trace_metrics import AORIParams

GeodesicFn = Callable[[np.ndarray], np.ndarray]
"""``geodesic_fn(points (K, 3)) -> (K,)`` or ``(K, G)`` geodesic distances to the goal(s)."""

FAIL_REASONS = ("stop", "collision", "step_budget", "error", "timeout", "llm_budget", "inconclusive")
"""The ``fail_reason`` values the harness writes (any string is passed through)."""


@dataclass(frozen=True)
class MetricsConfig:
    """How episodes are scored.

    Attributes:
        success_distance: ``d_s`` (m); success needs geodesic distance ``< d_s``.
        ndtw_threshold: ``d_th`` (m) of nDTW/SDTW.
        resample_spacing: arc-length spacing (m) for the DTW point sequences; ``None``
            uses the recorded points as they are.
        planar: measure TL, NE_euclidean and DTW on x, y only.
        stop_action_id: integer action that means STOP (strings "stop" always do).
        allow_euclidean_fallback: when a record has no geodesic information, use the
            Euclidean distance for NE/SR/OSR (flagged ``geodesic=False``) instead of
            raising.
        debate_max_rounds: ``R_max`` of the DSCD-Nav debate metrics.
        aori: AORI parameters.
    """

    success_distance: float = 3.0
    ndtw_threshold: float = 3.0
    resample_spacing: float | None = 0.25
    planar: bool = True
    stop_action_id: int = 0
    allow_euclidean_fallback: bool = False
    debate_max_rounds: int = 3
    aori: AORIParams = field(default_factory=AORIParams)

    def __post_init__(self) -> None:
        def positive(name: str, value: float | None) -> None:
            if value is None or not math.isfinite(value) or value <= 0:
                raise ConfigError(f"MetricsConfig.{name} must be a positive number, got {value!r}")

        positive("success_distance", self.success_distance)
        positive("ndtw_threshold", self.ndtw_threshold)
        if self.resample_spacing is not None:
            positive("resample_spacing", self.resample_spacing)
        if self.debate_max_rounds < 1:
            raise ConfigError(
                f"MetricsConfig.debate_max_rounds must be >= 1, got {self.debate_max_rounds}"
            )
        if not isinstance(self.aori, AORIParams):
            raise ConfigError(
                f"MetricsConfig.aori must be AORIParams, got {type(self.aori).__name__}"
            )


def trace_metric_settings(metrics: MetricsConfig) -> dict[str, Any]:
    """The trace-metric parameters of ``metrics`` as ``run.json`` records them (``trace_metrics``)."""
    return {"debate_max_rounds": metrics.debate_max_rounds,
            **{f"aori.{k}": v for k, v in dataclasses.asdict(metrics.aori).items()}}


def _points(value: Any, name: str, *, dims: tuple[int, ...] = (3,)) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise MetricsError(f"{name} is not a numeric array: {exc}") from None
    if arr.ndim != 2 or arr.shape[1] not in dims:
        raise MetricsError(
            f"{name} must have shape (N, {'|'.join(map(str, dims))}), got {arr.shape}"
        )
    if arr.shape[0] == 0:
        raise MetricsError(f"{name} is empty")
    if not np.all(np.isfinite(arr)):
        raise MetricsError(f"{name} contains NaN or inf")
    return arr


def is_stop_action(action: Any, stop_action_id: int = 0) -> bool:
    """Whether an action means STOP: the string "stop" (any case), the integer
    ``stop_action_id``, or a mapping whose ``type`` or ``name`` is "stop"."""
    if isinstance(action, str):
        return action.strip().lower() == "stop"
    if isinstance(action, (int, np.integer)) and not isinstance(action, bool):
        return int(action) == stop_action_id
    if isinstance(action, Mapping):
        kind = action.get("type", action.get("name"))
        return isinstance(kind, str) and kind.strip().lower() == "stop"
    return False


@dataclass(frozen=True, eq=False)
class EpisodeRecord:
    """What an episode left behind, as the metrics need it.

    Attributes:
        positions: ``(T, 3)`` recorded agent positions (world, Z-up, m), start first.
        goals: ``(G, 3)`` goal positions, in the order they must be reached.
        geodesic_distance: ``L``, the shortest-path length from the start through the
            goals (m), from the dataset / distance field.
        actions: the actions taken, in order (STOP included).
        stops: indices into ``positions`` at which STOP was issued, in order; the
            ``k``-th STOP ends sub-goal ``k``.
        collisions: per-action collision event counts (or bools), ``len(actions)``
            long; ``None`` if the episode recorded none (CR is then ``None``).
        reference_path: ``(R, 3)`` reference path, or ``None`` (no nDTW/SDTW).
        goal_distances: ``(G, T)`` (or ``(T,)`` for one goal) precomputed geodesic
            distances from every position to every goal.
        geodesic_fn: alternative to ``goal_distances`` (see :data:`GeodesicFn`).
        fail_reason: why the episode ended ("stop", "collision", "step_budget",
            "error"), passed through.
        stop_visible: per STOP, whether the target was in view (ObjectNav); a STOP
            succeeds only when it was. ``None``: not required.
        agent_trace: the agent's trace; its ``debate`` (DR/JOR/MPTR) is read when
            present.
        tokens: LLM tokens used: an int, or a mapping with ``prompt``/``completion``
            (and optionally ``total``).
        cost: LLM cost (USD) of the episode.
        episode_id, task, split, physics: identification, copied to the metrics.
    """

    positions: np.ndarray
    goals: np.ndarray
    geodesic_distance: float
    actions: tuple[Any, ...] = ()
    stops: tuple[int, ...] = ()
    collisions: np.ndarray | None = None
    reference_path: np.ndarray | None = None
    goal_distances: np.ndarray | None = None
    geodesic_fn: GeodesicFn | None = None
    fail_reason: str | None = None
    agent_trace: Mapping[str, Any] | None = None
    stop_visible: tuple[bool, ...] | None = None
    tokens: int | Mapping[str, int] | None = None
    cost: float | None = None
    episode_id: str = ""
    task: str = ""
    split: str = ""
    physics: str = ""

    def __post_init__(self) -> None:
        pos = _points(self.positions, "positions")
        goals = _points(self.goals, "goals")
        object.__setattr__(self, "positions", pos)
        object.__setattr__(self, "goals", goals)
        object.__setattr__(self, "actions", tuple(self.actions))
        try:
            stops = tuple(int(s) for s in self.stops)
        except (TypeError, ValueError):
            raise MetricsError(
                f"stops must be integer position indices, got {self.stops!r}"
            ) from None
        if any(s < 0 or s >= len(pos) for s in stops):
            raise MetricsError(f"stops {stops} index outside the {len(pos)} recorded positions")
        if any(b < a for a, b in zip(stops, stops[1:], strict=False)):
            raise MetricsError(f"stops {stops} must be non-decreasing")
        if len(stops) > len(self.actions):
            raise MetricsError(f"{len(stops)} stops but only {len(self.actions)} actions")
        object.__setattr__(self, "stops", stops)
        L = self.geodesic_distance
        if (
            not isinstance(L, (int, float, np.floating, np.integer))
            or not math.isfinite(L)
            or L < 0
        ):
            raise MetricsError(f"geodesic_distance must be a finite number >= 0, got {L!r}")
        object.__setattr__(self, "geodesic_distance", float(L))
        if self.collisions is not None:
            col = np.asarray(self.collisions, dtype=np.float64).reshape(-1)
            if len(col) != len(self.actions):
                raise MetricsError(f"{len(col)} collision flags for {len(self.actions)} actions")
            if not np.all(np.isfinite(col)) or np.any(col < 0):
                raise MetricsError("collisions must be non-negative finite counts")
            object.__setattr__(self, "collisions", col)
        if self.reference_path is not None:
            object.__setattr__(
                self, "reference_path", _points(self.reference_path, "reference_path")
            )
        if self.goal_distances is not None:
            gd = np.asarray(self.goal_distances, dtype=np.float64)
            if gd.ndim == 1:
                gd = gd[None, :]
            if gd.shape != (len(goals), len(pos)):
                raise MetricsError(
                    f"goal_distances must have shape (goals, positions) = {(len(goals), len(pos))}, got {gd.shape}"
                )
            if np.any(np.isnan(gd)) or np.any(gd < 0):
                raise MetricsError("goal_distances contain NaN or negative values")
            object.__setattr__(self, "goal_distances", gd)
        if self.cost is not None and (not math.isfinite(float(self.cost)) or float(self.cost) < 0):
            raise MetricsError(f"cost must be a finite number >= 0, got {self.cost!r}")

    @classmethod
    def from_mapping(
        cls,
        data: Mapping[str, Any],
        *,
        geodesic_fn: GeodesicFn | None = None,
        stop_action_id: int = 0,
    ) -> EpisodeRecord:
        """Build a record from an ``episodes.jsonl``-style mapping.

        Reads ``trajectory`` (or ``positions``), ``goals`` (a list of ``[x, y, z]`` or
        of ``{"position": [...]}``, or a single such dict), ``geodesic_distance`` (or
        ``info.geodesic_distance``), ``actions``, ``stops``, ``collisions``,
        ``reference_path``, ``goal_distances``, ``fail_reason``, ``agent_trace``,
        ``tokens``, ``cost`` and the identification keys. Without ``stops``, STOP
        actions give them when the trajectory holds exactly one pose per action plus the
        start (a STOP at action ``k`` was issued at pose ``k``).
        """
        traj = data.get("trajectory", data.get("positions"))
        if traj is None:
            raise MetricsError("record has no 'trajectory'")
        goals_raw = data.get("goals")
        if goals_raw is None:
            raise MetricsError("record has no 'goals'")
        if isinstance(goals_raw, Mapping):
            goals_raw = [goals_raw]
        goals = [g["position"] if isinstance(g, Mapping) else g for g in goals_raw]
        L = data.get("geodesic_distance")
        if L is None:
            L = (data.get("info") or {}).get("geodesic_distance")
        if L is None:
            raise MetricsError("record has no 'geodesic_distance' (nor info.geodesic_distance)")
        actions = tuple(data.get("actions") or ())
        stops = data.get("stops")
        if stops is None:
            stop_idx = [k for k, a in enumerate(actions) if is_stop_action(a, stop_action_id)]
            if stop_idx and len(traj) != len(actions) + 1:
                raise MetricsError(
                    "record has no 'stops' and its trajectory does not hold one pose per action, "
                    "so STOP positions cannot be derived"
                )
            stops = stop_idx
        ref = data.get("reference_path")
        trace = data.get("agent_trace")
        tokens = data.get("tokens", trace.get("tokens") if isinstance(trace, Mapping) else None)
        cost = data.get("cost", trace.get("cost") if isinstance(trace, Mapping) else None)
        return cls(
            positions=traj,
            goals=goals,
            geodesic_distance=L,
            actions=actions,
            stops=tuple(stops),
            collisions=data.get("collisions"),
            reference_path=ref if ref is not None and len(ref) > 0 else None,
            goal_distances=data.get("goal_distances"),
            geodesic_fn=geodesic_fn,
            fail_reason=data.get("fail_reason"),
            agent_trace=trace if isinstance(trace, Mapping) else None,
            tokens=tokens,
            cost=cost,
            episode_id=str(data.get("episode_id", "")),
            task=str(data.get("task", "")),
            split=str(data.get("split", "")),
            physics=str(data.get("physics", "")),
        )
