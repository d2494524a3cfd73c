"""Evaluation benchmarks: metric throughput, harness overhead and worker scaling.

Prints human-readable lines, then one ``BENCH <name> <value> <unit> target <op> <value>``
line per figure. Each figure is a function in ``FIGURES``; append new ones there.

``eval.metric_episodes_per_s``: :func:`vlnverse.eval.scoring.metrics.compute_metrics_batch` over
synthetic episodes shaped like the paper's discrete agents: up to 200 recorded poses
(0.25 m forward moves mixed with 15-degree turns in place), a reference path of
4-20 m, collisions, one STOP, and precomputed geodesic distances (as the harness gets
them from the env's distance field). Records are built before the clock starts; the
time covers all metrics (resampling, exact DTW, SR/OSR/SPL, CR, ...).

``eval.harness_overhead_pct``: the ``oracle`` agent over a dataset generated from the
bundled scenes (``assets/scenes``, every task, Strict and Tel-Hop), in this process, no
pictures. Each episode's wall time — :meth:`EvalWorker.run` (reset, steps, recording,
metrics) plus the durable ``episodes.jsonl`` append — minus the env's own ``reset``/``step``
time and the agent's time, as a percentage of the env time. Building the envs (loading
scenes) is done before the clock starts.

``eval.scaling_2workers``: wall time of :func:`vlnverse.eval.running.harness.evaluate` with
``--workers 1`` over ``--workers 2`` on the same run (``oracle``, same dataset, fresh output
folders), process start-up and per-worker env building included, with the disk cache of
prepared scenes warm (as on every run after the first over these scenes; a private cache
folder, so the user's is left alone); the median over ``--scaling-repeats`` back-to-back
pairs of runs, in alternating order (this shared 2-core VM's speed drifts by tens of
percent over minutes; a pair sees the same speed). ``eval.scaling_2workers_cold_cache`` is
one pair with the disk cache emptied before each run. The CPU seconds of both
configurations are printed too: what the 2-worker run costs beyond the work itself. Before
each pair the machine's own ceiling for the episodes' work is measured: two processes
each walking oracle episodes in an env of their own (no harness) against one doing both
shares.
``eval.scaling_2workers_vs_machine`` is the median of each pair's scaling relative to its
ceiling (on shared virtual CPUs the ceiling swings far below 2).

Usage: ``python benchmarks/eval_bench.py [--episodes N] [--seed S] [--per-scene K]``
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from vlnverse.eval.scoring.episode_record import EpisodeRecord, MetricsConfig
from vlnverse.eval.scoring.metrics import compute_metrics_batch


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


REPO = Path(__file__).resolve().parents[1]


def bundled_dataset(folder: Path, per_scene: int, seed: int) -> Path:
    """A dataset of every task on the bundled scenes (prior instructions)."""
    from vlnverse.tasks.datagen import DatagenConfig, run_datagen
    from vlnverse.tasks.generate import GenerationConfig

    out = folder / "dataset"
    run_datagen(DatagenConfig(scenes=str(REPO / "assets" / "scenes"), out=str(out), seed=seed,
                              generation=GenerationConfig(per_scene=per_scene)))
    return out


def bench_harness_overhead(args: argparse.Namespace) -> list[str]:
    """``eval.harness_overhead_pct`` (target <= 10 % of the env's step time)."""
    from vlnverse.eval.running.harness import plan_items, select_episodes
    from vlnverse.eval.running.store import ResultStore
    from vlnverse.eval.running.worker import EvalWorker, RunSpec
    from vlnverse.tasks.dataset import EpisodeDataset

    with tempfile.TemporaryDirectory() as tmp:
        dataset = EpisodeDataset.open(bundled_dataset(Path(tmp), args.per_scene, args.seed))
        episodes = select_episodes(dataset, "all", "all", None, args.seed)
        items = plan_items(dataset, episodes, ("strict", "tel_hop"), plots=0)
        worker = EvalWorker(RunSpec(agent="oracle", seed=args.seed))
        store = ResultStore(Path(tmp) / "episodes.jsonl")
        for item in items:  # load every scene once, off the clock
            worker.env(item.scene_file, item.physics)
        env_s = agent_s = wall_s = 0.0
        steps = 0
        try:
            for item in items:
                worker.env(item.scene_file, item.physics)
                start = time.perf_counter()
                result = worker.run(item)
                store.append(result.record)
                wall_s += time.perf_counter() - start
                env_s += result.timing.env
                agent_s += result.timing.agent
                steps += len(result.record["actions"])
        finally:
            worker.close()
    overhead = 100.0 * (wall_s - env_s - agent_s) / env_s
    print(f"harness: oracle, {len(items)} episodes x physics, {steps} steps; env {env_s:.2f} s "
          f"({1000 * env_s / steps:.2f} ms/step), agent {agent_s:.3f} s, wall {wall_s:.2f} s "
          f"-> overhead {overhead:.2f} % of env time")
    return [f"BENCH eval.harness_overhead_pct {overhead:.2f} % target <= 10"]


def bench_worker_scaling(args: argparse.Namespace) -> list[str]:
    """``eval.scaling_2workers`` (target >= 1.7 x), with the disk cache warm; the figure
    with an empty disk cache is printed too."""
    from vlnverse import cache
    from vlnverse.eval.running.harness import EvalConfig, evaluate

    with tempfile.TemporaryDirectory() as tmp, private_cache(Path(tmp) / "cache"):
        dataset = bundled_dataset(Path(tmp), args.per_scene, args.seed)
        records = []

        def run(workers: int) -> tuple[float, float]:
            """Wall and CPU seconds of one evaluation, as a freshly started ``vlnverse eval``."""
            cache.clear_memory()  # forked workers would inherit this process's memos
            cpu_start, start = cpu_seconds(), time.perf_counter()
            result = evaluate(EvalConfig(dataset=str(dataset), out=str(Path(tmp) / f"run{len(records)}"),
                                         agent="oracle", workers=workers, plots=0, seed=args.seed))
            records.append(len(result.records))
            return time.perf_counter() - start, cpu_seconds() - cpu_start

        cold = {}
        for workers in (1, 2):
            cache.clear()
            cold[workers] = run(workers)[0]
        pairs, cpu, ceilings = [], {1: [], 2: []}, []
        scene = str(REPO / "assets" / "scenes" / "scene_0000" / "scene.usdc")
        for repeat in range(args.scaling_repeats):
            ceilings.append(machine_scaling_reference(scene))
            walls = {}
            for workers in ((1, 2) if repeat % 2 == 0 else (2, 1)):  # alternate: drift hits both alike
                walls[workers], used = run(workers)
                cpu[workers].append(used)
            pairs.append((walls[1], walls[2]))
    ratio = statistics.median(one / two for one, two in pairs)
    relative = statistics.median((one / two) / ceiling for (one, two), ceiling in zip(pairs, ceilings, strict=True))
    runs_text = ", ".join(f"{one:.1f}/{two:.1f} s" for one, two in pairs)
    print(f"scaling: oracle, {records[0]} episodes x physics; disk cache warm: 1/2 workers {runs_text} -> median "
          f"{ratio:.2f}x; disk cache empty: {cold[1]:.1f}/{cold[2]:.1f} s -> {cold[1] / cold[2]:.2f}x; this "
          f"machine's 2-process ceiling before each pair (oracle episodes without the harness) {', '.join(f'{c:.2f}' for c in ceilings)}x; "
          f"CPU seconds used (all processes, median, "
          f"warm) {statistics.median(cpu[1]):.1f} with 1 worker, {statistics.median(cpu[2]):.1f} with 2")
    return [f"BENCH eval.scaling_2workers {ratio:.2f} x target >= 1.7",
            f"BENCH eval.scaling_2workers_vs_machine {relative:.2f} x target >= 0.85",
            f"BENCH eval.scaling_2workers_cold_cache {cold[1] / cold[2]:.2f} x target >= 0"]


@contextlib.contextmanager
def private_cache(folder: Path) -> Iterator[None]:
    """Point the disk cache (this process and its workers) at ``folder`` for a while."""
    from vlnverse.cache import CACHE_DIR_ENV

    before = os.environ.get(CACHE_DIR_ENV)
    os.environ[CACHE_DIR_ENV] = str(folder)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(CACHE_DIR_ENV)
        else:
            os.environ[CACHE_DIR_ENV] = before


def cpu_seconds() -> float:
    """CPU time of this process and of its finished child processes (the eval workers)."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def oracle_share(scene: str, episodes: int) -> None:
    """One share of the machine reference: the oracle walks ``episodes`` random episodes of
    ``scene`` in one env, without the harness (no sensors, as the ``oracle`` agent)."""
    from vlnverse.envs.nav_env import NavEnv

    env = NavEnv(scene, sensors=(), physics="strict")
    for seed in range(episodes):
        _, info = env.reset(seed=seed)
        done = False
        while not done:
            _, _, terminated, truncated, info = env.step(info["oracle_action"])
            done = terminated or truncated
    env.close()


def machine_scaling_reference(scene: str, episodes: int = 30) -> float:
    """What this machine allows right now for the work of the episodes: two processes
    walking ``episodes`` oracle episodes each, against one process doing both shares."""
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(2) as pool:
        start = time.perf_counter()
        pool.apply(oracle_share, (scene, 2 * episodes))
        serial = time.perf_counter() - start
        start = time.perf_counter()
        pool.starmap(oracle_share, [(scene, episodes)] * 2)
        parallel = time.perf_counter() - start
    return serial / parallel


FIGURES: list[Callable[[argparse.Namespace], list[str]]] = [
    bench_metric_throughput, bench_harness_overhead, bench_worker_scaling]
"""Each figure prints its own human-readable lines and returns its BENCH lines."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scaling-repeats", type=int, default=5,
                        help="back-to-back (1 worker, 2 workers) pairs for the scaling figure (the median counts)")
    parser.add_argument("--per-scene", type=int, default=4,
                        help="coarse trajectories per bundled scene for the harness figures")
    args = parser.parse_args()
    bench_lines: list[str] = []
    for figure in FIGURES:
        bench_lines += figure(args)
    for line in bench_lines:
        print(line)


if __name__ == "__main__":
    main()
