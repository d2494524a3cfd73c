"""``vlnverse datagen``: headless, resumable dataset generation (paper §3.3.2)."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from vlnverse.cli.output import print_json, print_table
from vlnverse.errors import ConfigError
from vlnverse.tasks.episode import SPLITS
from vlnverse.tasks.registry import task_families


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "datagen", help="generate a dataset of all task types from a scene corpus (resumable, parallel)",
        description="Sample paths, write instructions (prior templates, optionally refined by an LLM "
                    "Describer/Verifier/Synthesizer) and store episodes. Re-running the same command "
                    "resumes an interrupted run.",
        epilog="What --per-scene N makes in each scene: N coarse-grained paths, each also a visual-reference and "
               "a dialogue episode (same path and split, so an agent that ignores the goal picture and never asks "
               "scores the same on the three tasks); N/3 fine-grained paths, rounded; N long-horizon chains. "
               "Scenes go whole to train, val_unseen or test; a train scene holds out about 1 path in 10 of each "
               "kind as val_seen, rounded at random, so with a small N a task may have no val_seen episode. "
               "docs/datasets.md has the table.")
    parser.add_argument("--config", type=Path, default=None,
                        help="pipeline config (YAML, see datagen/); command-line options override it")
    parser.add_argument("--scenes", type=Path, default=None, help="scene corpus folder")
    parser.add_argument("--out", type=Path, default=None, help="dataset folder")
    parser.add_argument("--tasks", default=None,
                        help=f"comma-separated: {','.join(f.name for f in task_families())} "
                             "(default: the five VLN tasks)")
    parser.add_argument("--per-scene", type=int, default=None, help="coarse trajectories per scene (default 30)")
    parser.add_argument("--seed", type=int, default=None, help="dataset seed (default 0)")
    parser.add_argument("--llm", default=None, help="none | openai:MODEL | hf:PATH | replay:FILE (default none)")
    parser.add_argument("--llm-cache", default=None, help="LLM response cache folder (default OUT/llm_cache; 'none')")
    parser.add_argument("--render", action="store_true", default=None,
                        help="render visual-reference images (and Describer frames) with the simulator")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default 1)")
    parser.add_argument("--overwrite", action="store_true", help="replace a dataset made with another config")
    parser.add_argument("--no-report", action="store_true", help="skip the report (Markdown + PNG)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--json", action="store_true", help="print one JSON summary")
    parser.set_defaults(handler=_run)


def build_config(args):
    """The :class:`DatagenConfig` of the command line (config file + overrides)."""
    from vlnverse.tasks.datagen import DatagenConfig

    generation_changes = {}
    if args.tasks is not None:
        generation_changes["tasks"] = tuple(t.strip() for t in args.tasks.split(",") if t.strip())
    if args.per_scene is not None:
        generation_changes["per_scene"] = args.per_scene
    if args.render:
        generation_changes["render"] = True
    top = {"seed": args.seed, "llm": args.llm, "llm_cache": args.llm_cache, "workers": args.workers,
           "scenes": str(args.scenes) if args.scenes else None, "out": str(args.out) if args.out else None}
    if args.config is not None:
        config = DatagenConfig.from_file(args.config, **top)
    else:
        if args.scenes is None or args.out is None:
            raise ConfigError("give --scenes and --out (or --config FILE)")
        config = DatagenConfig(**{k: v for k, v in top.items() if v is not None})
    if generation_changes:
        config = dataclasses.replace(config, generation=dataclasses.replace(config.generation, **generation_changes))
    return config


def _run(args) -> int:
    from vlnverse.tasks.datagen import run_datagen

    config = build_config(args)
    show = not (args.no_progress or args.json)
    if show:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        progress = Progress(TextColumn("[bold]datagen"), BarColumn(), MofNCompleteColumn(), TextColumn("scenes"),
                            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                            TextColumn("{task.fields[episodes]} episodes"))
        task = progress.add_task("scenes", total=None, episodes=0)
        totals = {"episodes": 0}

        def on_start(todo: int, done: int) -> None:
            progress.update(task, total=todo)

        def on_scene(outcome) -> None:
            totals["episodes"] += outcome.episodes
            progress.update(task, advance=1, episodes=totals["episodes"])
            if outcome.status == "skipped":
                progress.console.print(f"[yellow]skipped[/] {outcome.scene_id}: {outcome.error}")

        with progress:
            summary = run_datagen(config, overwrite=args.overwrite, progress=on_scene, on_start=on_start)
    else:
        summary = run_datagen(config, overwrite=args.overwrite)
    usage = summary.usage.to_dict()
    report_dir = None
    if not args.no_report:
        report_dir = _report(config, summary, usage)
    generated = sum(1 for o in summary.outcomes if o.status == "generated")
    resumed = sum(1 for o in summary.outcomes if o.status == "resumed")
    result = {"out": config.out, "episodes": summary.manifest["total_episodes"], "splits": summary.manifest["splits"],
              "scenes_generated": generated, "scenes_resumed": resumed,
              "skipped_scenes": summary.manifest["skipped_scenes"], "llm_usage": usage if config.llm != "none" else None,
              "shortfall": summary.manifest["shortfall"], "fallbacks": summary.manifest["fallbacks"],
              "seconds": round(summary.seconds, 3), "report": str(report_dir) if report_dir else None}
    if args.json:
        print_json(result)
        return _exit_code(result)
    from vlnverse.tasks.report import TASK_LABELS

    rows = [(TASK_LABELS[t], *[_cell(summary.manifest["splits"], s, t) for s in SPLITS])
            for t in config.generation.tasks]
    print_table(f"{result['episodes']} episodes → {config.out} ({generated} scenes generated, {resumed} resumed)",
                ("task", *(f"{split} episodes" for split in SPLITS)), rows)
    for scene_id, error in summary.manifest["skipped_scenes"].items():
        print(f"skipped scene {scene_id}: {error}")
    for scene_id, short in summary.manifest["shortfall"].items():
        print(f"scene {scene_id}: fewer trajectories than asked ({', '.join(f'{k} {v} short' for k, v in short.items())})")
    if config.llm != "none":
        cost = "unknown" if usage["cost_usd"] is None else f"${usage['cost_usd']:.4f}"
        print(f"LLM: {usage['calls']} server calls, {usage['cached_calls']} answered from the cache, "
              f"{usage['prompt_tokens']} prompt + {usage['completion_tokens']} completion tokens, cost {cost}; "
              f"{result['fallbacks']} instruction(s) kept the prior text (reasons in their provenance)")
    if report_dir:
        print(f"report: {report_dir / 'report.md'}")
    return _exit_code(result)


def _exit_code(result: dict) -> int:
    """1 (with a warning) when the run made no episode at all, else 0."""
    if result["episodes"]:
        return 0
    print(f"warning: no episodes were generated in {result['out']} (see the skipped scenes and shortfalls)",
          file=sys.stderr)
    return 1


def _cell(splits: dict, split: str, task: str) -> str:
    entry = splits.get(split, {}).get(task)
    if not entry:
        return "0"
    return f"{entry['episodes']} in {entry['scenes']} scene{'' if entry['scenes'] == 1 else 's'}"


def _report(config, summary, usage) -> Path:
    from vlnverse.redact import redact
    from vlnverse.tasks.dataset import EpisodeDataset
    from vlnverse.tasks.report import write_report

    out = Path(config.out) / "report"
    lines = [f"- scenes: {len(summary.outcomes)} ({len(summary.skipped)} skipped)", f"- seed: {config.seed}",
             f"- llm: {redact(config.llm)}"]
    lines += [f"- skipped {o.scene_id}: {o.error}" for o in summary.skipped]
    if config.llm != "none":
        lines.append(f"- LLM usage (this run): {usage}")
    episodes = EpisodeDataset.open(config.out).stream() if summary.manifest["total_episodes"] else []
    write_report(episodes, out, title=f"VLNVerse dataset {Path(config.out).name}", extra_lines=lines)
    return out


__all__ = ["register", "build_config"]
