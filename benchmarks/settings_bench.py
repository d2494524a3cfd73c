"""Process settings A/B through the CLI: what the training allocator and the pre-render's switch
interval buy when a user runs the commands.

Both settings are made only in processes vlnverse owns (see ``vlnverse.learning.allocator`` and
``vlnverse.learning.prerender``); this measures each through the command a user runs, as a user
runs it, against the same command with the setting left at the interpreter's or C library's
default: its processes start with a ``sitecustomize`` module on ``PYTHONPATH`` that switches the
setting off, so the training ranks and pre-render workers the command spawns run without it too.
Rounds are interleaved A, B, A, B ... in fresh processes on the same inputs; figures are medians.

Figures (``BENCH <name> <value> <unit> target <op> <value>``):

- ``settings.prerender_switch_interval_speedup``: frames/s of ``vlnverse dataset prerender``
  (the renderer in the main thread, the chunk writer in a thread beside it) over the same command
  at the interpreter's default switch interval (5 ms); ``settings.prerender_frames_per_s`` its rate.
- ``settings.train_allocator_speedup``: samples/s of one ``vlnverse train cma --preset cpu``
  epoch (the preset's training processes) over the same epoch with glibc's default ``malloc``
  thresholds; ``settings.train_samples_per_s`` its rate.

Run it with the machine to itself (about 5 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: ``sitecustomize`` modules that leave one setting at its default in every process they start in.
SETTING_OFF = {
    "switch-interval": "import sys\nimport vlnverse.learning.prerender as prerender\n"
                       "prerender.RENDER_SWITCH_INTERVAL_S = sys.getswitchinterval()\n",
    "allocator": "import vlnverse.learning.allocator as allocator\nallocator.keep_freed_memory = lambda: False\n",
}


def cli_json(setting: str, work: Path, *args: str) -> dict:
    """The ``--json`` output of ``vlnverse ARGS`` run in a fresh process: as shipped (``setting``
    ``shipped``) or with a key of :data:`SETTING_OFF` switched off in it and the processes it starts."""
    env = dict(os.environ)
    if setting != "shipped":
        site = work / f"site_{setting}"
        site.mkdir(exist_ok=True)
        (site / "sitecustomize.py").write_text(SETTING_OFF[setting], encoding="utf-8")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-m", "vlnverse", *args, "--json"], cwd=ROOT, env=env, check=True,
                          capture_output=True, text=True)
    return json.loads(done.stdout)


def prerender_rate(setting: str, dataset: Path, out: Path, size: int) -> float:
    summary = cli_json(setting, out.parent, "dataset", "prerender", str(dataset), "--split", "train", "--rgb-size",
                       str(size), "--depth-size", str(size), "--out", str(out))
    return summary["frames_per_second"]


def train_rate(setting: str, dataset: Path, frames: Path, out: Path) -> float:
    summary = cli_json(setting, out.parent, "train", "cma", "--dataset", str(dataset), "--preset", "cpu", "--frames",
                       str(frames), "--epochs", "1", "--val-split", "none", "--no-progress", "--out", str(out))
    return summary["samples_per_second"]


def interleaved(rounds: int, measure) -> tuple[list[float], list[float]]:
    """``measure(setting, index)`` for the shipped code and the setting switched off, alternating."""
    shipped, default = [], []
    for index in range(rounds):
        shipped.append(measure("shipped", index))
        default.append(measure("off", index))
    return shipped, default


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="interleaved A/B rounds per figure")
    parser.add_argument("--per-scene", type=int, default=200, help="fine episodes per bundled scene")
    parser.add_argument("--only", choices=("prerender", "train"), help="only these figures")
    parser.add_argument("--size", type=int, default=64, help="pre-rendered RGB and depth resolution (the CPU track's: 64)")
    args = parser.parse_args()
    from vlnverse.tasks.datagen import DatagenConfig, run_datagen
    from vlnverse.tasks.generate import GenerationConfig

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        dataset = work / "dataset"
        run_datagen(DatagenConfig(scenes=str(ROOT / "assets" / "scenes"), out=str(dataset), seed=0,
                                  generation=GenerationConfig(tasks=("fine",), per_scene=args.per_scene)))

        def render(setting: str, index: int) -> float:
            return prerender_rate("switch-interval" if setting == "off" else setting, dataset,
                                  work / f"frames_{setting}_{index}", args.size)

        lines = []
        if args.only in (None, "prerender"):
            shipped, default = interleaved(args.rounds, render)
            print(f"pre-render frames/s ({args.size} px): shipped {[round(r, 1) for r in shipped]}, "
                  f"default switch interval {[round(r, 1) for r in default]}")
            lines += [f"BENCH settings.prerender_switch_interval_speedup "
                      f"{statistics.median(shipped) / statistics.median(default):.3f} x target >= 1.0",
                      f"BENCH settings.prerender_frames_per_s {statistics.median(shipped):.1f} frames/s target >= 0"]
        if args.only in (None, "train"):
            frames = work / "frames_train"
            prerender_rate("shipped", dataset, frames, args.size)

            def train(setting: str, index: int) -> float:
                return train_rate("allocator" if setting == "off" else setting, dataset, frames,
                                  work / f"run_{setting}_{index}")

            shipped, default = interleaved(args.rounds, train)
            print(f"training samples/s: shipped {[round(r, 1) for r in shipped]}, "
                  f"default malloc {[round(r, 1) for r in default]}")
            lines += [f"BENCH settings.train_allocator_speedup "
                      f"{statistics.median(shipped) / statistics.median(default):.3f} x target >= 1.0",
                      f"BENCH settings.train_samples_per_s {statistics.median(shipped):.1f} samples/s target >= 0"]
    print("\n".join(lines))

if __name__ == "__main__":
    main()
