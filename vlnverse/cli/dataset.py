"""``vlnverse dataset …``: export to / import from VLN-CE and the VLNVerse release; stats."""

from __future__ import annotations

import argparse
from pathlib import Path

from vlnverse.cli.output import print_json, print_table


def register(subparsers) -> None:
    parser = subparsers.add_parser("dataset", help="export, import and summarize episode datasets")
    sub = parser.add_subparsers(dest="dataset_command", metavar="SUBCOMMAND")
    parser.set_defaults(handler=lambda args: parser.print_help() or 2)

    export = sub.add_parser("export", help="write a dataset in the VLN-CE or the public VLNVerse format")
    export.add_argument("dataset", type=Path, help="dataset folder (manifest.json) or .jsonl(.gz) file")
    export.add_argument("--format", required=True, choices=("vlnce", "vlnverse"))
    export.add_argument("--out", required=True, type=Path, help="output folder")
    export.add_argument("--task", default=None,
                        help="task to export (required for vlnce when the dataset holds several; default all)")
    export.add_argument("--split", default=None, help="only this split")
    export.add_argument("--withhold-test-paths", action="store_true",
                        help="vlnverse format: drop test reference paths (and EQA answers), as the official test split")
    export.add_argument("--json", action="store_true", help="print one JSON object")
    export.set_defaults(handler=_export)

    imp = sub.add_parser("import", help="read a VLN-CE or VLNVerse-release dataset into our format")
    imp.add_argument("path", type=Path, help="VLN-CE folder ({split}/{split}.json.gz) or release folder (final_splits/)")
    imp.add_argument("--format", required=True, choices=("vlnce", "vlnverse"))
    imp.add_argument("--scenes", required=True, type=Path, help="scene folder the episodes' scene paths refer to")
    imp.add_argument("--out", required=True, type=Path, help="dataset folder to write")
    imp.add_argument("--task", default="fine", help="task of VLN-CE episodes (default fine)")
    imp.add_argument("--json", action="store_true", help="print one JSON object")
    imp.set_defaults(handler=_import)

    stats = sub.add_parser("stats", help="counts (Table 2 shape), per-task path length, steps and instruction "
                                         "length distributions (Figs. 2-3), vocabulary")
    stats.add_argument("dataset", type=Path, help="dataset folder or .jsonl(.gz) file")
    stats.add_argument("--report", type=Path, default=None, help="also write report.md + PNGs to this folder")
    stats.add_argument("--verify", action="store_true",
                       help="check every file the dataset's readers read: checksums, manifest.json's counts and "
                            "totals, the per-scene records shards/*.json (exit 1 on any problem)")
    stats.add_argument("--json", action="store_true", help="print one JSON object")
    stats.set_defaults(handler=_stats)

    pre = sub.add_parser("prerender", help="render observations along the oracle's actions (offline training data)",
                         description="Render RGB/depth (and optionally semantic) frames along the oracle's actions "
                                     "of a split into chunked shards. Re-running resumes.")
    pre.add_argument("dataset", type=Path, help="dataset folder")
    pre.add_argument("--out", required=True, type=Path, help="frames folder")
    pre.add_argument("--split", default="train", help="split (default: train)")
    pre.add_argument("--task", default=None, help="only this task (default: every task of the split)")
    pre.add_argument("--rgb-size", type=int, default=224, help="RGB resolution (default: 224)")
    pre.add_argument("--depth-size", type=int, default=256, help="depth resolution (default: 256)")
    pre.add_argument("--semantic", action="store_true", help="also store instance segmentation")
    pre.add_argument("--physics", default="tel_hop", help="physics the oracle walks under (default: tel_hop)")
    pre.add_argument("--max-steps", type=int, default=200, help="step cap per episode (default: 200)")
    pre.add_argument("--chunk-frames", type=int, default=256, help="frames per chunk file (default: 256)")
    pre.add_argument("--compress", action=argparse.BooleanOptionalAction, default=True,
                     help="zlib-compressed .npz chunks (default), a quarter of the bytes but decompressed when "
                          "training reads them; --no-compress: raw .npy chunks, memory-mapped")
    pre.add_argument("--compress-level", type=int, default=1, help="zlib level 1-9 of .npz chunks (default: 1)")
    pre.add_argument("--workers", type=int, default=1, help="scene-parallel processes (default: 1)")
    pre.add_argument("--renderer", choices=("auto", "gl", "tiny"), default="auto",
                     help="camera renderer of the embedded backend (default: auto)")
    pre.add_argument("--json", action="store_true", help="print one JSON object")
    pre.set_defaults(handler=_prerender)


def _select(args):
    from vlnverse.tasks.dataset import EpisodeDataset

    dataset = EpisodeDataset.open(args.dataset)
    return dataset, dataset.episodes(split=args.split, task=args.task)


def _export(args) -> int:
    from vlnverse.tasks.formats import export_episodes

    _, episodes = _select(args)
    options = {"withhold_test_paths": True} if args.withhold_test_paths and args.format == "vlnverse" else {}
    files = export_episodes(episodes, args.format, args.out, **options)
    result = {"format": args.format, "episodes": len(episodes), "files": [str(f) for f in files]}
    if args.json:
        print_json(result)
    else:
        print_table(f"exported {len(episodes)} episodes ({args.format})", ("file",), [(str(f),) for f in files])
    return 0


def _import(args) -> int:
    from vlnverse.errors import DatasetError
    from vlnverse.tasks.formats import import_episodes
    from vlnverse.tasks.storage import write_dataset

    if not args.scenes.is_dir():
        raise DatasetError(f"scene folder {args.scenes} does not exist")
    episodes = import_episodes(args.path, args.format, task=args.task)
    missing = sorted({e.scene_path for e in episodes if not (args.scenes / e.scene_path).is_file()})
    manifest = write_dataset(args.out, episodes, extra={"scenes_dir": str(args.scenes.resolve()),
                                                        "imported_from": {"format": args.format, "path": str(args.path)},
                                                        "missing_scenes": missing})
    result = {"out": str(args.out), "episodes": manifest["total_episodes"], "splits": manifest["splits"],
              "missing_scenes": missing}
    if args.json:
        print_json(result)
        return 0
    rows = [(s, t, v["episodes"], v["scenes"]) for s, tasks in manifest["splits"].items() for t, v in tasks.items()]
    print_table(f"imported {manifest['total_episodes']} episodes → {args.out}", ("split", "task", "episodes", "scenes"), rows)
    if missing:
        print(f"warning: {len(missing)} scene file(s) not found under {args.scenes}, e.g. {missing[0]}")
    return 0


def _stats(args) -> int:
    from vlnverse.errors import DatasetError
    from vlnverse.tasks.dataset import EpisodeDataset
    from vlnverse.tasks.report import TASK_LABELS, dataset_stats, write_report
    from vlnverse.tasks.verify import verify_dataset_folder

    dataset = EpisodeDataset.open(args.dataset)
    if args.verify:  # a damaged file is listed, the others still counted
        if not dataset.manifest:
            raise DatasetError("--verify needs a dataset folder with a manifest")
        verified = verify_dataset_folder(dataset.root, dataset.manifest)
        episodes = verified.episodes
    else:
        episodes = dataset.all_episodes()
    stats = dataset_stats(episodes)
    if args.verify:
        stats["corrupt_files"], stats["problems"] = verified.corrupt_files, verified.problems
    if args.report is not None:
        write_report(episodes, args.report, title=f"VLNVerse dataset {dataset.root.name}")
    if args.json:
        print_json(stats)
    else:
        splits = ("train", "val_seen", "val_unseen", "test")
        rows = [(TASK_LABELS[t], *[f"{row[s]['episodes']} ({row[s]['scenes']})" if s in row else "0" for s in splits])
                for t, row in stats["counts"].items()]
        print_table(f"{stats['episodes']} episodes", ("task", *splits), rows)
        print_table("instruction length (words)", ("group", "mean", "min", "max"),
                    [(k, v["mean"], v["min"], v["max"]) for k, v in stats["instruction_length"].items()])
        print_table("per task (mean / median / p90; human TL in Table 3: fine 12.13 m, coarse 10.23 m)",
                    ("task", "path length (m)", "expert steps", "instruction words"),
                    [(TASK_LABELS[t], *[_dist(row.get(m)) for m in ("path_length", "steps", "instruction_words")])
                     for t, row in stats["per_task"].items()])
        if "eqa" in stats:
            eqa = stats["eqa"]
            print_table(f"EQA: {eqa['questions']} questions (always guessing one position: at most "
                        f"{100 * eqa['max_position_share']:.1f} %)", ("", *eqa["question_kinds"], *eqa["answer_positions"]),
                        [("questions", *eqa["question_kinds"].values(), *eqa["answer_positions"].values())])
        if args.verify:
            print("checksums: " + ("ok" if not stats["corrupt_files"] else f"{len(stats['corrupt_files'])} bad "
                                   "(left out of the counts above): " + ", ".join(stats["corrupt_files"][:5])))
            print("manifest and records: " + ("ok" if not stats["problems"] else f"{len(stats['problems'])} problem(s)"))
            for problem in stats["problems"]:
                print(f"  - {problem}")
    return 1 if args.verify and (stats["corrupt_files"] or stats["problems"]) else 0


def _dist(summary) -> str:
    return "-" if not summary else f"{summary['mean']} / {summary['median']} / {summary['p90']}"


def _prerender(args) -> int:
    from vlnverse.learning.prerender import PrerenderConfig, prerender

    config = PrerenderConfig(dataset=str(args.dataset), out=str(args.out), split=args.split, task=args.task,
                             rgb_size=args.rgb_size, depth_size=args.depth_size, semantic=args.semantic,
                             physics=args.physics, max_steps=args.max_steps, chunk_frames=args.chunk_frames,
                             compress=args.compress, compress_level=args.compress_level,
                             workers=args.workers, renderer=args.renderer)
    summary = prerender(config).to_dict()
    if args.json:
        print_json(summary)
    else:
        print_table(f"pre-rendered {args.split} → {args.out}", ("scenes", "episodes", "frames", "MiB", "frames/s"),
                    [(summary["scenes"], summary["episodes"], summary["frames"], round(summary["bytes"] / 2**20, 2),
                      summary["frames_per_second"])])
    return 0
