"""Physics-aware path sampling (paper §3.3.2): start/goal pairs on the agent-dilated
navigable map, joined by A* and smoothed by the environment layer.

* fine-grained: paths that cross rooms, with a geodesic length in a configured range,
  goal rooms balanced (the least-used room is chosen next);
* coarse-grained: a navigable viewpoint within ``viewpoint_distance`` of a target object,
  facing it; targets must be unambiguous (see :mod:`vlnverse.tasks.targets`), categories
  balanced;
* long-horizon: 2–3 coarse legs chained, each goal the next start; no goal of a chain
  lies within the start margin of the chain's start.

Every single-goal path and every long-horizon leg is longer than the success radius by
a margin (``SamplingConfig.min_start_distance = goal_radius + start_margin``, geodesic):
an agent that STOPs at once can never succeed. The margin also covers the small gap
between a smoothed A* path and the env's fast-marching distance field, which judges
success. Trivial (too short), unreachable and duplicate pairs are rejected. Every choice draws
from the ``numpy.random.Generator`` passed in, so a seed fixes the result.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from vlnverse.errors import ConfigError
from vlnverse.tasks.context import SceneContext
from vlnverse.tasks.targets import TargetDescription, describe_target

log = logging.getLogger(__name__)

SAMPLER_VERSION = "1"


@dataclass(frozen=True)
class SamplingConfig:
    """Path sampling settings.

    Attributes:
        fine_min_distance, fine_max_distance: Geodesic length range of fine paths (m).
        coarse_min_distance, coarse_max_distance: Range of each coarse leg (m).
        viewpoint_distance: Coarse goals lie within this distance of the target's footprint (m).
        goal_radius: Success radius stored in the goals (m).
        start_margin: Every path (each leg of a chain) is at least ``goal_radius +
            start_margin`` long (m, geodesic), whatever the ``*_min_distance`` say.
        fine_cross_rooms: Fine paths must end in another room than they start in.
        dedupe_cell: Start/goal points closer than this (m) count as duplicates.
        max_attempts: Rejected draws allowed per requested trajectory before giving up.
        min_legs, max_legs: Number of chained sub-tasks of a long-horizon episode.
    """

    fine_min_distance: float = 5.0
    fine_max_distance: float = 20.0
    coarse_min_distance: float = 2.0
    coarse_max_distance: float = 20.0
    viewpoint_distance: float = 1.0
    goal_radius: float = 3.0
    start_margin: float = 1.0
    fine_cross_rooms: bool = True
    dedupe_cell: float = 0.5
    max_attempts: int = 40
    min_legs: int = 2
    max_legs: int = 3

    def __post_init__(self) -> None:
        for lo, hi in (("fine_min_distance", "fine_max_distance"), ("coarse_min_distance", "coarse_max_distance")):
            a, b = getattr(self, lo), getattr(self, hi)
            if not (isinstance(a, int | float) and isinstance(b, int | float) and 0 <= a < b):
                raise ConfigError(f"need 0 <= {lo} < {hi}, got {a!r} and {b!r}")
        for name in ("viewpoint_distance", "goal_radius", "dedupe_cell"):
            if not (isinstance(getattr(self, name), int | float) and getattr(self, name) > 0):
                raise ConfigError(f"{name} must be positive, got {getattr(self, name)!r}")
        if not (isinstance(self.start_margin, int | float) and math.isfinite(self.start_margin)
                and self.start_margin >= 0):
            raise ConfigError(f"start_margin must be a number >= 0, got {self.start_margin!r}")
        for hi in ("fine_max_distance", "coarse_max_distance"):
            if getattr(self, hi) <= self.min_start_distance:
                raise ConfigError(f"{hi} ({getattr(self, hi)}) must exceed goal_radius + start_margin "
                                  f"({self.min_start_distance})")
        if not (isinstance(self.max_attempts, int) and self.max_attempts > 0):
            raise ConfigError(f"max_attempts must be a positive integer, got {self.max_attempts!r}")
        if not (isinstance(self.min_legs, int) and isinstance(self.max_legs, int) and 2 <= self.min_legs <= self.max_legs):
            raise ConfigError(f"need 2 <= min_legs <= max_legs, got {self.min_legs!r}, {self.max_legs!r}")

    @property
    def min_start_distance(self) -> float:
        """The shortest geodesic start-goal distance of any path or leg (m)."""
        return float(self.goal_radius + self.start_margin)

    def manifest_entry(self) -> dict[str, float]:
        """What the dataset manifest reports about start distances."""
        return {"success_distance": float(self.goal_radius), "start_margin": float(self.start_margin),
                "min_start_distance": self.min_start_distance}


@dataclass(frozen=True)
class Trajectory:
    """One sampled path.

    Attributes:
        start: Start point (3,) on the floor.
        start_yaw: Start heading (rad).
        points: Smoothed path waypoints (K, 3), from start to goal.
        length: Geodesic length (m): the polyline length of ``points``.
        goal: Goal point (3,).
        goal_yaw: Heading at the goal (coarse: facing the target; fine: last segment).
        start_room, goal_room: Room ids (None outside rooms).
        target: The coarse target (None for fine paths).
    """

    start: np.ndarray
    start_yaw: float
    points: np.ndarray
    length: float
    goal: np.ndarray
    goal_yaw: float
    start_room: str | None
    goal_room: str | None
    target: TargetDescription | None = None


def _heading(a, b) -> float:
    return math.atan2(float(b[1] - a[1]), float(b[0] - a[0]))


class TrajectorySampler:
    """Samples trajectories in one scene; keeps balance counters and duplicate keys."""

    def __init__(self, context: SceneContext, config: SamplingConfig, rng: np.random.Generator) -> None:
        self.context = context
        self.config = config
        self.rng = rng
        self.room_counts: Counter = Counter()
        self.category_counts: Counter = Counter()
        self.object_counts: Counter = Counter()
        self._seen: set = set()
        self._targets: dict[str, TargetDescription] | None = None
        self._in_range: tuple[tuple[float, float], dict[str, np.ndarray]] | None = None

    # -- helpers ---------------------------------------------------------------------------
    def _key(self, point) -> tuple[int, int]:
        cell = self.config.dedupe_cell
        return (int(math.floor(point[0] / cell)), int(math.floor(point[1] / cell)))

    def _random_cell_point(self, cells: np.ndarray) -> np.ndarray:
        return self.context.occupancy.cell_to_world(cells[self.rng.integers(len(cells))])

    def _least_used(self, keys: list, counts: Counter):
        order = self.rng.permutation(len(keys))
        return min((keys[i] for i in order), key=lambda k: counts[k])

    def _path(self, start, goal, lo: float, hi: float):
        if math.dist(start[:2], goal[:2]) > hi:
            return None
        lo = max(lo, self.config.min_start_distance)
        result = self.context.navigator.shortest_path(start, goal)
        if not result.reachable or not (lo <= result.length <= hi) or len(result.points) < 2:
            return None
        return result

    @property
    def targets(self) -> dict[str, TargetDescription]:
        """Objects usable as coarse targets (unambiguous, with a reachable viewpoint)."""
        if self._targets is None:
            self._targets = {}
            for object_id in sorted(self.context.objects):
                if len(self.context.viewpoints(object_id)) == 0:
                    continue
                description = describe_target(self.context, object_id)
                if description is not None:
                    self._targets[object_id] = description
        return self._targets

    # -- fine ------------------------------------------------------------------------------
    def sample_fine(self, n: int) -> list[Trajectory]:
        """Up to ``n`` fine-grained trajectories (fewer if the scene cannot give more)."""
        cfg, ctx = self.config, self.context
        rooms = sorted(r for r, cells in ctx.room_cells.items() if r >= 0 and len(cells))
        cross = cfg.fine_cross_rooms and len(rooms) >= 2
        if cfg.fine_cross_rooms and not cross:
            log.info("%s: fewer than two rooms, fine paths may stay in one room", ctx.scene_id)
        out: list[Trajectory] = []
        budget = n * cfg.max_attempts
        while len(out) < n and budget > 0:
            budget -= 1
            if rooms:
                goal_room = self._least_used(rooms, self.room_counts)
                goal = self._random_cell_point(ctx.room_cells[goal_room])
                starts = np.concatenate([c for r, c in ctx.room_cells.items() if r != goal_room]) if cross else ctx.main_cells
            else:
                goal_room, goal = -1, self._random_cell_point(ctx.main_cells)
                starts = ctx.main_cells
            start = self._random_cell_point(starts)
            key = ("fine", self._key(start), self._key(goal))
            if key in self._seen:
                continue
            result = self._path(start, goal, cfg.fine_min_distance, cfg.fine_max_distance)
            if result is None:
                continue
            self._seen.add(key)
            self.room_counts[goal_room] += 1
            points = result.points
            out.append(Trajectory(
                start=points[0].copy(), start_yaw=float(self.rng.uniform(-math.pi, math.pi)), points=points,
                length=result.length, goal=points[-1].copy(), goal_yaw=_heading(points[-2], points[-1]),
                start_room=ctx.room_at(points[0]), goal_room=ctx.room_at(points[-1])))
        return out

    # -- coarse ----------------------------------------------------------------------------
    def _coarse_leg(self, start: np.ndarray | None, exclude: set[str], tag: str) -> Trajectory | None:
        """One coarse leg to a balanced target (from ``start`` or a random start)."""
        cfg, ctx = self.config, self.context
        reachable = self._viewpoints_in_range(start) if start is not None else {}
        candidates = [o for o in self.targets if o not in exclude and (start is None or len(reachable[o]))]
        if not candidates:
            return None
        categories = sorted({ctx.objects[o].category for o in candidates})
        category = self._least_used(categories, self.category_counts)
        members = [o for o in candidates if ctx.objects[o].category == category]
        object_id = self._least_used(members, self.object_counts)
        viewpoints = ctx.viewpoints(object_id) if start is None else reachable[object_id]
        goal = viewpoints[self.rng.integers(len(viewpoints))]
        origin = self._random_cell_point(ctx.main_cells) if start is None else start
        key = (tag, self._key(origin), object_id, self._key(goal))
        if key in self._seen:
            return None
        result = self._path(origin, goal, cfg.coarse_min_distance, cfg.coarse_max_distance)
        if result is None:
            return None
        self._seen.add(key)
        center = ctx.objects[object_id].center
        points = result.points
        return Trajectory(
            start=points[0].copy(), start_yaw=float(self.rng.uniform(-math.pi, math.pi)), points=points,
            length=result.length, goal=points[-1].copy(), goal_yaw=_heading(points[-1], center),
            start_room=ctx.room_at(points[0]), goal_room=ctx.room_at(points[-1]), target=self.targets[object_id])

    def _viewpoints_in_range(self, start: np.ndarray) -> dict[str, np.ndarray]:
        """Each target's viewpoints whose geodesic distance from ``start`` (fast marching)
        lies in the coarse range: a chain's next leg picks its target among these rather
        than drawing targets that the path check then rejects."""
        key = (float(start[0]), float(start[1]))
        if self._in_range is None or self._in_range[0] != key:
            cfg = self.config
            lo, hi = max(cfg.coarse_min_distance, cfg.min_start_distance), cfg.coarse_max_distance
            field = self.context.navigator.distance_field(start)
            points = [self.context.viewpoints(object_id) for object_id in self.targets]
            distance = field.distance_at(np.concatenate(points)) if points else np.zeros(0)
            within = np.split((distance >= lo) & (distance <= hi), np.cumsum([len(p) for p in points])[:-1])
            found = {o: p[ok] for o, p, ok in zip(self.targets, points, within, strict=True)}
            self._in_range = (key, found)
        return self._in_range[1]

    def _count(self, trajectory: Trajectory) -> None:
        object_id = trajectory.target.object_id
        self.category_counts[self.context.objects[object_id].category] += 1
        self.object_counts[object_id] += 1

    def sample_coarse(self, n: int) -> list[Trajectory]:
        """Up to ``n`` coarse-grained trajectories with balanced target categories."""
        out: list[Trajectory] = []
        budget = n * self.config.max_attempts
        while len(out) < n and budget > 0 and self.targets:
            budget -= 1
            leg = self._coarse_leg(None, set(), "coarse")
            if leg is not None:
                self._count(leg)
                out.append(leg)
        return out

    # -- long-horizon ----------------------------------------------------------------------
    def _goals_away_from_start(self, legs: list[Trajectory]) -> bool:
        """Every later goal of a chain lies beyond the start margin of the chain's start.

        SR_All judges only the final STOP, so a chain that loops back near its start would
        let an agent that STOPs in place at once succeed.
        """
        start = legs[0].start
        for leg in legs[1:]:
            result = self.context.navigator.shortest_path(start, leg.goal)
            if result.reachable and result.length < self.config.min_start_distance:
                return False
        return True

    def sample_chains(self, n: int) -> list[list[Trajectory]]:
        """Up to ``n`` chains of ``min_legs..max_legs`` coarse legs (distinct targets)."""
        cfg = self.config
        out: list[list[Trajectory]] = []
        budget = n * cfg.max_attempts
        while len(out) < n and budget > 0 and len(self.targets) >= cfg.min_legs:
            budget -= 1
            legs_wanted = int(self.rng.integers(cfg.min_legs, cfg.max_legs + 1))
            legs: list[Trajectory] = []
            used: set[str] = set()
            tries = 4 * legs_wanted
            while len(legs) < legs_wanted and tries > 0:
                tries -= 1
                leg = self._coarse_leg(legs[-1].goal if legs else None, used, f"chain{len(out)}")
                if leg is not None:
                    legs.append(leg)
                    used.add(leg.target.object_id)
            if len(legs) < cfg.min_legs or not self._goals_away_from_start(legs):
                continue
            key = ("chain", self._key(legs[0].start), tuple(leg.target.object_id for leg in legs))
            if key in self._seen:
                continue
            self._seen.add(key)
            for leg in legs:
                self._count(leg)
            out.append(legs)
        return out
