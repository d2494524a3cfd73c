"""``vlnverse eval``: evaluate an agent on a dataset under Strict and Tel-Hop physics."""

from __future__ import annotations

import argparse
from pathlib import Path

from vlnverse.cli.output import print_json
from vlnverse.errors import ConfigError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "eval", help="evaluate an agent on a dataset (per-episode JSONL, Tables 5/6, plots, HTML index)",
        description="Run an agent over a dataset's episodes under each physics mode. Re-running the "
                    "same command continues where it stopped.")
    parser.add_argument("--dataset", required=True, type=Path, help="dataset folder (or one .jsonl(.gz) file)")
    parser.add_argument("--split", default="all", help="split name or 'all' (default: all)")
    parser.add_argument("--task", default="all", help="task name or 'all' (default: all)")
    parser.add_argument("--agent", required=True,
                        help="agent name (random, forward, oracle, replay, ...) or module:attr")
    parser.add_argument("--agent-config", type=Path, default=None, help="agent settings (YAML or JSON)")
    parser.add_argument("--physics", default="strict,tel_hop", type=_modes,
                        help="comma-separated physics modes (default: strict,tel_hop)")
    parser.add_argument("--episodes", type=int, default=None, help="evaluate a seeded sample of N episodes")
    parser.add_argument("--workers", type=int, default=1, help="parallel workers (default: 1)")
    parser.add_argument("--executor", choices=("local", "ray"), default="local",
                        help="local process pool or a Ray cluster (needs the 'ray' extra)")
    parser.add_argument("--ray-address", default=None,
                        help="Ray cluster address (default: start a local Ray instance)")
    parser.add_argument("--out", required=True, type=Path, help="output folder")
    parser.add_argument("--seed", type=int, default=0, help="run seed (default: 0)")
    parser.add_argument("--max-steps", type=int, default=None,
                        help="step budget per episode (default: 500 discrete steps)")
    parser.add_argument("--success-distance", type=float, default=3.0,
                        help="success radius in metres (SR needs distance < it; default: 3.0)")
    parser.add_argument("--instruction-view", choices=("full", "leg"), default="full",
                        help="long-horizon: the whole chained instruction (full, the paper's; default) "
                             "or only the active leg's (leg); recorded in run.json")
    parser.add_argument("--plots", type=int, default=6,
                        help="trajectory pictures per task and physics mode (default: 6)")
    parser.add_argument("--scenes-dir", type=Path, default=None,
                        help="folder the dataset's scene paths are relative to (default: from the manifest)")
    parser.add_argument("--no-progress", action="store_true", help="do not draw the progress bar")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    parser.set_defaults(handler=_eval)


def _modes(text: str) -> tuple[str, ...]:
    modes = tuple(m.strip() for m in text.split(",") if m.strip())
    if not modes:
        raise argparse.ArgumentTypeError("give at least one physics mode")
    return modes


def _eval(args: argparse.Namespace) -> int:
    from vlnverse.eval.harness import EvalConfig, evaluate
    from vlnverse.eval.progress import RunProgress
    from vlnverse.eval.registry import load_agent_config

    config = EvalConfig(
        dataset=str(args.dataset), out=str(args.out), agent=args.agent,
        agent_config=load_agent_config(args.agent_config), split=args.split, task=args.task,
        physics=args.physics, episodes=args.episodes, workers=args.workers, executor=args.executor,
        ray_address=args.ray_address, seed=args.seed, max_steps=args.max_steps,
        success_distance=args.success_distance, plots=args.plots, instruction_view=args.instruction_view,
        scenes_dir=str(args.scenes_dir) if args.scenes_dir else None,
    )
    progress: list[RunProgress] = []

    def on_start(total: int, finished: list) -> None:
        bar = RunProgress(total, finished, description=f"eval {args.agent}",
                          enabled=False if (args.no_progress or args.json) else None)
        progress.append(bar.__enter__())

    def on_result(record: dict) -> None:
        progress[0].update(record)

    try:
        result = evaluate(config, on_start=on_start, on_result=on_result)
    finally:
        if progress:
            progress[0].__exit__(None, None, None)
    if args.json:
        print_json({"summary": result.summary, "out": str(result.out), "evaluated": result.evaluated,
                    "resumed": result.resumed})
        return 0
    print_summary([(args.agent, result.summary)])
    print(f"{result.evaluated} evaluated, {result.resumed} resumed · report {result.summary_markdown} · "
          f"episodes {result.index_html}")
    return 0


def print_summary(runs: list) -> None:
    """Print one table per task (rows: agent x physics mode) for ``(label, summary)`` runs.

    Piped output gets a wide console, so the long-horizon table is never truncated.
    """
    from rich.console import Console
    from rich.table import Table

    from vlnverse.eval.report import TASK_TITLES, table_data, tasks_in

    tasks = tasks_in(runs)
    if not tasks:
        raise ConfigError("no episode records to summarize")
    console = Console()
    if not console.is_terminal:
        console = Console(width=160)
    for task in tasks:
        header, rows = table_data(runs, task)
        table = Table(title=TASK_TITLES.get(task, task))
        for index, column in enumerate(header):
            table.add_column(column, justify="left" if index < 2 else "right", no_wrap=True)
        for row in rows:
            table.add_row(*row)
        console.print(table)
