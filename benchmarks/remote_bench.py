"""Remote-policy benchmark: episode throughput against a policy server with a fixed latency.

``remote.throughput_8_vs_1``: ``vlnverse eval`` of the ``remote`` agent against a policy
server in its own process (only websockets, msgpack and numpy; one thread per connection,
as a batching GPU server takes requests in parallel) that answers every observation after
``--delay`` seconds (0.2): MOVE_FORWARD until ``--steps`` steps, then STOP. Episodes per
second of 8 concurrent episodes (one connection per running episode) over those of one at a
time (``--workers 1 --concurrency 1``), the same seeded sample of episodes generated from the
bundled scenes (Tel-Hop), env building included. The 8 run as the docs advise on this machine:
a worker per core (``--workers``, by default the most cores that divide 8) of ``8 / workers``
concurrent episodes each (``--workers 2 --concurrency 4`` on 2 cores), so that building envs
and stepping them use every core; ``remote.throughput_8_vs_1_one_worker`` is the same with the
8 on one worker (``--concurrency 8``; context, no target). The camera is one 64 x 64 RGB view (``--rig
default``: the default RGB-D pair; ``none``: no camera, pose and instruction only), so that
the simulator's own step time on this 2-core machine hides less of the overlap of the
server's latency. The speed-up is bounded by (latency + CPU time) / CPU time per step, so on a
loaded 2-core machine it stays well under 8.

This machine is shared, so absolute figures are noisy; the ratio is measured within one run.

Usage: ``python benchmarks/remote_bench.py [--episodes N] [--steps S] [--delay S] [--workers W]``
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SERVER = """
import sys, time
import msgpack
from websockets.sync.server import serve
delay, steps = float(sys.argv[1]), int(sys.argv[2])
def handler(ws):
    ws.send(msgpack.packb({"action_space": "discrete"}))
    for frame in ws:
        message = msgpack.unpackb(frame)
        if "__ctrl__" in message:
            ws.send(msgpack.packb({"__ctrl__": "ok"}))
            continue
        time.sleep(delay)
        ws.send(msgpack.packb({"action": 1 if message["step"] < steps - 1 else 0}))
with serve(handler, "127.0.0.1", 0, compression=None) as server:
    print("listening", server.socket.getsockname()[1], flush=True)
    server.serve_forever()
"""


def bundled_dataset(folder: Path) -> Path:
    """A dataset generated from the bundled scenes (prior instructions, seed 0)."""
    from vlnverse.tasks.datagen import DatagenConfig, run_datagen
    from vlnverse.tasks.generate import GenerationConfig

    out = folder / "dataset"
    run_datagen(DatagenConfig(scenes=str(REPO / "assets" / "scenes"), out=str(out), seed=0,
                              generation=GenerationConfig(per_scene=4)))
    return out


def cpu_seconds() -> tuple[float, float]:
    """CPU seconds used so far by this process and by its reaped children (the eval worker)."""
    return tuple(sum(resource.getrusage(who)[:2]) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))


def run_eval(dataset: Path, out: Path, url: str, workers: int, concurrency: int, args: argparse.Namespace) -> Run:
    """One eval run: its episodes/s, and where the episodes' wall time and the CPU went."""
    from vlnverse.eval.running.harness import EvalConfig, evaluate

    rig = {"small": {"sensors": {"rgb": {"kind": "rgb", "width": 64, "height": 64}}}, "none": {"sensors": []},
           "default": {}}[args.rig]
    config = EvalConfig(dataset=str(dataset), out=str(out), agent=url, agent_config=rig,
                        physics=("tel_hop",), episodes=args.episodes, workers=workers, concurrency=concurrency,
                        plots=0,
                        bootstrap=10, max_steps=args.steps + 5)
    cpu0 = cpu_seconds()
    start = time.perf_counter()
    result = evaluate(config)
    elapsed = time.perf_counter() - start
    cpu = [b - a for a, b in zip(cpu0, cpu_seconds(), strict=True)]
    errors = [r for r in result.records if r["fail_reason"] == "error"]
    if errors:
        raise RuntimeError(f"benchmark episodes failed: {errors[0]['error']}")
    split = {key: sum(t[key] for t in result.timings) / len(result.timings)
             for key in ("build", "env", "agent", "waited", "total")}
    built = sum(t["built"] for t in result.timings)
    return Run(workers, concurrency, result.evaluated / elapsed, result.evaluated, elapsed, cpu[0], cpu[1], split, built)


@dataclass
class Run:
    """One eval run: throughput, wall and CPU seconds (this process; the worker process it
    forked, reaped by the end), each episode's mean wall time per part (``timings``) and
    the envs built (the other episodes reset an env an earlier one used)."""

    workers: int
    concurrency: int
    episodes_per_s: float
    episodes: int
    wall_s: float
    parent_cpu_s: float
    worker_cpu_s: float
    split: dict[str, float]
    built: int

    def report(self) -> str:
        s = self.split
        rest = s["total"] - s["env"] - s["agent"] - s["waited"]
        return (f"{self.workers} worker(s) x concurrency {self.concurrency}: {self.episodes_per_s:.2f} episodes/s over {self.episodes} episodes, "
                f"{self.wall_s:.1f} s wall, {self.built} envs built; CPU: workers {self.worker_cpu_s:.1f} s, parent {self.parent_cpu_s:.1f} s; "
                f"an episode: getting its env {s['build']:.2f} s, then {s['total']:.2f} s = server "
                f"{s['agent']:.2f} + env {s['env']:.2f} + waiting for the env lock {s['waited']:.2f} + rest {rest:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--steps", type=int, default=10, help="steps per episode (the last one STOP)")
    parser.add_argument("--delay", type=float, default=0.2, help="the server's latency per action, s")
    parser.add_argument("--rig", choices=("small", "none", "default"), default="small")
    parser.add_argument("--workers", type=int, default=workers_for(8, os.cpu_count() or 1),
                        help="worker processes of the 8 concurrent episodes (a divisor of 8; default: %(default)s)")
    args = parser.parse_args()
    if args.workers < 1 or 8 % args.workers:
        parser.error(f"--workers must divide 8, got {args.workers}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        dataset = bundled_dataset(folder)
        server = subprocess.Popen([sys.executable, "-c", SERVER, str(args.delay), str(args.steps)],
                                  stdout=subprocess.PIPE, text=True)
        try:
            url = f"ws://127.0.0.1:{server.stdout.readline().split()[1]}"
            serial = run_eval(dataset, folder / "k1", url, 1, 1, args)
            print(serial.report())
            one_worker = run_eval(dataset, folder / "k8_one_worker", url, 1, 8, args)
            print(one_worker.report())
            fast = run_eval(dataset, folder / "k8", url, args.workers, 8 // args.workers, args)
            print(fast.report())
        finally:
            server.kill()
            server.wait()
    waves = -(-fast.episodes // 8)
    print(f"(server answers after {args.delay:.2f} s, {args.steps} steps an episode; 8 at once take at least "
          f"{waves} x {args.steps} x {args.delay:.2f} s = {waves * args.steps * args.delay:.1f} s of latency, and each "
          f"worker's CPU seconds, its work being serialised by the GIL and the env lock)")
    floor = max(waves * args.steps * args.delay, fast.worker_cpu_s / fast.workers)
    print(f"BENCH remote.throughput_8_vs_1 {fast.episodes_per_s / serial.episodes_per_s:.2f} x target >= 6")
    print(f"BENCH remote.throughput_8_vs_1_one_worker {one_worker.episodes_per_s / serial.episodes_per_s:.2f} x "
          "target >= 0")
    print(f"BENCH remote.ceiling_8_vs_1 {serial.wall_s / floor:.2f} x "
          f"(concurrency 1's wall over the larger of the 8's latency and CPU per worker)")


def workers_for(concurrent: int, cores: int) -> int:
    """The most workers, one per core at most, that share ``concurrent`` episodes evenly."""
    return max(w for w in range(1, min(cores, concurrent) + 1) if concurrent % w == 0)


if __name__ == "__main__":
    main()
