"""Evaluation benchmarks: metric throughput (and, later, harness overhead and scaling).

Prints human-readable lines, then one ``BENCH <name> <value> <unit> target <op> <value>``
line per figure. Each figure is a function in ``FIGURES``; append new ones there.

``eval.metric_episodes_per_s``: :func:`vlnverse.eval.metrics.compute_metrics_batch` over
synthetic episodes shaped like the paper's discrete agents: up to 200 recorded poses
(0.25 m forward moves mixed with 15-degree turns in place), a reference path of
4-20 m, collisions, one STOP, and precomputed geodesic distances (as the harness gets
them from the env's distance field). Records are built before the clock starts; the
time covers all metrics (resampling, exact DTW, SR/OSR/SPL, CR, ...).

Usage: ``python benchmarks/eval_bench.py [--episodes N] [--seed S]``
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from vlnverse.eval.metrics import EpisodeRecord, MetricsConfig, compute_metrics_batch


def synthetic_episode(rng: np.random.Generator, max_poses: int = 200) -> EpisodeRecord:
    """One discrete-agent episode with at most ``max_poses`` recorded poses."""
    n_actions = int(rng.integers(max_poses // 2, max_poses))  # poses = actions + 1
    forward = rng.random(n_actions - 1) < 0.7
    turns = np.where(forward, 0.0, rng.choice([-1.0, 1.0], size=n_actions - 1) * np.radians(15))
    heading = np.cumsum(turns)
    step = 0.25 * forward
    moves = np.stack([np.cos(heading) * step, np.sin(heading) * step, np.zeros_like(step)], axis=1)
    positions = np.vstack([np.zeros((1, 3)), np.cumsum(moves, axis=0), np.zeros((1, 3))])
    positions[-1] = positions[-2]  # STOP does not move
    ref_len = rng.uniform(4.0, 20.0)
    bends = rng.integers(2, 5)
    corners = np.cumsum(rng.normal(0.0, 1.0, size=(bends, 3)) * [1, 1, 0], axis=0)
    corners = np.vstack([np.zeros((1, 3)), corners])
    seg = np.linalg.norm(np.diff(corners, axis=0), axis=1).sum()
    reference = corners * (ref_len / max(seg, 1e-9))
    goal = reference[-1]
    actions = ["forward" if f else "turn" for f in forward] + ["stop"]
    geodesic = np.linalg.norm(positions - goal, axis=1) * 1.15
    return EpisodeRecord(
        positions=positions,
        goals=goal[None, :],
        geodesic_distance=float(ref_len),
        actions=actions,
        stops=(len(positions) - 1,),
        collisions=rng.random(len(actions)) < 0.05,
        reference_path=reference,
        goal_distances=geodesic,
        fail_reason="stop",
    )


def bench_metric_throughput(args: argparse.Namespace) -> list[str]:
    """``eval.metric_episodes_per_s`` (target >= 10,000 episodes/s)."""
    rng = np.random.default_rng(args.seed)
    records = [synthetic_episode(rng) for _ in range(args.episodes)]
    config = MetricsConfig()
    compute_metrics_batch(records[:256], config)  # warm-up (imports, caches)
    best = 0.0
    for _ in range(args.repeats):
        start = time.perf_counter()
        metrics = compute_metrics_batch(records, config)
        elapsed = time.perf_counter() - start
        best = max(best, len(records) / elapsed)
    poses = np.array([len(r.positions) for r in records])
    print(
        f"metrics: {len(records)} episodes, poses/episode {poses.min()}-{poses.max()} "
        f"(mean {poses.mean():.0f}); mean SR {np.mean([m.SR for m in metrics]):.3f}, "
        f"nDTW {np.mean([m.nDTW for m in metrics]):.3f}; best of {args.repeats}: "
        f"{best:,.0f} episodes/s"
    )
    return [f"BENCH eval.metric_episodes_per_s {best:.0f} episodes/s target >= 10000"]


FIGURES: list[Callable[[argparse.Namespace], list[str]]] = [bench_metric_throughput]
"""Each figure prints its own human-readable lines and returns its BENCH lines."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    bench_lines: list[str] = []
    for figure in FIGURES:
        bench_lines += figure(args)
    for line in bench_lines:
        print(line)


if __name__ == "__main__":
    main()
