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


def prerender_rate(setting: str, dataset: Path, out: Path) -> float:
    summary = cli_json(setting, out.parent, "dataset", "prerender", str(dataset), "--split", "train", "--rgb-size",
                       "64", "--depth-size", "64", "--out", str(out))
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
                                  work / f"frames_{setting}_{index}")

        frames_shipped, frames_default = interleaved(args.rounds, render)
        frames = work / "frames_shipped_0"

        def train(setting: str, index: int) -> float:
            return train_rate("allocator" if setting == "off" else setting, dataset, frames,
                              work / f"run_{setting}_{index}")

        samples_shipped, samples_default = interleaved(args.rounds, train)
    print(f"pre-render frames/s: shipped {[round(r, 1) for r in frames_shipped]}, "
          f"default switch interval {[round(r, 1) for r in frames_default]}")
    print(f"training samples/s: shipped {[round(r, 1) for r in samples_shipped]}, "
          f"default malloc {[round(r, 1) for r in samples_default]}")
    speedup = statistics.median(frames_shipped) / statistics.median(frames_default)
    allocator = statistics.median(samples_shipped) / statistics.median(samples_default)
    print(f"BENCH settings.prerender_switch_interval_speedup {speedup:.3f} x target >= 1.0")
    print(f"BENCH settings.prerender_frames_per_s {statistics.median(frames_shipped):.1f} frames/s target >= 0")
    print(f"BENCH settings.train_allocator_speedup {allocator:.3f} x target >= 1.0")
    print(f"BENCH settings.train_samples_per_s {statistics.median(samples_shipped):.1f} samples/s target >= 0")


if __name__ == "__main__":
    main()
