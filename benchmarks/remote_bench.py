"""Remote-policy benchmark: episode throughput against a policy server with a fixed latency.

``remote.throughput_8_vs_1``: ``vlnverse eval`` of the ``remote`` agent against a policy
server in its own process (only websockets, msgpack and numpy; one thread per connection,
as a batching GPU server takes requests in parallel) that answers every observation after
``--delay`` seconds (0.2): MOVE_FORWARD until ``--steps`` steps, then STOP. Episodes per
second of ``--concurrency 8`` (one connection per running episode) over those of
``--concurrency 1``, one worker, the same seeded sample of episodes generated from the bundled
scenes (Tel-Hop), env building included. The camera is one 64 x 64 RGB view (``--rig
default``: the default RGB-D pair; ``none``: no camera, pose and instruction only), so that
the simulator's own step time on this 2-core machine hides less of the overlap of the
server's latency. The speed-up is bounded by (latency + CPU time) / CPU time per step, so on a
loaded 2-core machine it stays well under 8.

This machine is shared, so absolute figures are noisy; the ratio is measured within one run.

Usage: ``python benchmarks/remote_bench.py [--episodes N] [--steps S] [--delay S]``
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
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


def run_eval(dataset: Path, out: Path, url: str, concurrency: int, args: argparse.Namespace) -> tuple[float, int]:
    """Episodes per second of one eval run, and the number of episodes it evaluated."""
    from vlnverse.eval.harness import EvalConfig, evaluate

    rig = {"small": {"sensors": {"rgb": {"kind": "rgb", "width": 64, "height": 64}}}, "none": {"sensors": []},
           "default": {}}[args.rig]
    config = EvalConfig(dataset=str(dataset), out=str(out), agent=url, agent_config=rig,
                        physics=("tel_hop",), episodes=args.episodes, concurrency=concurrency, plots=0,
                        bootstrap=10, max_steps=args.steps + 5)
    start = time.perf_counter()
    result = evaluate(config)
    elapsed = time.perf_counter() - start
    errors = [r for r in result.records if r["fail_reason"] == "error"]
    if errors:
        raise RuntimeError(f"benchmark episodes failed: {errors[0]['error']}")
    return result.evaluated / elapsed, result.evaluated


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--steps", type=int, default=10, help="steps per episode (the last one STOP)")
    parser.add_argument("--delay", type=float, default=0.2, help="the server's latency per action, s")
    parser.add_argument("--rig", choices=("small", "none", "default"), default="small")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        dataset = bundled_dataset(folder)
        server = subprocess.Popen([sys.executable, "-c", SERVER, str(args.delay), str(args.steps)],
                                  stdout=subprocess.PIPE, text=True)
        try:
            url = f"ws://127.0.0.1:{server.stdout.readline().split()[1]}"
            serial, n1 = run_eval(dataset, folder / "k1", url, 1, args)
            print(f"concurrency 1: {serial:.2f} episodes/s over {n1} episodes")
            fast, n8 = run_eval(dataset, folder / "k8", url, 8, args)
            print(f"concurrency 8: {fast:.2f} episodes/s over {n8} episodes "
                  f"(server answers after {args.delay:.2f} s, {args.steps} steps an episode)")
        finally:
            server.kill()
            server.wait()
    print(f"BENCH remote.throughput_8_vs_1 {fast / serial:.2f} x target >= 6")


if __name__ == "__main__":
    main()
