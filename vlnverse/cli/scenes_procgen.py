"""``vlnverse scenes generate|validate|stats``: procedural scene corpora.

The ``scenes`` group itself lives in :mod:`vlnverse.cli.scenes`, which calls
:func:`register_scene_commands` with its sub-parsers.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from vlnverse.cli.output import print_json, print_table
from vlnverse.errors import ConfigError


def _rooms_range(text: str) -> tuple[int, int]:
    parts = text.split("-")
    try:
        lo, hi = (int(parts[0]), int(parts[-1])) if len(parts) in (1, 2) else (None, None)
    except ValueError:
        lo = hi = None
    if lo is None:
        raise argparse.ArgumentTypeError(f"expected MIN-MAX (e.g. 3-12), got {text!r}")
    return lo, hi


def register_scene_commands(scenes_subparsers) -> None:
    """Add ``generate``, ``validate`` and ``stats`` to the ``scenes`` sub-parsers."""
    gen = scenes_subparsers.add_parser("generate", help="generate a corpus of procedural homes (resumable)")
    gen.add_argument("--out", type=Path, required=True, help="output folder")
    gen.add_argument("--count", type=int, required=True, help="number of scenes")
    gen.add_argument("--seed", type=int, default=0, help="corpus seed (default 0)")
    gen.add_argument("--rooms", type=_rooms_range, default=(4, 12), help="room count range MIN-MAX (default 4-12; 3 allowed)")
    gen.add_argument("--format", choices=("usdc", "usda"), default="usdc", help="file format (default usdc)")
    gen.add_argument("--workers", type=int, default=1, help="processes (default 1)")
    gen.add_argument("--agent-radius", type=float, default=0.30, help="agent radius for reachability (m)")
    gen.add_argument("--validate", action="store_true", help="also validate each new scene")
    gen.add_argument("--no-progress", action="store_true", help="no progress bar")
    gen.add_argument("--json", action="store_true", help="print the summary as JSON")
    gen.set_defaults(handler=_generate)

    val = scenes_subparsers.add_parser("validate", help="asset validator + reachability checks; exit 1 on errors")
    val.add_argument("paths", type=Path, nargs="+", help="scene files or corpus folders")
    val.add_argument("--agent-radius", type=float, default=0.30, help="agent radius (m)")
    val.add_argument("--min-room-area", type=float, default=0.5, help="smallest navigable area per room (m²)")
    val.add_argument("--no-asset-validator", action="store_true", help="only run our own checks")
    val.add_argument("--json", action="store_true", help="print one JSON object")
    val.set_defaults(handler=_validate)

    st = scenes_subparsers.add_parser("stats", help="corpus statistics (Fig. 2-style plots + table)")
    st.add_argument("folder", type=Path, help="corpus folder")
    st.add_argument("--out", type=Path, default=None, help="where stats.json/stats.png go (default: folder)")
    st.add_argument("--json", action="store_true", help="print one JSON object")
    st.set_defaults(handler=_stats)


def _generate(args) -> int:
    from vlnverse.scene.procgen.corpus import CorpusOptions, generate_corpus
    from vlnverse.scene.procgen.house import HouseOptions

    if args.count < 1:
        raise ConfigError(f"--count must be >= 1, got {args.count}")
    if args.workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {args.workers}")
    house = HouseOptions(min_rooms=args.rooms[0], max_rooms=args.rooms[1], agent_radius=args.agent_radius)
    options = CorpusOptions(count=args.count, seed=args.seed, house=house, file_format=args.format,
                            validate=args.validate)
    failures: list[str] = []

    def record(meta: dict) -> None:
        if args.validate and not meta.get("validation", {}).get("ok", True):
            failures.append(meta["scene_id"])

    if args.no_progress or args.json or not sys.stderr.isatty():
        summary = generate_corpus(args.out, options, workers=args.workers,
                                  on_scene=lambda meta, skipped: record(meta))
    else:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        columns = (TextColumn("generating"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
        with Progress(*columns, transient=True) as progress:
            task = progress.add_task("scenes", total=args.count)

            def tick(meta: dict, skipped: bool) -> None:
                record(meta)
                progress.advance(task)

            summary = generate_corpus(args.out, options, workers=args.workers, on_scene=tick)
    summary["validation_failures"] = failures
    if args.json:
        print_json(summary)
    else:
        print_table("procedural corpus", ("out", "count", "generated", "skipped", "train", "val_unseen", "test"),
                    [(summary["out"], summary["count"], summary["generated"], summary["skipped"],
                      summary["splits"]["train"], summary["splits"]["val_unseen"], summary["splits"]["test"])])
        if failures:
            print(f"{len(failures)} scene(s) failed validation: {', '.join(failures)}")
    return 1 if failures else 0


def _scene_files(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for ext in ("usd", "usda", "usdc", "usdz") for p in path.glob(f"**/*.{ext}"))
            if not found:
                raise ConfigError(f"no USD files under {path}")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise ConfigError(f"no such file or folder: {path}")
    return files


def _validate(args) -> int:
    from vlnverse.scene.procgen.validation import validate_scene

    if args.agent_radius <= 0:
        raise ConfigError(f"--agent-radius must be positive, got {args.agent_radius}")
    reports = [validate_scene(p, asset_validator=not args.no_asset_validator, agent_radius=args.agent_radius,
                              min_room_navigable=args.min_room_area) for p in _scene_files(args.paths)]
    ok = all(r.ok for r in reports)
    if args.json:
        print_json({"ok": ok, "scenes": [r.to_dict() for r in reports]})
    else:
        names = _short_names([r.path for r in reports])
        rows = [(names[r.path], "ok" if r.ok else "FAIL", len(r.errors), len(r.warnings),
                 r.facts.get("num_rooms", ""), r.facts.get("num_objects", ""),
                 r.facts.get("navigable_area_m2", "")) for r in reports]
        print_table(f"scene validation ({_common_folder([r.path for r in reports])})", ("scene", "result", "errors", "warnings", "rooms", "objects",
                                         "navigable m²"), rows)
        for r in reports:
            for f in r.errors:
                print(f"{r.path}: {f.source}/{f.rule}: {f.message}" + (f" [{f.at}]" if f.at else ""))
    return 0 if ok else 1


def _common_folder(paths: list[str]) -> str:
    return os.path.commonpath([os.path.dirname(os.path.abspath(p)) for p in paths]) if paths else "."


def _short_names(paths: list[str]) -> dict[str, str]:
    """Each path relative to the folder all of them share (what tells them apart)."""
    root = _common_folder(paths)
    return {p: os.path.relpath(os.path.abspath(p), root) for p in paths}


def _stats(args) -> int:
    from vlnverse.scene.procgen.stats import write_stats

    stats = write_stats(args.folder, args.out)
    if args.json:
        print_json(stats)
        return 0
    rows = [(key, stats[key]["mean"], stats[key]["std"], stats[key]["min"], stats[key]["max"])
            for key in ("navigable_area_m2", "num_rooms", "num_objects", "num_on_relations")]
    print_table(f"corpus statistics ({stats['num_scenes']} scenes)", ("measure", "mean", "std", "min", "max"), rows)
    print(f"distinct floor-plan graphs: {stats['distinct_floorplan_graphs']}; categories: "
          f"{stats['num_categories']}; area/rooms correlation: {stats['area_room_correlation']}; "
          f"plot: {stats['plot']}")
    return 0
