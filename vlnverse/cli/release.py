"""``vlnverse release build``: the whole benchmark (corpus, episodes, statistics, card) by one command;
``vlnverse release augment``: new homes and training episodes for a track."""

from __future__ import annotations

import sys
from pathlib import Path

from vlnverse.cli.output import print_json, print_table


def register(subparsers) -> None:
    group = subparsers.add_parser("release", help="build the benchmark release (corpus + every task + card)")
    commands = group.add_subparsers(dest="release_command", metavar="COMMAND", required=True)
    build = commands.add_parser(
        "build", help="generate the 263-scene corpus, every task of Table 2, statistics, checksums and a card",
        description="Resumable: re-run the same command after an interruption. The same options give the "
                    "same bytes on any executor and worker count.")
    build.add_argument("--out", type=Path, required=True, help="release folder")
    build.add_argument("--track", default=None,
                       help="a named track's release (mini: VLNVerse-mini, the CPU track, 13 homes; full: the "
                            "paper's 263), checked against its published SHA256SUMS digest; sets --scale and --seed")
    build.add_argument("--scale", type=float, default=None,
                       help="share of the paper's 263 scenes (default 1; e.g. 0.05 for a quick look)")
    build.add_argument("--seed", type=int, default=None, help="corpus and dataset seed (default 0)")
    build.add_argument("--workers", type=int, default=1, help="worker processes or Ray tasks at once (default 1)")
    build.add_argument("--executor", choices=("local", "ray"), default="local", help="where scenes run")
    build.add_argument("--ray-address", default=None, help="Ray cluster address (default: a local Ray instance)")
    build.add_argument("--llm", default="none", help="none | openai:MODEL | hf:PATH | replay:FILE (default none)")
    build.add_argument("--per-scene", type=int, default=None,
                       help="coarse trajectories per scene (default 75, Table 2's; fewer for quick looks)")
    build.add_argument("--config", type=Path, default=None,
                       help="datagen YAML whose generation section to use (default datagen/paper_splits.yaml)")
    build.add_argument("--no-progress", action="store_true", help="no progress bar")
    build.add_argument("--json", action="store_true", help="print one JSON summary")
    build.set_defaults(handler=_build)
    augment = commands.add_parser(
        "augment", help="new procedural homes and their training episodes (and frames) for a track",
        description="Homes from a seed space no track uses (checked against the track's homes by layout), "
                    "train-split fine + coarse episodes with the track's generation settings, the oracle's frames "
                    "for `vlnverse train --augment`, a card and SHA256SUMS. Resumable; the same options give the "
                    "same bytes on any executor and worker count.")
    augment.add_argument("--track", required=True, help="the track the homes augment (mini, full)")
    augment.add_argument("--homes", type=int, required=True, help="number of new homes")
    augment.add_argument("--first", type=int, default=0,
                         help="index of the first home (default 0); sets with disjoint ranges share no home")
    augment.add_argument("--per-home", type=int, default=None,
                         help="coarse trajectories per home, fine a third of them (default: the track's, 75)")
    augment.add_argument("--out", type=Path, required=True, help="augmentation set folder")
    augment.add_argument("--no-frames", action="store_true", help="skip pre-rendering the oracle's frames")
    augment.add_argument("--rgb-size", type=int, default=64, help="frame RGB size (default 64, the cpu preset's)")
    augment.add_argument("--depth-size", type=int, default=64, help="frame depth size (default 64)")
    augment.add_argument("--max-steps", type=int, default=None, help="step cap of a frame episode (default: the track's)")
    augment.add_argument("--workers", type=int, default=1, help="worker processes or Ray tasks at once (default 1)")
    augment.add_argument("--executor", choices=("local", "ray"), default="local",
                         help="where homes and episodes run (frames run on local workers)")
    augment.add_argument("--ray-address", default=None, help="Ray cluster address (default: a local Ray instance)")
    augment.add_argument("--json", action="store_true", help="print one JSON summary")
    augment.set_defaults(handler=_augment)


def _build(args) -> int:
    from vlnverse.eval.tracks import check_release
    from vlnverse.release import ReleaseConfig, build_release

    track = _track(args)
    config = ReleaseConfig(out=str(args.out), scale=args.scale, seed=args.seed, workers=args.workers,
                           executor=args.executor, ray_address=args.ray_address, llm=args.llm,
                           per_scene=args.per_scene, generation_file=str(args.config) if args.config else None)
    if args.no_progress or args.json or not sys.stderr.isatty():
        summary = build_release(config)
    else:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), transient=True) as bar:
            tasks: dict[str, int] = {}

            def tick(stage: str, done: int, total: int) -> None:
                if stage not in tasks:
                    tasks[stage] = bar.add_task(stage, total=total)
                bar.update(tasks[stage], completed=done, total=total)

            summary = build_release(config, progress=tick)
    stages = summary.log.stages
    result = {"out": config.out, "episodes": summary.manifest["total_episodes"], "card": str(summary.card),
              "stages_s": {k: v["seconds"] for k, v in stages.items()},
              "peak_rss_mb": {w: summary.log.peak_mb(w) for w in summary.log.workers},
              "skipped_scenes": summary.skipped_scenes}
    check = check_release(track, Path(config.out)) if track is not None else None
    if check is not None:
        result["track"] = {"name": track.name, "reproduces": check[0], "message": check[1]}
    status = 0 if check is None or check[0] else 1
    if args.json:
        print_json(result)
        return status
    print_table(f"release {config.out}: {result['episodes']} episodes",
                ("stage", "seconds (this run)", "seconds (all runs)"),
                [(k, v["seconds"], v["total_seconds"]) for k, v in stages.items()])
    for scene, error in summary.skipped_scenes.items():
        print(f"skipped scene {scene}: {error}")
    print(f"card: {summary.card}")
    if check is not None:
        print(check[1], file=sys.stdout if check[0] else sys.stderr)
    return status


def _augment(args) -> int:
    from vlnverse.release.augment import AugmentConfig, build_augmentation

    config = AugmentConfig(track=args.track, out=str(args.out), homes=args.homes, first=args.first,
                           per_home=args.per_home, frames=not args.no_frames, rgb_size=args.rgb_size,
                           depth_size=args.depth_size, max_steps=args.max_steps, workers=args.workers,
                           executor=args.executor, ray_address=args.ray_address)
    summary = build_augmentation(config)
    stages = summary.log.stages
    facts = summary.facts
    if args.json:
        print_json({"out": config.out, "homes": facts["homes"], "episodes": facts["episodes"],
                    "frames": facts.get("frames", {}).get("count"), "card": str(summary.card),
                    "stages_s": {k: v["seconds"] for k, v in stages.items()}})
        return 0
    print_table(f"augmentation set {config.out}: {facts['homes']} homes, {sum(facts['episodes'].values())} episodes"
                + (f", {facts['frames']['count']} frames" if "frames" in facts else ""),
                ("stage", "seconds (this run)", "seconds (all runs)"),
                [(k, v["seconds"], v["total_seconds"]) for k, v in stages.items()])
    print(f"card: {summary.card}")
    return 0


def _track(args):
    """The ``--track`` named (None without one), with ``args.scale``/``args.seed`` set from it;
    options that would change a track's bytes are refused."""
    from vlnverse.errors import ConfigError
    from vlnverse.eval.tracks import get_track

    if args.track is None:
        args.scale = 1.0 if args.scale is None else args.scale
        args.seed = 0 if args.seed is None else args.seed
        return None
    track = get_track(args.track)
    for option, value, fixed in (("--scale", args.scale, track.scale), ("--seed", args.seed, track.seed)):
        if value is not None and value != fixed:
            raise ConfigError(f"--track {track.name} builds {option} {fixed:g}; drop {option} {value:g}")
    for option, value in (("--per-scene", args.per_scene), ("--config", args.config)):
        if value is not None:
            raise ConfigError(f"--track {track.name} fixes the generation settings; drop {option}")
    if args.llm != "none":
        raise ConfigError(f"--track {track.name} uses prior instructions; drop --llm")
    args.scale, args.seed = track.scale, track.seed
    return track


__all__ = ["register"]
