"""The scene-scaling curve of VLNVerse-mini: success rate against the homes a model trained on.

Usage::

    python tools/scaling_curve.py --png docs/images/mini_scaling.png --json scaling.json \\
        --reference random=EVAL/random "8=EVAL/cma_dagger" "32=EVAL/cma_aug24"

Each ``HOMES=FOLDER`` is an evaluation folder or a published ``.tar.gz`` bundle of one model
trained on ``HOMES`` homes; ``--reference NAME=FOLDER`` adds a flat line (random, the shipped
model). Success rate is pooled over fine + coarse episodes per split and physics mode, with the
95 % bootstrap interval of :func:`vlnverse.eval.scoring.pooled.pooled_groups` (``vlnverse eval table
--pooled`` prints the same figures); the endings are the share of each ``fail_reason``. Prints the table as
Markdown; the PNG has one panel per physics mode, homes on a log axis.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from vlnverse.eval.scoring.pooled import pooled_groups
from vlnverse.eval.verification.unpack import unpack_bundle
from vlnverse.fileio import atomic_open

SPLITS = ("val_unseen", "test")
PHYSICS = {"tel_hop": "Tel-Hop", "strict": "Strict"}


@contextlib.contextmanager
def evaluation_folder(source: Path) -> Iterator[Path]:
    """An evaluation folder as it is, or a ``.tar.gz`` bundle unpacked into a temporary one."""
    if source.is_dir():
        yield source
        return
    with tempfile.TemporaryDirectory() as tmp:
        unpack_bundle(source, Path(tmp) / "bundle")
        yield Path(tmp) / "bundle"


def read_records(source: Path) -> list[dict]:
    """The episode records of an evaluation folder or a ``.tar.gz`` bundle."""
    with evaluation_folder(source) as folder:
        return [json.loads(line) for line in (folder / "episodes.jsonl").read_text(encoding="utf-8").splitlines()]


def pooled(records: list[dict]) -> dict[str, dict]:
    """``"split/physics" -> {sr, low, high, n, endings}``, fine + coarse pooled, in %."""
    return {f"{group.split}/{group.physics}": {
        "sr": 100 * group.metrics["SR"].mean, "low": 100 * group.metrics["SR"].ci_low,
        "high": 100 * group.metrics["SR"].ci_high, "n": group.n,
        "endings": {name: 100 * share for name, share in group.endings.items()}} for group in pooled_groups(records)}


def markdown(points: dict[int, dict], references: dict[str, dict]) -> str:
    """One row per model and physics mode: SR [95 % CI] per split, and the endings on val_unseen."""
    lines = ["| training homes | physics | " + " | ".join(f"{s} SR %" for s in SPLITS)
             + " | val_unseen endings: stop / budget / collision % |", "|---" * (3 + len(SPLITS)) + "|"]
    rows = [(f"{homes}", result) for homes, result in sorted(points.items())]
    rows += [(name, result) for name, result in references.items()]
    for name, result in rows:
        for physics, title in PHYSICS.items():
            cells = []
            for split in SPLITS:
                cell = result.get(f"{split}/{physics}")
                cells.append("-" if cell is None else f"{cell['sr']:.1f} [{cell['low']:.1f}, {cell['high']:.1f}]")
            ends = result.get(f"val_unseen/{physics}", {}).get("endings", {})
            ending = " / ".join(f"{ends.get(k, 0):.0f}" for k in ("stop", "step_budget", "collision"))
            lines.append(f"| {name} | {title} | " + " | ".join(cells) + f" | {ending} |")
    return "\n".join(lines)


def draw(points: dict[int, dict], references: dict[str, dict], path: Path, title: str) -> None:
    """SR against training homes (log axis) with 95 % intervals: a panel per physics mode."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(10, 5))
    FigureCanvasAgg(figure)
    homes = sorted(points)
    for axis, (physics, physics_title) in zip(figure.subplots(1, 2, sharey=True), PHYSICS.items(), strict=True):
        for split, marker, colour in zip(SPLITS, ("o", "s"), ("C0", "C1"), strict=True):
            cells = [points[h][f"{split}/{physics}"] for h in homes]
            axis.errorbar(homes, [c["sr"] for c in cells], capsize=4, marker=marker, label=split, color=colour,
                          yerr=[[c["sr"] - c["low"] for c in cells], [c["high"] - c["sr"] for c in cells]])
            for (name, result), style in zip(references.items(), (":", "--", "-."), strict=False):
                cell = result.get(f"{split}/{physics}")
                if cell is not None:
                    axis.axhline(cell["sr"], linestyle=style, color=colour, linewidth=1,
                                 label=f"{name} ({split})")
        axis.set_xscale("log")
        axis.minorticks_off()
        axis.set_xticks(homes, [str(h) for h in homes])
        axis.set_xlim(homes[0] / 1.3, homes[-1] * 1.3)
        axis.set_xlabel("training homes (log scale)")
        axis.set_title(f"{title}, {physics_title}")
        axis.grid(alpha=0.3)
    figure.axes[0].set_ylabel("SR % (fine + coarse, 95 % CI)")
    figure.legend(*figure.axes[0].get_legend_handles_labels(), loc="lower center", ncol=3, fontsize=8)
    figure.tight_layout(rect=(0, 0.14, 1, 1))
    with atomic_open(path, "wb") as handle:
        figure.savefig(handle, format="png", dpi=90)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("points", nargs="+", help="HOMES=FOLDER (an evaluation folder or a .tar.gz bundle)")
    parser.add_argument("--reference", action="append", default=[], metavar="NAME=FOLDER", help="a flat reference line")
    parser.add_argument("--png", type=Path, help="write the curve here")
    parser.add_argument("--json", type=Path, help="write the pooled figures here")
    parser.add_argument("--title", default="CMA on VLNVerse-mini", help="the picture's title")
    args = parser.parse_args(argv)
    points = {int(homes): pooled(read_records(Path(folder)))
              for homes, _, folder in (spec.partition("=") for spec in args.points)}
    references = {name: pooled(read_records(Path(folder)))
                  for name, _, folder in (spec.partition("=") for spec in args.reference)}
    print(markdown(points, references))
    if args.png:
        draw(points, references, args.png, args.title)
    if args.json:
        with atomic_open(args.json, "w") as handle:
            json.dump({"points": points, "references": references}, handle, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
