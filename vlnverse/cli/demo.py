"""``vlnverse demo``: the main job end to end on the embedded backend, in a few minutes.

Bundled scenes → inspection and bird's-eye views → a small dataset of every task type with
prior (template) instructions → the ``oracle``, ``random`` and ``forward`` agents and the
shipped CMA checkpoint (``assets/agents/cma``, trained on VLNVerse-mini; on the fine and coarse episodes; skipped
without torch) under Strict and Tel-Hop physics → the tables printed and a report written. Re-running with the
same ``--out`` reuses what is already there.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from vlnverse.data import data_path
from vlnverse.errors import ConfigError

DEMO_AGENTS = ("oracle", "random", "forward")
SHIPPED_CMA_TASKS = "fine,coarse"
"""The tasks the shipped CMA was trained on, the ones the demo evaluates it on."""
HELD_OUT = ("val_seen", "val_unseen", "test")
"""The splits the printed tables pool: the shipped CMA was trained on the train split."""
SMALL_SAMPLE = 30
"""Below this many episodes a row's SR moves by more than 3 points per episode: the demo says so."""


def default_scenes() -> Path:
    """The bundled scenes (package data; ``assets/scenes`` in a checkout links to them)."""
    return data_path("scenes")


def shipped_agent(name: str) -> Path:
    """``NAME/agent.yaml`` of the agents shipped in the package (the CMA of the demo)."""
    return data_path("agents", name, "agent.yaml")


def demo_agents(console) -> list[tuple[str, str, dict]]:
    """``(agent, task, agent config)`` of each demo run: the baselines, and the shipped CMA
    where its checkpoint and torch are there."""
    import importlib.util

    from vlnverse.eval.registry import load_agent_config

    runs = [(agent, "all", {}) for agent in DEMO_AGENTS]
    cma = shipped_agent("cma")
    if not cma.is_file():
        console.print(f"no shipped CMA checkpoint at {cma}; skipping it")
    elif importlib.util.find_spec("torch") is None:
        console.print("torch is not installed (pip install 'vlnverse[train]'); skipping the shipped CMA")
    else:
        runs.append(("cma", SHIPPED_CMA_TASKS, load_agent_config(cma)))
    return runs


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "demo", help="bundled scenes → dataset → evaluate oracle/random/forward and the shipped CMA under Strict and Tel-Hop")
    parser.add_argument("--out", type=Path, default=Path("demo_out"), help="output folder (default: demo_out)")
    parser.add_argument("--scenes", type=Path, default=None, help="scene corpus (default: the scenes bundled with the package)")
    parser.add_argument("--per-scene", type=int, default=2, help="coarse trajectories per scene (default: 2)")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1),
                        help="parallel evaluation workers (default: 2)")
    parser.add_argument("--seed", type=int, default=0, help="dataset and evaluation seed (default: 0)")
    parser.add_argument("--max-steps", type=int, default=None,
                        help="step budget per episode (default: 500 discrete steps)")
    parser.add_argument("--no-progress", action="store_true", help="do not draw progress bars")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object (scenes, episode counts, every run's summary); "
                             "the narration goes to stderr")
    parser.set_defaults(handler=_demo)


def _demo(args: argparse.Namespace) -> int:
    from rich.console import Console

    from vlnverse.cli.eval import print_summary
    from vlnverse.cli.output import print_json
    from vlnverse.eval.running.harness import EvalConfig, evaluate
    from vlnverse.eval.running.progress import RunProgress
    from vlnverse.scene.inspect import prepare_scene, write_inspection
    from vlnverse.tasks.corpus import discover_scenes
    from vlnverse.tasks.datagen import DatagenConfig, run_datagen
    from vlnverse.tasks.generate import GenerationConfig

    console = Console(stderr=args.json)
    scenes = args.scenes or default_scenes()
    if not scenes.is_dir():
        raise ConfigError(f"scene corpus {scenes} not found; pass --scenes DIR")
    out = args.out
    out.mkdir(parents=True, exist_ok=True)

    console.rule("1/4 scenes: inspection and bird's-eye views")
    inspected = []
    for entry in discover_scenes(scenes):
        summary = write_inspection(prepare_scene(entry.path), out / "scenes" / entry.scene_id)
        inspected.append(summary)
        console.print(f"{entry.scene_id} ({entry.split}): {summary['room_count']} rooms, "
                      f"{summary['object_count']} objects, {summary['navigable_area_m2']:.1f} m² navigable "
                      f"→ {out / 'scenes' / entry.scene_id / 'bev.png'}")

    console.rule("2/4 dataset: every task type, prior instructions")
    dataset = out / "dataset"
    made = run_datagen(DatagenConfig(scenes=str(scenes), out=str(dataset), seed=args.seed,
                                     generation=GenerationConfig(per_scene=args.per_scene)))
    counts = {task: sum(s.get(task, {}).get("episodes", 0) for s in made.manifest["splits"].values())
              for task in ("fine", "coarse", "visual_reference", "long_horizon", "dialogue")}
    console.print(f"{made.manifest['total_episodes']} episodes: "
                  + ", ".join(f"{task} {n}" for task, n in counts.items()) + f" → {dataset}")

    console.rule("3/4 evaluation: Strict and Tel-Hop")
    runs, held_out, tasks_of = [], [], {}
    for agent, task, agent_config in demo_agents(console):
        progress: list[RunProgress] = []

        def on_start(total: int, finished: list, agent: str = agent, progress: list = progress) -> None:
            progress.append(RunProgress(total, finished, description=agent,
                                        enabled=False if args.no_progress or args.json else None).__enter__())

        def on_result(record: dict, progress: list = progress) -> None:
            progress[0].update(record)

        try:
            result = evaluate(EvalConfig(dataset=str(dataset), out=str(out / "eval" / agent), agent=agent,
                                         agent_config=agent_config, task=task, workers=args.workers,
                                         seed=args.seed, max_steps=args.max_steps, plots=2),
                              on_start=on_start, on_result=on_result)
        finally:
            if progress:
                progress[0].__exit__(None, None, None)
        console.print(f"{agent}: {result.evaluated} evaluated, {result.resumed} resumed → {result.index_html}")
        runs.append((agent, result.summary))
        held_out.append((agent, held_out_summary(result.records, result.summary["run"], args.seed)))
        tasks_of[agent] = task

    console.rule("4/4 results")
    report = write_demo_report(out, runs, inspected)
    if args.json:
        print_json({"out": str(out), "scenes": inspected, "dataset": str(dataset),
                    "episodes": made.manifest["total_episodes"], "episodes_per_task": counts,
                    "runs": dict(runs), "report": str(report)})
        return 0
    print_summary(held_out)
    notes = [small_sample_note(held_out, args.per_scene), *missing_rows(tasks_of, [t for t, n in counts.items() if n])]
    for note in filter(None, notes):
        console.print(note, soft_wrap=True)
    console.print(f"held-out splits ({', '.join(HELD_OUT)}) above; every split, train included: {report}",
                  soft_wrap=True)
    console.print(f"next, an evaluation of your own (docs/own-agent.md swaps in your agent):\n  "
                  f"{cli_command()} eval --dataset {dataset} --split val_unseen --task fine --agent random "
                  f"--out runs/random", soft_wrap=True)
    return 0


def held_out_summary(records: list, run: dict, seed: int) -> dict:
    """The summary of a run's held-out episodes: a trained agent's first numbers leave its training
    episodes out."""
    from vlnverse.eval.reporting.report import summarize

    return summarize([r for r in records if r["split"] in HELD_OUT], run, seed=seed)


def small_sample_note(held_out: list, per_scene: int) -> str | None:
    """Why the rows' figures are noisy when they rest on few episodes (None when none does)."""
    sizes = [g["n_episodes"] for _, summary in held_out for g in summary.get("groups", []) if g.get("n_episodes")]
    if not sizes or min(sizes) >= SMALL_SAMPLE:
        return None
    return (f"n = {min(sizes)} to {max(sizes)} held-out episodes per row: --per-scene {per_scene} keeps the demo to "
            f"minutes, and one episode moves such a row's SR by up to {100 / min(sizes):.0f} points, so these rows "
            "show the pipeline working, not what an agent scores. The shipped CMA scores 28 % SR under Tel-Hop on "
            "the 107 val_unseen episodes of `datagen --per-scene 80` on these scenes (tests/learning/"
            "test_shipped_cma.py) and 9.5 % on VLNVerse-mini's 200 (docs/results-mini.md); a larger "
            "--per-scene gives steadier rows, at an evaluation time that grows with the episodes")


def missing_rows(tasks_of: dict[str, str], tasks: list[str]) -> list[str]:
    """Why an agent has no row in a task's table: the demo runs a trained agent on its own tasks only."""
    notes = []
    for agent, spec in tasks_of.items():
        missing = [] if spec == "all" else [t for t in tasks if t not in spec.split(",")]
        if missing:
            notes.append(f"no {agent} rows for {', '.join(missing)}: the demo evaluates it on "
                         f"{spec.replace(',', ' and ')} only, the tasks it was trained on")
    return notes


def cli_command() -> str:
    """How to type ``vlnverse`` in this shell: bare when it is on ``PATH``, else the script beside
    this interpreter (``.venv/bin/vlnverse`` after ``make demo``), else ``python -m vlnverse``."""
    script = Path(sys.executable).parent / "vlnverse"
    found = shutil.which("vlnverse")
    if found and script.is_file() and Path(found).resolve() == script.resolve():
        return "vlnverse"
    if script.is_file():
        relative = os.path.relpath(script)
        return str(script) if relative.startswith("..") else relative
    return f"{sys.executable} -m vlnverse"


def write_demo_report(out: Path, runs: list, scenes: list[dict]) -> Path:
    """``report.md``: scenes, the combined Tables 5 and 6, and links to every run's pages."""
    from vlnverse.eval.reporting.report import markdown_tables
    from vlnverse.fileio import write_text_atomic

    lines = ["# VLNVerse demo report", "",
             "Embedded backend (PyBullet), bundled procedural scenes, prior-template instructions. "
             "Success: STOP with geodesic distance to the goal < 3 m; rates in %, TL and NE in metres, "
             "CR = collisions per navigation step.", "", "## Scenes", ""]
    for summary in scenes:
        sid = summary["scene_id"]
        lines.append(f"- **{sid}**: {summary['room_count']} rooms, {summary['object_count']} objects, "
                     f"{summary['navigable_area_m2']:.1f} m² navigable — [BEV](scenes/{sid}/bev.png)")
    lines += ["", "## Results", "", markdown_tables(runs), "## Episodes", ""]
    for agent, _ in runs:
        lines.append(f"- `{agent}`: [episodes](eval/{agent}/index.html) · [summary](eval/{agent}/summary.md) · "
                     f"[records](eval/{agent}/episodes.jsonl)")
    lines.append("")
    path = out / "report.md"
    write_text_atomic(path, "\n".join(lines))
    return path
