"""The predictor's polar grid and its training targets, read from the scene's navigable map.

The grid (:mod:`vlnverse.agents.waypoints.learned.grid`) has :data:`HEADINGS` headings (3° apart, bin ``h`` at ``h * 3°`` counter-clockwise
from straight ahead) × :data:`DISTANCES` distances (0.25 m to 3.0 m, 0.25 m apart), the
layout of the discrete-to-continuous waypoint predictor of Hong et al. (CVPR 2022).

Target waypoints stand where a navigation-graph neighbour would: places in view of the agent
that a point-sized traveller reaches in a straight line.

- The *reach* of a heading is the farthest distance (≤ 3 m) along it such that the whole
  segment crosses free floor (no wall or furniture in the undilated occupancy map: what the
  camera sees through) and its end is a navigable cell (where the agent's body may stand).
- Targets are the peaks of the reach profile over headings (a corridor, a doorway, the far
  side of a room): headings whose reach is the largest within ±``peak_window_deg``, a
  plateau giving its middle heading, the farthest first, kept ``min_separation_deg`` apart,
  at most ``max_targets``; each target is the farthest point of its heading that is
  reached that way at least ``edge_margin`` short of the reach (in open floor, as a graph
  node, not against the wall that ends the reach) and at least ``min_distance`` away.
- On a pose along a reference path, the path's point ``path_lookahead`` metres ahead (the
  farthest visible one) is a target too, unless a target already lies within
  ``merge_distance`` of it.

The segment to a target is checked for a point, not for the 0.3 m body: a target may graze a
table's corner on the way. That is the paper's setting (§5.3): its predictor marks where to
go, not how to get there, so Strict physics can stop the agent on the way while Tel-Hop,
which only checks the destination, cannot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from vlnverse.agents.waypoints.learned.grid import (
    DISTANCE_STEP,
    DISTANCES,
    HEADING_STEP,
    HEADINGS,
    distance_of,
    heading_of,
)

RAY_STEP = 0.05  # metres between the samples of a heading's ray


def polar_to_xy(heading: np.ndarray, distance: np.ndarray) -> np.ndarray:
    """``(..., 2)`` agent-frame points (x forward, y left)."""
    return np.stack([distance * np.cos(heading), distance * np.sin(heading)], axis=-1)


def to_world(points: np.ndarray, x: float, y: float, yaw: float) -> np.ndarray:
    """Agent-frame ``(..., 2)`` points in the world frame of a pose."""
    c, s = math.cos(yaw), math.sin(yaw)
    return np.stack([x + points[..., 0] * c - points[..., 1] * s, y + points[..., 0] * s + points[..., 1] * c], -1)


@dataclass(frozen=True)
class TargetConfig:
    """How targets are read from the navigable map (see the module docs).

    Attributes:
        min_distance: Nearest target (m).
        edge_margin: A target stands this far short of its heading's reach (m).
        peak_window_deg: A peak is the largest reach within ± this angle.
        min_separation_deg: Targets are at least this far apart in heading.
        max_targets: Most targets per pose.
        path_lookahead: Distance along the reference path to its target point (m).
        merge_distance: The path's point is dropped when a target lies this close (m).
    """

    min_distance: float = 0.5
    edge_margin: float = 0.5
    peak_window_deg: float = 30.0
    min_separation_deg: float = 30.0
    max_targets: int = 6
    path_lookahead: float = 2.5
    merge_distance: float = 0.75


def ray_masks(occupancy, x: float, y: float, yaw: float) -> tuple[np.ndarray, np.ndarray]:
    """Free and navigable flags ``(HEADINGS, samples)`` along every heading's ray (3 m)."""
    steps = np.arange(1, int(round(DISTANCES * DISTANCE_STEP / RAY_STEP)) + 1) * RAY_STEP
    points = to_world(polar_to_xy(heading_of(np.arange(HEADINGS))[:, None], steps[None, :]), x, y, yaw)
    return occupancy.lookup(occupancy.free, points, False), occupancy.lookup(occupancy.navigable, points, False)


def standing_points(occupancy, x: float, y: float, yaw: float) -> np.ndarray:
    """``(HEADINGS, samples)``: whether each ray sample is navigable and seen over free floor."""
    free, navigable = ray_masks(occupancy, x, y, yaw)
    return np.cumprod(free, axis=1).astype(bool) & navigable


def farthest(valid: np.ndarray, limit: np.ndarray | float = math.inf) -> np.ndarray:
    """Per heading, the farthest distance of a ``valid`` sample not beyond ``limit`` (m; 0: none)."""
    steps = np.arange(1, valid.shape[1] + 1) * RAY_STEP
    allowed = valid & (steps[None, :] <= np.asarray(limit, dtype=np.float64).reshape(-1, 1) + 1e-9)
    return np.where(allowed, steps[None, :], 0.0).max(axis=1)


def reach_profile(occupancy, x: float, y: float, yaw: float) -> np.ndarray:
    """The reach of every heading (m; 0 where no navigable point is in a straight line)."""
    return farthest(standing_points(occupancy, x, y, yaw))


def navigable_grid(occupancy, x: float, y: float, yaw: float) -> np.ndarray:
    """Whether each polar grid cell's point is a navigable cell, ``(HEADINGS, DISTANCES)``."""
    points = to_world(polar_to_xy(heading_of(np.arange(HEADINGS))[:, None], distance_of(np.arange(DISTANCES))[None, :]),
                      x, y, yaw)
    return occupancy.lookup(occupancy.navigable, points, False).astype(bool)


def reach_peaks(reach: np.ndarray, config: TargetConfig) -> np.ndarray:
    """``(n, 2)`` (heading rad, reach m) at the peaks of a reach profile."""
    half = int(round(config.peak_window_deg / math.degrees(HEADING_STEP)))
    windows = np.stack([np.roll(reach, k) for k in range(-half, half + 1)])
    peak = (reach >= windows.max(axis=0) - 1e-9) & (reach >= config.min_distance)
    if peak.all():
        peak[1:] = False  # the same reach everywhere: one target straight ahead
    bins = []
    for run in _circular_runs(peak):
        bins.append(run[len(run) // 2])
    order = sorted(bins, key=lambda b: -reach[b])
    kept: list[int] = []
    separation = config.min_separation_deg / math.degrees(HEADING_STEP)
    for b in order:
        if len(kept) < config.max_targets and all(_bin_gap(b, k) >= separation for k in kept):
            kept.append(b)
    return np.array([[heading_of(b), reach[b]] for b in kept], dtype=np.float64).reshape(-1, 2)


def path_target(occupancy, path: np.ndarray, x: float, y: float, yaw: float, lookahead: float) -> np.ndarray | None:
    """The farthest point of ``path`` ((n, 2) world, starting near the pose) within
    ``lookahead`` metres along it that the pose sees in a straight line over free floor,
    as (heading rad, distance m); None when it is nearer than a distance bin."""
    seg = np.diff(path, axis=0)
    arc = np.concatenate([[0.0], np.cumsum(np.linalg.norm(seg, axis=1))])
    samples = np.arange(0.0, min(lookahead, arc[-1]) + 1e-9, RAY_STEP)
    points = np.stack([np.interp(samples, arc, path[:, 0]), np.interp(samples, arc, path[:, 1])], axis=1)
    best = None
    for point in points:
        offset = point - np.array([x, y])
        distance = float(np.linalg.norm(offset))
        if distance > DISTANCES * DISTANCE_STEP:
            break
        n = max(int(distance / RAY_STEP), 1)
        line = np.array([x, y]) + offset * (np.arange(1, n + 1) / n)[:, None]
        if occupancy.lookup(occupancy.free, line, False).all() and occupancy.is_navigable(point):
            best = (float(math.remainder(math.atan2(offset[1], offset[0]) - yaw, 2.0 * math.pi)), distance)
    if best is None or best[1] < DISTANCE_STEP:
        return None
    return np.array(best)


def targets_at(occupancy, x: float, y: float, yaw: float, config: TargetConfig,
               path: np.ndarray | None = None) -> np.ndarray:
    """``(n, 2)`` targets (heading rad, distance m) of a pose (see the module docs)."""
    valid = standing_points(occupancy, x, y, yaw)
    peaks = reach_peaks(farthest(valid), config)
    bins = np.round(np.remainder(peaks[:, 0], 2.0 * math.pi) / HEADING_STEP).astype(int) % HEADINGS
    stand = farthest(valid[bins], peaks[:, 1] - config.edge_margin)  # in open floor, short of the reach
    targets = np.stack([peaks[:, 0], stand], axis=1)[stand >= config.min_distance]
    if path is not None and len(path) > 1:
        extra = path_target(occupancy, path, x, y, yaw, config.path_lookahead)
        if extra is not None:
            near = np.linalg.norm(polar_to_xy(targets[:, 0], targets[:, 1]) - polar_to_xy(extra[0], extra[1]), axis=-1)
            if not (near < config.merge_distance).any():
                targets = np.vstack([targets, extra[None]])
    return targets


def _bin_gap(a: int, b: int) -> int:
    gap = abs(a - b) % HEADINGS
    return min(gap, HEADINGS - gap)


def _circular_runs(mask: np.ndarray) -> list[list[int]]:
    """Runs of consecutive True bins, wrapping around."""
    if not mask.any():
        return []
    start = int(np.argmin(mask))  # a False bin: runs never straddle it
    runs: list[list[int]] = []
    current: list[int] = []
    for k in range(1, len(mask) + 1):
        b = (start + k) % len(mask)
        if mask[b]:
            current.append(b)
        elif current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    return runs
