"""Training benchmarks: pre-rendering against the raw renderer, training and online rollout rates.

Figures (``BENCH <name> <value> <unit> target <op> <value>``):

- ``train.prerender_ratio_vs_raw_render``: frames/s of ``vlnverse dataset prerender``
  (oracle walk, env steps, RGB-D rendering, compression and writing, env build included)
  over the backend's own ``render`` calls/s (the same renderer, ``gl`` or ``tiny`` as
  ``auto`` resolves, same camera) at the poses the pre-render visited (each round replays
  them), median of interleaved rounds.
- ``train.prerender_cpu_ratio_main_thread`` / ``train.prerender_cpu_ratio_all``: the raw
  renders' CPU seconds over the pre-render's, in its main thread (which renders: the ratio
  above on a machine with a core free for the planner process and the writer thread) and in
  all its threads and processes (the ratio above on a machine busy on every core); context,
  no target.
- ``train.prerender_frames_per_s``: the pre-render's absolute rate.
- ``train.seq2seq_samples_per_s`` / ``train.cma_samples_per_s``: teacher-forced training
  steps (frames) per second of the smoke preset's models on the pre-rendered frames.
- ``train.cma_cpu_preset_samples_per_s``: the same for CMA at the ``cpu`` preset (the
  shipped checkpoint's settings), median of interleaved rounds in fresh processes, and
  ``train.cma_cpu_preset_reference_samples_per_s``: the same rounds of the code at
  ``--train-reference`` (a git revision, by default the last one before issue 46's training
  changes, extracted with ``git archive``) reading the frames as that code pre-rendered them
  (zlib ``.npz`` chunks); ``train.cma_cpu_preset_speedup_vs_reference`` is their ratio, and
  ``train.cma_cpu_preset_cpu_seconds_speedup_vs_reference`` the median ratio of the CPU seconds
  (all threads and training processes) the same batches took (context, no target: what a
  loaded machine does not move, and below 1 where the code uses more cores). Each code runs at
  its own preset's processes and torch threads (the reference: one process, 1 thread; this
  code: one process per core, the cores shared out) unless ``--train-threads N`` sets the
  threads of each process to N; the processes and threads each side ran with are printed.
- ``train.cma_cpu_preset_one_process_samples_per_s``: the same rounds of this code in one
  process (``--procs 1``, the preset's threads: every core), and
  ``train.cma_cpu_preset_procs_speedup_vs_one_process`` the preset's rate over it (the measure
  behind the preset's processes; context, no target).
- ``train.eval_cma_episodes_per_s``: episodes/s of ``vlnverse eval`` with the shipped CMA
  checkpoint (``assets/agents/cma``) over the whole val_unseen split of the benchmark's
  dataset under Strict and Tel-Hop (200-step cap), model loading included, with a worker per
  core (``--workers 2`` here), and ``train.eval_cma_reference_episodes_per_s`` the same run of
  the code at ``--train-reference`` with one worker (the CPU track's evaluations as they ran
  when issue 46 was filed); ``train.eval_cma_speedup_vs_reference`` is their ratio, median of
  ``--eval-rounds`` interleaved rounds, each run in a fresh process. Context, no target:
  ``train.eval_cma_one_worker_episodes_per_s`` (this code, one worker) and
  ``train.eval_cma_workers_speedup`` (a worker per core over one worker, this code; at most
  the core count). Every run's records must be the same (each line the same bytes; the
  script fails otherwise).
- ``train.online_vector_scaling_2env``: env steps/s of online rollouts (the oracle's
  waypoint choices, 12-view panoramas, batches of 4 episodes) with 2 async sub-envs over 1,
  median of pairs.
- ``train.online_lockstep_bound_2env``: what lockstep allows the figure above on its
  episodes, from each step's CPU seconds measured one env at a time (a vector step lasts as
  long as its slower sub-env; context, no target). The figure is about this bound times the
  machine's own scaling below.
- ``train.cpu_scaling_2proc``: the machine's own 2-process scaling at the time (a Python
  loop in 2 processes over 1, measured after each online pair; median), the ceiling of the
  figure above (context, no target).
- ``train.online_scaling_vs_machine_ceiling``: each online pair's 2-env scaling over the
  machine's 2-process scaling measured right after it, median over pairs.
- ``train.online_scaling_vs_lockstep_ceiling``: the same over what lockstep leaves of the
  machine's scaling on these episodes (the lockstep bound times the machine's scaling / 2,
  at most the machine's scaling): how much the vector env itself loses. With the learned
  predictor one episode of each rollout runs to the 35-step cap while the others take 4-7
  steps (the oracle's candidate, nearest the goal, lies behind a wall: every step collides
  and the oracle picks it again, the case the paper leaves to schedule sampling), so the
  bound, not the sub-envs' compute, is what keeps the figure above low.
- ``train.mini_track_minutes.<stage>``: wall minutes of each stage of the VLNVerse-mini CPU
  track as run for ``docs/results-mini.md`` (read from ``assets/tracks/mini/timings.json``,
  which records each run's command, its wall time and how loaded the machine was), their sum,
  and ``train.mini_track_minutes.elapsed`` (first start to last finish; stages overlapped)
  against the track's 3-hour aim; ``train.scaling_minutes.<point>.<stage>``: the same for each
  point of the scene-scaling curve (``docs/results-mini-scaling.md``, from
  ``assets/tracks/mini/scaling_timings.json``). ``--mini-track-only`` prints just these.

The dataset is generated from the bundled scenes (fine-grained episodes). The machine is
shared, so absolute numbers are noisy; ratios are measured within one run.

Usage: ``python benchmarks/train_bench.py [--episodes N] [--size PX] [--rounds R] [--only PART] [--train-threads N]
[--mini-track-only]``
(``--only prerender``, ``--only train`` or ``--only eval``: just those figures; ``--eval-rounds R``).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def make_dataset(out: Path) -> Path:
    from vlnverse.tasks.datagen import DatagenConfig, run_datagen
    from vlnverse.tasks.generate import GenerationConfig

    run_datagen(DatagenConfig(scenes=str(ROOT / "assets" / "scenes"), out=str(out), seed=0,
                              generation=GenerationConfig(tasks=("fine",), per_scene=80)))
    return out


def raw_render_rate(config, scene_file: str, poses: np.ndarray) -> tuple[float, float]:
    """Frames/s of the backend's own ``render`` (the renderer the env resolved) at ``poses``,
    without the env: the same views as the pre-render's sensors (one camera request per
    resolution, RGB, depth and semantics drawn together where they share one); and the CPU
    seconds of those renders."""
    from vlnverse.envs.nav_env import NavEnv
    from vlnverse.sim.types import CameraRequest

    views: dict[int, set[str]] = {}
    for spec in config.sensors().values():
        views.setdefault(spec["width"], set()).add(spec["kind"])
    env = NavEnv(scene_file, renderer=config.renderer, sensors={})
    try:
        backend, height = env.sim.backend, env.agent_spec.camera_height
        start, cpu = time.perf_counter(), time.thread_time()
        for x, y, z, yaw in poses:
            backend.render([CameraRequest((float(x), float(y), float(z) + height), float(yaw), 0.0, size, size,
                                          90.0, 0.05, 30.0, rgb="rgb" in kinds, depth="depth" in kinds,
                                          instance="semantic" in kinds) for size, kinds in views.items()])
        return len(poses) / (time.perf_counter() - start), time.thread_time() - cpu
    finally:
        env.close()


def make_subset(dataset: Path, work: Path, episodes: int) -> Path:
    """``work/subset``: the first ``episodes`` train episodes of ``dataset`` (written once)."""
    from vlnverse.tasks.dataset import EpisodeDataset
    from vlnverse.tasks.storage import write_dataset

    subset = work / "subset"
    if not subset.is_dir():
        source = EpisodeDataset.open(dataset)
        write_dataset(subset, source.episodes("train")[:episodes], extra={"scenes_dir": str(source.scenes_dir)})
    return subset


def prerender_round(dataset: Path, work: Path, size: int, episodes: int, index: int) -> tuple[float, ...]:
    """Pre-render frames/s, raw render frames/s at the same poses, and the raw renders' CPU
    seconds over the pre-render's in its main thread and in all its threads and processes."""
    import resource

    from vlnverse.learning.frames import FrameStore
    from vlnverse.learning.prerender import PrerenderConfig, prerender

    subset = make_subset(dataset, work, episodes)
    config = PrerenderConfig(dataset=str(subset), out=str(work / f"frames_{index}"), rgb_size=size, depth_size=size)

    def children() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    main, process, planner = time.thread_time(), time.process_time(), children()
    summary = prerender(config)
    main, process, planner = time.thread_time() - main, time.process_time() - process, children() - planner
    store = FrameStore(config.out, "train")
    scene_id = store.episodes[0].scene_id
    poses = store.steps(scene_id)["poses"]
    raw, raw_cpu = raw_render_rate(config, store.records[scene_id]["scene_file"], poses)
    return summary.frames_per_second, raw, raw_cpu / main, raw_cpu / (process + planner)


def training_rate(frames: Path, kind: str, preset_name: str = "smoke", progress: Any = None,
                  threads: int | None = None, procs: int | None = None) -> float:
    """Samples/s of one epoch of ``kind`` at a preset on ``frames`` (``progress``: train_imitation's;
    ``threads``, ``procs``: torch threads per process and processes instead of the preset's)."""
    from vlnverse.learning.imitation import ImitationConfig, train_imitation
    from vlnverse.learning.models import ModelConfig
    from vlnverse.learning.presets import preset

    data = preset(preset_name)
    model = ModelConfig(**data.pop("model"))
    data.pop("patience", None)
    data.update(epochs=1, val_split=None, val_episodes=None)
    if threads:
        data["threads"] = threads
    if procs:
        data["procs"] = procs
    with tempfile.TemporaryDirectory() as out:
        config = ImitationConfig(kind=kind, dataset=str(frames.parent / "subset"), out=out, frames=str(frames),
                                 model=model, **data)
        return train_imitation(config, progress=progress).samples_per_second


def cpu_preset_round(frames: Path, threads: int | None = None, procs: int | None = None) -> tuple[float, float, str]:
    """Samples/s of one cpu-preset CMA epoch, the CPU seconds of its batches after the first in
    every training process (the same batches in any version of the trainer: a figure a loaded
    machine does not move) and the processes and torch threads it trained with (the preset's,
    or ``procs``, ``threads``)."""
    import multiprocessing

    import torch

    marks: list[float] = []
    used: list[str] = []

    def mark(phase: str, done: int, total: int) -> None:
        if phase == "train" and done in (1, total):
            ranks = multiprocessing.active_children()  # the spawned training processes
            marks.append(time.process_time() + sum(_cpu_seconds(p.pid) for p in ranks))
            used[:] = [f"{1 + len(ranks)}x{torch.get_num_threads()}"]

    rate = training_rate(frames, "cma", "cpu", mark, threads, procs)
    return rate, marks[-1] - marks[0], used[0]


def _cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of process ``pid`` so far (Linux's ``/proc``)."""

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


#: The last revision before issue 46's changes: the reference of the training and evaluation speed-ups.
TRAIN_REFERENCE = "c088abd0b8cc54431a14318ac277197cff67add8"


def reference_tree(revision: str, out: Path) -> Path:
    """The ``vlnverse`` package of ``revision`` of this checkout, extracted under ``out``."""
    import io
    import subprocess
    import tarfile

    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", revision, "vlnverse"],
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(out, filter="data")
    return out


def cpu_preset_round_in(code: Path, frames: Path, threads: int | None,
                        procs: int | None = None) -> tuple[float, float, str]:
    """:func:`cpu_preset_round` in a fresh process importing ``vlnverse`` from ``code`` (torch at
    its defaults until the preset, or ``threads``, sets its threads)."""
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(code)}
    command = [sys.executable, __file__, "--train-rate", str(frames)] + (["--train-threads", str(threads)]
                                                                        if threads else [])
    command += ["--train-procs", str(procs)] if procs else []
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    rate, cpu, used = result.stdout.split()[-3:]
    return float(rate), float(cpu), used


def training_ab(work: Path, compressed: Path, raw: Path, rounds: int, revision: str,
                threads: int | None = None) -> tuple[float, float, float, float]:
    """Median cpu-preset CMA samples/s of this checkout on ``raw`` frames, of the same in one
    process and of ``revision``'s code on ``compressed`` ones, rounds interleaved, and the
    median ratio of the reference's CPU seconds over this code's (each at its preset's
    processes and torch threads, or ``threads`` per process)."""
    reference = reference_tree(revision, work / "reference")
    rounds_run = [(cpu_preset_round_in(ROOT, raw, threads), cpu_preset_round_in(ROOT, raw, threads, 1),
                   cpu_preset_round_in(reference, compressed, threads)) for _ in range(rounds)]
    print("cpu-preset CMA (samples/s, CPU s after the first batch, processes x torch threads) of this code, "
          f"of this code in one process and of the reference: {rounds_run}")
    return (statistics.median(r[0][0] for r in rounds_run), statistics.median(r[1][0] for r in rounds_run),
            statistics.median(r[2][0] for r in rounds_run), statistics.median(r[2][1] / r[0][1] for r in rounds_run))


def eval_rate(dataset: Path, workers: int, records: Path) -> float:
    """Episodes/s of the shipped CMA over the dataset's val_unseen split, Strict and Tel-Hop,
    on ``workers`` workers; the lines of its ``episodes.jsonl`` are written to ``records``
    (sorted: they are written as episodes end)."""
    from vlnverse.eval.registry import load_agent_config
    from vlnverse.eval.running.harness import EvalConfig, evaluate

    agent = load_agent_config(ROOT / "assets" / "agents" / "cma" / "agent.yaml")
    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        result = evaluate(EvalConfig(dataset=str(dataset), out=out, agent="cma", agent_config=agent, split="val_unseen",
                                     max_steps=200, plots=0, workers=workers))
        rate = result.evaluated / (time.perf_counter() - started)
        records.write_bytes(b"\n".join(sorted((Path(out) / "episodes.jsonl").read_bytes().splitlines())))
        return rate


def eval_rate_in(code: Path, dataset: Path, workers: int, records: Path) -> float:
    """:func:`eval_rate` in a fresh process importing ``vlnverse`` from ``code`` (torch at its defaults)."""
    import subprocess
    import sys

    command = [sys.executable, __file__, "--eval-rate", str(dataset), "--eval-workers", str(workers),
               "--eval-records", str(records)]
    result = subprocess.run(command, env={**os.environ, "PYTHONPATH": str(code)}, capture_output=True, text=True,
                            check=True)
    return float(result.stdout.split()[-1])


def eval_lines(dataset: Path, work: Path, rounds: int, revision: str) -> list[str]:
    """The evaluation figures from ``rounds`` interleaved rounds: this code with a worker per core,
    ``revision``'s code with one worker, this code with one worker."""
    cores = os.cpu_count() or 1
    reference = reference_tree(revision, work / "eval_reference")
    runs = {"new": (ROOT, cores), "reference": (reference, 1), "one_worker": (ROOT, 1)}
    rates: dict[str, list[float]] = {name: [] for name in runs}
    for i in range(rounds):  # each round in the other order than the last
        for name in list(runs)[:: 1 if i % 2 == 0 else -1]:
            code, workers = runs[name]
            rates[name].append(eval_rate_in(code, dataset, workers, work / f"records_{name}"))
        if len({(work / f"records_{name}").read_bytes() for name in runs}) != 1:
            raise SystemExit("the evaluations wrote different records")
    print(f"eval CMA episodes/s by round: {cores} workers {rates['new']}, reference (1 worker) {rates['reference']}, "
          f"1 worker {rates['one_worker']}")
    median = {name: statistics.median(values) for name, values in rates.items()}
    return [f"BENCH train.eval_cma_episodes_per_s {median['new']:.3f} episodes/s target >= 0",
            f"BENCH train.eval_cma_reference_episodes_per_s {median['reference']:.3f} episodes/s target >= 0",
            f"BENCH train.eval_cma_speedup_vs_reference {median['new'] / median['reference']:.2f} x target >= 2",
            f"BENCH train.eval_cma_one_worker_episodes_per_s {median['one_worker']:.3f} episodes/s target >= 0",
            f"BENCH train.eval_cma_workers_speedup {median['new'] / median['one_worker']:.2f} x target >= 0"]


def _online_setup(dataset: Path) -> tuple[int, dict[str, int], Any]:
    """Episodes in the train split, the vocabulary and the input spec of the online figures."""
    from vlnverse.agents.config import PanoramaConfig, WaypointConfig
    from vlnverse.learning.online.inputs import InputSpec
    from vlnverse.tasks.dataset import EpisodeDataset
    from vlnverse.tasks.formats.vocab import build_vocab

    episodes = EpisodeDataset.open(dataset).episodes("train")
    vocab = build_vocab(e.instruction.text for e in episodes)["stoi"]
    return len(episodes), vocab, InputSpec(PanoramaConfig(image_size=32), WaypointConfig())


def _picks(i: int, episodes_per_rollout: int, episodes: int) -> list[int]:
    return [(i * episodes_per_rollout + r) % episodes for r in range(episodes_per_rollout)]


def online_rate(dataset: Path, num_envs: int, episodes_per_rollout: int, rollouts: int) -> float:
    """Env steps/s of oracle rollouts in ``num_envs`` async sub-envs (each plays its share of
    a rollout's episodes in turn, as training with ``--batch-size`` does)."""
    from vlnverse.learning.online.rollout import TeacherPolicy, make_vector_env, rollout

    episodes, vocab, spec = _online_setup(dataset)
    vec = make_vector_env("async", num_envs, dataset=str(dataset), split="train", task=None, physics="slide",
                          spec=spec, vocab=vocab, max_steps=35)
    try:
        rollout(vec, TeacherPolicy(), list(range(num_envs)), 3)  # warm-up: workers started, scene loaded
        steps = seconds = 0.0
        for i in range(rollouts):
            stats = rollout(vec, TeacherPolicy(), _picks(i, episodes_per_rollout, episodes), 35)
            steps, seconds = steps + stats.env_steps, seconds + stats.seconds
        return steps / seconds
    finally:
        vec.close()


def online_lockstep_bound(dataset: Path, episodes_per_rollout: int, rollouts: int) -> tuple[float, list[list[int]]]:
    """The 2-env figure lockstep allows on :func:`online_rate`'s episodes, whatever the machine:
    each episode played alone in this process (CPU seconds of its reset and of each step), then
    replayed as 2 sub-envs stepping together as ``rollout`` schedules them (sub-env ``r`` plays
    ``picks[r::2]``, the next episode's reset in the step the last ends; a vector step lasts as
    long as its slower sub-env) against 1 sub-env playing them all, with no IPC or policy costs.
    Also each rollout's steps per episode (one episode much longer than the others bounds it)."""
    from vlnverse.learning.online.teacher_env import WaypointTeacherEnv

    episodes, vocab, spec = _online_setup(dataset)
    env = WaypointTeacherEnv(str(dataset), "train", None, "slide", spec, vocab, 35, hold_episode_end=True)
    costs: dict[int, tuple[float, list[float]]] = {}

    def played(index: int) -> tuple[float, list[float]]:
        start = time.thread_time()
        _, info = env.reset(options={"episode_queues": [[index]]})
        reset, steps = time.thread_time() - start, []
        while not info["episode_over"] and len(steps) < 35:
            start = time.thread_time()
            info = env.step(max(int(info["teacher"]), 0))[4]
            steps.append(time.thread_time() - start)
        return reset, steps

    one = two = 0.0
    lengths = []
    try:
        for i in range(rollouts):
            picks = _picks(i, episodes_per_rollout, episodes)
            for pick in picks:
                costs.setdefault(pick, played(pick))
            lengths.append([len(costs[p][1]) for p in picks])
            one += sum(costs[p][0] + sum(costs[p][1]) for p in picks)
            queues = [picks[0::2], picks[1::2]]
            lanes = [[c for k in range(len(q)) for c in _with_next_reset(costs, q, k)] for q in queues]
            two += max(costs[q[0]][0] for q in queues) + sum(
                max(lane[j] for lane in lanes if j < len(lane)) for j in range(max(map(len, lanes))))
    finally:
        env.close()
    return one / two, lengths


def _with_next_reset(costs: dict[int, tuple[float, list[float]]], queue: list[int], k: int) -> list[float]:
    """Episode ``queue[k]``'s step costs, its last step carrying the reset of the next one."""
    steps = list(costs[queue[k]][1])
    if k + 1 < len(queue):
        steps[-1] += costs[queue[k + 1]][0]
    return steps


def cpu_scaling() -> float:
    """The machine's own 2-process scaling (a pure-Python loop in 2 processes over 1): the
    ceiling of any 2-env figure at the time of the run (a shared machine's load lowers it)."""
    import multiprocessing

    n = 4_000_000
    start = time.perf_counter()
    _spin(n)
    one = time.perf_counter() - start
    with multiprocessing.get_context("fork").Pool(2) as pool:
        pool.map(_spin, [1, 1])
        start = time.perf_counter()
        pool.map(_spin, [n, n], chunksize=1)
        two = time.perf_counter() - start
    return 2 * one / two


def _spin(n: int) -> int:
    total = 0
    for i in range(n):
        total += i & 7
    return total


def mini_track_lines() -> list[str]:
    """``BENCH train.mini_track_minutes.<stage>`` lines from the recorded runs of the CPU track."""
    import json

    timings = json.loads((ROOT / "assets" / "tracks" / "mini" / "timings.json").read_text(encoding="utf-8"))
    lines = [f"BENCH train.mini_track_minutes.{run['stage']} {run['seconds'] / 60:.1f} min target >= 0"
             for run in timings["runs"]]
    total = sum(run["seconds"] for run in timings["runs"]) / 60
    lines.append(f"BENCH train.mini_track_minutes.stages_summed {total:.1f} min target >= 0")
    lines.append(f"BENCH train.mini_track_minutes.elapsed {timings['elapsed_seconds'] / 60:.1f} min target <= 180")
    scaling = json.loads((ROOT / "assets" / "tracks" / "mini" / "scaling_timings.json").read_text(encoding="utf-8"))
    lines += [f"BENCH train.scaling_minutes.{point}.{run['stage']} {run['seconds'] / 60:.1f} min target >= 0"
              for point, runs in scaling["points"].items() for run in runs]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=24, help="episodes pre-rendered per round")
    parser.add_argument("--size", type=int, default=128, help="RGB and depth resolution")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved pre-render rounds")
    parser.add_argument("--online-pairs", type=int, default=3, help="back-to-back (1, 2)-env online pairs")
    parser.add_argument("--only", choices=("prerender", "train", "eval", "online"), help="only these figures")
    parser.add_argument("--eval-rounds", type=int, default=1, help="interleaved evaluation rounds")
    parser.add_argument("--train-reference", default=TRAIN_REFERENCE,
                        help="git revision whose training and evaluation are the references of the speed-ups "
                             "(default: %(default)s)")
    parser.add_argument("--train-threads", type=int, default=None,
                        help="torch threads of both sides of the training A/B (default: each code's preset's)")
    parser.add_argument("--train-rate", type=Path, help=argparse.SUPPRESS)  # one round of training_ab
    parser.add_argument("--train-procs", type=int, default=None, help=argparse.SUPPRESS)  # its processes
    parser.add_argument("--eval-rate", type=Path, help=argparse.SUPPRESS)  # one run of eval_lines: its dataset,
    parser.add_argument("--eval-workers", type=int, help=argparse.SUPPRESS)  # workers
    parser.add_argument("--eval-records", type=Path, help=argparse.SUPPRESS)  # and where its records go
    parser.add_argument("--mini-track-only", action="store_true",
                        help="only print the CPU track's recorded stage times")
    args = parser.parse_args()
    if args.train_rate:
        print(*cpu_preset_round(args.train_rate, args.train_threads, args.train_procs))
        return
    if args.eval_rate:
        print(eval_rate(args.eval_rate, args.eval_workers, args.eval_records))
        return
    import torch

    torch.set_num_threads(1)
    print("\n".join(mini_track_lines()))
    if args.mini_track_only:
        return
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        dataset = make_dataset(work / "dataset")
        if args.only in (None, "prerender"):
            print("\n".join(prerender_lines(dataset, work, args)))
        if args.only in (None, "train"):
            print("\n".join(train_lines(dataset, work, args)))
        if args.only in (None, "eval"):
            print("\n".join(eval_lines(dataset, work, args.eval_rounds, args.train_reference)))
        if args.only in (None, "online"):
            print("\n".join(online_lines(dataset, args)))


def prerender_lines(dataset: Path, work: Path, args: argparse.Namespace) -> list[str]:
    rounds = [prerender_round(dataset, work, args.size, args.episodes, i) for i in range(args.rounds)]
    ratios = [r[0] / r[1] for r in rounds]
    print(f"pre-render {[round(r[0], 1) for r in rounds]} frames/s, raw render {[round(r[1], 1) for r in rounds]} "
          f"frames/s ({args.size} px RGB-D)")
    return [f"BENCH train.prerender_ratio_vs_raw_render {statistics.median(ratios):.3f} x target >= 0.85",
            f"BENCH train.prerender_cpu_ratio_main_thread {statistics.median(r[2] for r in rounds):.3f} x target >= 0",
            f"BENCH train.prerender_cpu_ratio_all {statistics.median(r[3] for r in rounds):.3f} x target >= 0",
            f"BENCH train.prerender_frames_per_s {statistics.median(r[0] for r in rounds):.1f} frames/s target >= 0"]


def train_lines(dataset: Path, work: Path, args: argparse.Namespace) -> list[str]:
    """Training rates on 64 px frames of the subset, pre-rendered raw and zlib-compressed."""
    from vlnverse.learning.prerender import PrerenderConfig, prerender

    base = PrerenderConfig(dataset=str(make_subset(dataset, work, args.episodes)), out=str(work / "frames_small"),
                           rgb_size=64, depth_size=64, compress=False)
    compressed = dataclasses.replace(base, out=str(work / "frames_compressed"), compress=True)
    for config in (base, compressed):
        prerender(config)
    rates = {kind: training_rate(Path(base.out), kind) for kind in ("seq2seq", "cma")}
    lines = [f"BENCH train.{kind}_samples_per_s {rate:.1f} samples/s target >= 0" for kind, rate in rates.items()]
    new, one, reference, cpu = training_ab(work, Path(compressed.out), Path(base.out), args.rounds,
                                           args.train_reference, args.train_threads)
    return lines + [f"BENCH train.cma_cpu_preset_samples_per_s {new:.1f} samples/s target >= 0",
                    f"BENCH train.cma_cpu_preset_one_process_samples_per_s {one:.1f} samples/s target >= 0",
                    f"BENCH train.cma_cpu_preset_procs_speedup_vs_one_process {new / one:.2f} x target >= 0",
                    f"BENCH train.cma_cpu_preset_reference_samples_per_s {reference:.1f} samples/s target >= 0",
                    f"BENCH train.cma_cpu_preset_speedup_vs_reference {new / reference:.2f} x target >= 2",
                    f"BENCH train.cma_cpu_preset_cpu_seconds_speedup_vs_reference {cpu:.2f} x target >= 0"]


def online_lines(dataset: Path, args: argparse.Namespace) -> list[str]:
    # Each pair is followed by the machine's own 2-process scaling, so a pair's figure is
    # compared with the ceiling of the same minute of a shared machine.
    pairs, ceilings = [], []
    for _ in range(args.online_pairs):
        pairs.append((online_rate(dataset, 1, 4, 2), online_rate(dataset, 2, 4, 2)))
        ceilings.append(cpu_scaling())
    print(f"online rollouts: {[tuple(round(v, 2) for v in p) for p in pairs]} env steps/s (1 env, 2 envs); "
          f"machine 2-process scaling after each pair {[round(c, 2) for c in ceilings]}")
    bound, lengths = online_lockstep_bound(dataset, 4, 2)
    capacity = statistics.median(ceilings)
    of_ceiling = statistics.median(b / a / c for (a, b), c in zip(pairs, ceilings, strict=True))
    # what the machine allows these episodes in lockstep: the bound at the machine's 2-process scaling
    of_reachable = statistics.median(b / a / min(c, bound * c / 2) for (a, b), c in zip(pairs, ceilings, strict=True))
    print(f"online rollouts' steps per episode {lengths} (sub-env r plays the rollout's episodes r, r + 2)")
    return [f"BENCH train.online_vector_scaling_2env {statistics.median(b / a for a, b in pairs):.2f} x target >= 1.6",
            f"BENCH train.online_lockstep_bound_2env {bound:.2f} x target >= 0",
            f"BENCH train.cpu_scaling_2proc {capacity:.2f} x target >= 0",
            f"BENCH train.online_scaling_vs_machine_ceiling {of_ceiling:.2f} x target >= 0.95",
            f"BENCH train.online_scaling_vs_lockstep_ceiling {of_reachable:.2f} x target >= 0.95"]


if __name__ == "__main__":
    main()
