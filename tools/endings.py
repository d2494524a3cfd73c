"""Where a model's episodes end: successes, and failures by how they ended and how close they came.

Usage::

    python tools/endings.py "shipped CMA + DAgger=assets/tracks/mini/results/cma_dagger.tar.gz" \\
        "fine-tuned encoders=EVAL/cma_aug120_encft4" [--split val_unseen,test] [--json endings.json]

Each ``NAME=SOURCE`` is an evaluation folder or a published ``.tar.gz`` bundle. For every split and
physics mode, each episode falls in one row (share of the episodes, fine + coarse pooled):

- ``success``: STOP within the success distance ``d`` (the run's, 3 m on the CPU track);
- ``stopped after passing the goal``: a STOP elsewhere, after a pose within ``d`` of the goal
  (the oracle success SR missed: OSR − SR);
- ``stopped near``: a STOP beyond ``d``, having come within ``d`` + 1.5 m but never within ``d``;
- ``stopped far``: a STOP beyond ``d`` that never came within ``d`` + 1.5 m (lost the route);
- ``step budget, passed the goal`` / ``step budget, never there``: no STOP before the step cap,
  having or never having been within ``d`` (a model that gets there and never stops);
- ``collision``: ended by a collision (Strict); ``error``: the episode errored.

The closest approach is the geodesic distance to the final goal at every recorded pose.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scaling_curve import evaluation_folder, read_records  # noqa: E402

#: How much beyond the success distance still counts as near.
NEAR_MARGIN_M = 1.5
ROWS = ("success", "stopped after passing the goal", "stopped near", "stopped far",
        "step budget, passed the goal", "step budget, never there", "collision", "error")


def ending(record: dict, success_distance: float) -> str:
    """The row of one episode record."""
    if record.get("error") or not record.get("metrics"):
        return "error"
    if record["metrics"]["SR"]:
        return "success"
    distances = [d for d in record["goal_distances"][-1] if d is not None]
    closest = min(distances, default=float("inf"))
    passed = closest < success_distance
    reason = record["fail_reason"]
    if reason == "collision":
        return "collision"
    if reason == "step_budget":
        return "step budget, passed the goal" if passed else "step budget, never there"
    if passed:
        return "stopped after passing the goal"
    return "stopped near" if closest < success_distance + NEAR_MARGIN_M else "stopped far"


def endings(source: Path, splits: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """``{"SPLIT/PHYSICS": {row: percent of the episodes, "n": count}}`` of one evaluation, at
    the success distance it ran with (its ``run.json``)."""
    with evaluation_folder(source) as folder:
        run = json.loads((folder / "run.json").read_text(encoding="utf-8"))
        distance = float(run["fingerprint"]["success_distance"])
        records = read_records(folder)
    groups: dict[str, Counter] = defaultdict(Counter)
    for record in records:
        if record["split"] in splits:
            groups[f"{record['split']}/{record['physics']}"][ending(record, distance)] += 1
    return {key: {**{row: 100.0 * counts[row] / sum(counts.values()) for row in ROWS}, "n": sum(counts.values())}
            for key, counts in sorted(groups.items())}


def markdown(results: dict[str, dict[str, dict[str, float]]]) -> str:
    """One table per split and physics mode, a column per model."""
    names = list(results)
    keys = sorted({key for result in results.values() for key in result})
    blocks = []
    for key in keys:
        counts = ", ".join(f"{results[name].get(key, {}).get('n', 0)}" for name in names)
        lines = [f"**{key}** (episodes: {counts})", "", "| ending | " + " | ".join(names) + " |",
                 "|---|" + "---|" * len(names)]
        for row in ROWS:
            cells = [f"{results[name][key][row]:.1f} %" if key in results[name] else "-" for name in names]
            lines.append(f"| {row} | " + " | ".join(cells) + " |")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", metavar="NAME=SOURCE", help="an evaluation folder or bundle")
    parser.add_argument("--split", default="val_unseen,test", help="splits (default: val_unseen,test)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    splits = tuple(s.strip() for s in args.split.split(",") if s.strip())
    results = {}
    for model in args.models:
        name, _, source = model.partition("=")
        if not source:
            parser.error(f"{model!r}: expected NAME=SOURCE")
        results[name] = endings(Path(source), splits)
    print(markdown(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
