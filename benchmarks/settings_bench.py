"""Process settings A/B through the CLI: what the training allocator buys when a user runs the command.

The training allocator setting (``vlnverse.learning.allocator``) is made only in processes vlnverse
owns; this measures it through the command a user runs, as a user runs it, against the same
command with glibc's default ``malloc`` thresholds: its processes start with a ``sitecustomize``
module on ``PYTHONPATH`` that switches the setting off, so the training ranks the command spawns
run without it too. Rounds are interleaved A, B, A, B ... in fresh processes on the same frames;
figures are medians. (The pre-render's lowered switch interval was measured the same way, bought
nothing, 0.96-1.01x at 64 and 128 px, and was removed.)

Figures (``BENCH <name> <value> <unit> target <op> <value>``):

- ``settings.train_allocator_speedup``: samples/s of one ``vlnverse train cma --preset cpu``
  epoch (the preset's training processes) over the same epoch with glibc's defaults;
  ``settings.train_samples_per_s`` its rate.

Run it with the machine to itself (about 2 minutes on 2 cores).
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


def prerender(dataset: Path, out: Path) -> None:
    cli_json("shipped", out.parent, "dataset", "prerender", str(dataset), "--split", "train", "--rgb-size", "64",
             "--depth-size", "64", "--out", str(out))


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
        frames = work / "frames"
        prerender(dataset, frames)

        def train(setting: str, index: int) -> float:
            return train_rate("allocator" if setting == "off" else setting, dataset, frames,
                              work / f"run_{setting}_{index}")

        shipped, default = interleaved(args.rounds, train)
    print(f"training samples/s: shipped {[round(r, 1) for r in shipped]}, "
          f"default malloc {[round(r, 1) for r in default]}")
    print(f"BENCH settings.train_allocator_speedup {statistics.median(shipped) / statistics.median(default):.3f} x "
          "target >= 1.0")
    print(f"BENCH settings.train_samples_per_s {statistics.median(shipped):.1f} samples/s target >= 0")

if __name__ == "__main__":
    main()
