"""``vlnverse eval``: evaluate an agent on a dataset under Strict and Tel-Hop physics."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vlnverse.cli.output import print_json
from vlnverse.errors import ConfigError

BUDGET_STOP_EXIT = 3
"""Exit status of a run stopped by its LLM budget (its finished records are kept)."""
ALL_ERRORED_EXIT = 4
"""Exit status of a run whose every episode record ended in an error (it measured nothing)."""
UNREACHABLE_EXIT = 5
"""Exit status of a run whose model server could not be reached (in any episode)."""


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "eval", help="evaluate an agent on a dataset (per-episode JSONL, Tables 5/6, plots, HTML index)",
        description="Run an agent over a dataset's episodes under each physics mode. Re-running the "
                    "same command continues where it stopped.")
    what = parser.add_argument_group("what to run")
    what.add_argument("--dataset", type=Path, help="dataset folder (or one .jsonl(.gz) file) (required)")
    what.add_argument("--split", default="all", help="split name or 'all' (default: all)")
    what.add_argument("--task", default="all", help="task name or 'all' (default: all)")
    what.add_argument("--agent",
                      help="(required) agent name (random, forward, oracle, replay, ...), module:attr (a module on "
                           "PYTHONPATH or in the current folder) or path/to/file.py:attr")
    what.add_argument("--label", default=None,
                      help="the agent's name in tables and pages (default: its name; a file.py:Class agent by "
                           "its class)")
    what.add_argument("--agent-config", type=Path, default=None, help="agent settings (YAML or JSON)")
    what.add_argument("--episodes", type=int, default=None, help="evaluate a seeded sample of N episodes")
    what.add_argument("--seed", type=int, default=0, help="run seed (default: 0)")
    what.add_argument("--scenes-dir", type=Path, default=None,
                      help="folder the dataset's scene paths are relative to (default: from the manifest)")
    scoring = parser.add_argument_group("how it is scored")
    scoring.add_argument("--physics", default="strict,tel_hop", type=_modes,
                         help="comma-separated physics modes: strict, slide, tel_hop (any case; "
                              "Tel-Hop and tel-hop work too; default: strict,tel_hop)")
    scoring.add_argument("--max-steps", type=int, default=None,
                         help="step budget per episode (default: 500 discrete steps)")
    scoring.add_argument("--success-distance", type=float, default=3.0,
                         help="success radius in metres (SR needs distance < it; default: 3.0; "
                              "objectnav uses its episodes' own radius)")
    scoring.add_argument("--instruction-view", choices=("full", "leg"), default="full",
                         help="long-horizon: the whole chained instruction (full, the paper's; default) "
                              "or only the active leg's (leg); recorded in run.json")
    scoring.add_argument("--episode-timeout", type=float, default=None, metavar="SECONDS",
                         help="wall-clock limit per episode; past it the episode fails with reason "
                              "'timeout' and the run goes on (default: 900; 0: no limit)")
    where = parser.add_argument_group("where it runs")
    where.add_argument("--workers", type=int, default=1, help="parallel workers (default: 1)")
    where.add_argument("--executor", choices=("local", "ray"), default="local",
                       help="local process pool or a Ray cluster (needs the 'ray' extra)")
    where.add_argument("--ray-address", default=None,
                       help="Ray cluster address (default: start a local Ray instance)")
    where.add_argument("--backend", choices=("auto", "bullet", "isaac"), default="bullet",
                       help="simulator backend: bullet (embedded, default), isaac (Isaac Sim) or "
                            "auto (Isaac Sim where installed, else bullet)")
    out = parser.add_argument_group("what it writes")
    out.add_argument("--out", type=Path, help="output folder (required)")
    out.add_argument("--plots", type=int, default=6,
                     help="episodes per task and physics mode that get a trajectory picture and "
                          "per-step frames in the episode viewer (default: 6; 0: no pictures)")
    llm = parser.add_argument_group("LLM agents")
    llm.add_argument("--llm", default=None, metavar="SPEC",
                     help="the agent's model: openai:MODEL[?base_url=...&api_key_env=...], hf:PATH or "
                          "replay:FILE (built in the workers; the API key is read from the environment)")
    llm.add_argument("--llm-cache", type=Path, default=None, metavar="DIR",
                     help="answer repeated requests from this cache (a repeated run makes no calls)")
    llm.add_argument("--llm-record", type=Path, default=None, metavar="FILE",
                     help="append every call to this JSONL transcript (replay it with --llm replay:FILE)")
    llm.add_argument("--budget-tokens", type=int, default=None, metavar="N",
                     help="billed tokens the output folder may use over every invocation; when spent the "
                          "run stops cleanly (re-run with a larger budget to continue)")
    llm.add_argument("--budget-usd", type=float, default=None, metavar="X",
                     help="billed US dollars the output folder may spend over every invocation; when spent "
                          "the run stops cleanly")
    llm.add_argument("--concurrency", type=int, default=1, metavar="K",
                     help="episodes each worker runs at once while it waits for the model or a policy server, "
                          "one connection each for --agent ws://... (default: 1)")
    llm.add_argument("--oracle-llm", default=None, metavar="SPEC",
                     help="dialogue episodes: the oracle's model (default: the template oracle)")
    trace = parser.add_argument_group("path and trace metrics (AORI for every agent; DR/JOR/MPTR for debates)")
    trace.add_argument("--aori", action="append", default=[], metavar="NAME=VALUE",
                       help="an AORI parameter (view_radius, voxel_size, overlap_threshold, eta, w_c, w_d, "
                            "revisit_count, map_size, sample_spacing); repeatable")
    trace.add_argument("--debate-max-rounds", type=int, default=3, metavar="R",
                       help="R_max of the debate metrics DR/JOR/MPTR (default: 3; an agent whose trace "
                            "states debate_max_rounds, e.g. dscd_nav, uses its own)")
    out.add_argument("--retry-errors", action="store_true",
                        help="run again the episodes whose record ended in an error (agent exception, "
                             "worker death, unreachable server); every other record is kept")
    out.add_argument("--fallback-warning", type=float, default=None, metavar="SHARE",
                        help="warn when more than this share of the agent's steps were fallback moves "
                             "(default: 0.5)")
    out.add_argument("--no-progress", action="store_true", help="do not draw the progress bar")
    out.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    parser.set_defaults(handler=_eval, eval_parser=parser)
    tools = parser.add_subparsers(dest="eval_tool", metavar="{verify,bundle,unpack,table,zeroshot,zeroshot-tasks}",
                                  help="check, package or tabulate evaluation folders, or run the paper's zero-shot "
                                       "agent table, instead of running one agent")
    verify = tools.add_parser(
        "verify", help="check an evaluation folder (or unpacked bundle) against your dataset; --rerun its agent",
        description="Check an evaluation folder someone else made against your own copy of the dataset. Nothing "
                    "in the folder is run or imported. Checks: SHA256SUMS (a bundle's), the dataset and scene "
                    "checksums run.json recorded, that every episode of the required selection has exactly one "
                    "record agreeing with its dataset episode, a re-simulation of every record's actions "
                    "(trajectory, ending, every metric), summary.json and summary.md, the label and privileged "
                    "inputs against the agent and its config, and with --rerun the agent re-run from trusted "
                    "parts (random, forward, oracle; checkpoint agents from your --checkpoint copy, read as "
                    "weights only; LLM agents from --transcript), which must take every recorded action. "
                    "Without --rerun a verified folder is consistent, not proof of which agent acted; for an LLM "
                    "agent the re-run shows the actions follow from the transcript, not which model wrote it. "
                    "The report lists what was proven and what was only reported.",
        epilog="A selection stated with --split, --task, --physics or --episodes is a spot check: only its records "
               "are checked, and the verdict names it and counts the records outside it, which are not checked. "
               "exit status: 0 verified (a spot check: every selected record); 1 a check failed (a mismatch, or a selected episode without a record); "
               "2 malformed input (not a regular file, too large, a blank or too long JSON line, not UTF-8, "
               "invalid or too deeply nested JSON, a number out of range, a key given twice, an unknown field or "
               "one of the wrong kind, a checkpoint that is not weights only) or a usage error, printed as one "
               "'error:' line.")
    verify.add_argument("folder", type=Path, help="evaluation folder (the --out of vlnverse eval) or unpacked bundle")
    verify.add_argument("--dataset", type=Path, required=True,
                        help="your copy of the dataset (run.json's path is never used)")
    verify.add_argument("--scenes-dir", type=Path, default=None,
                        help="folder the dataset's scene paths are relative to (default: the dataset manifest's; "
                             "run.json's is never used)")
    verify.add_argument("--expect-dataset", default=None, metavar="SHA256",
                        help="the published sha256 of the dataset's manifest.json; your copy must have it")
    verify.add_argument("--release-sums", type=Path, default=None, metavar="SHA256SUMS",
                        help="a release's published SHA256SUMS (vlnverse release build): your dataset's manifest "
                             "and every scene verify reads must have the digests it lists")
    verify.add_argument("--track", default=None, metavar="NAME",
                        help="a named track (e.g. mini): its published SHA256SUMS as --release-sums, and its splits, "
                             "tasks, physics, every episode, eval seed, step budget, success radius and the default "
                             "trace-metric parameters as the required selection and scoring (options you give win)")
    required = verify.add_argument_group(
        "required selection (default: the run's own, as run.json states it; stating --split, --task, --physics or "
        "--episodes checks only those records)")
    required.add_argument("--split", default=None, help="split name(s), comma-separated, or 'all'")
    required.add_argument("--task", default=None, help="task name(s), comma-separated, or 'all'")
    required.add_argument("--physics", default=None, type=_modes, help="comma-separated physics modes")
    required.add_argument("--episodes", default=None, type=_episodes, metavar="all|N",
                          help="every selected episode (all) or a seeded sample of N")
    required.add_argument("--seed", type=int, default=None, help="the seed the run must have used")
    scoring = verify.add_argument_group("required scoring (default: the run's own, printed as 'settings')")
    scoring.add_argument("--success-distance", type=float, default=None, metavar="M",
                         help="the success radius the run must have used (the benchmark's: 3.0)")
    scoring.add_argument("--max-steps", type=_max_steps, default=None, metavar="N|default",
                         help="the step budget the run must have used")
    scoring.add_argument("--instruction-view", choices=("full", "leg"), default=None,
                         help="the long-horizon instruction view the run must have used")
    verify.add_argument("--allow-partial", action="store_true",
                        help="report selected episodes without a record instead of failing (to inspect)")
    verify.add_argument("--rerun", action="store_true",
                        help="re-run the agent from trusted parts and compare every action")
    verify.add_argument("--transcript", type=Path, default=None, metavar="FILE",
                        help="LLM agents: re-run from this --llm-record transcript and compare actions")
    verify.add_argument("--checkpoint", action="append", default=[], metavar="[KEY=]FILE",
                        help="checkpoint agents: your copy of the weights file run.json recorded the sha256 of "
                             "(KEY: its agent config key, default 'checkpoint'); repeatable")
    verify.add_argument("--workers", type=int, default=1, help="processes for the re-simulation (default: 1)")
    verify.add_argument("--json", action="store_true", help="print the report as one JSON object")
    verify.set_defaults(handler=_verify)
    bundle = tools.add_parser("bundle", help="pack an evaluation folder into a verifiable results archive",
                              description="Write a .tar.gz holding run.json, episodes.jsonl, the summaries, "
                                          "the LLM transcript (when the run recorded one inside the folder, or "
                                          "--transcript), SHA256SUMS and environment.json (versions of Python, "
                                          "vlnverse and its libraries). Only regular files are packed: a "
                                          "symlink is refused.")
    bundle.add_argument("folder", type=Path, help="evaluation folder")
    bundle.add_argument("--to", required=True, type=Path, metavar="FILE.tar.gz", help="archive to write")
    bundle.add_argument("--transcript", type=Path, default=None, metavar="FILE",
                        help="the run's --llm-record transcript, when it lies outside the folder (one inside it "
                             "is packed without this)")
    bundle.add_argument("--json", action="store_true", help="print the archive and its members as JSON")
    bundle.set_defaults(handler=_bundle)
    unpack = tools.add_parser(
        "unpack", help="unpack a results archive someone sent, within its members' size caps",
        description="Unpack a .tar.gz made by 'vlnverse eval bundle' into a new folder. Only the bundle's own "
                    "members are accepted: regular files of its member names, each once and no larger than the "
                    "size verify reads it at (checked before it is read); anything else (another name, a link, "
                    "a folder, an archive that inflates past its members' sizes) is refused and nothing is left.",
        epilog="exit status: 0 unpacked; 2 refused, printed as one 'error:' line.")
    unpack.add_argument("archive", type=Path, help="the results archive (.tar.gz)")
    unpack.add_argument("--to", required=True, type=Path, metavar="DIR", help="a new (or empty) folder")
    unpack.add_argument("--json", action="store_true", help="print the folder and its members as JSON")
    unpack.set_defaults(handler=_unpack)
    from vlnverse.cli import table, zeroshot

    table.register(tools)
    zeroshot.register(tools)


VERIFY_MISMATCH_EXIT = 1
"""Exit status of ``vlnverse eval verify`` when a check fails."""


def _verify(args: argparse.Namespace) -> int:
    from vlnverse.eval.verification.untrusted import MalformedInput
    from vlnverse.eval.verification.verify import Selection, verify_run

    def show(check: str, outcome: str) -> None:
        if not args.json:
            print(f"{check:13s} {outcome}", flush=True)

    selection = Selection(split=args.split, task=args.task, physics=args.physics, episodes=args.episodes,
                          seed=args.seed)
    stated = [text for text in (args.split, args.task, ",".join(args.physics or ()),
                                args.episodes and f"episodes {args.episodes}") if text]
    release_sums = args.release_sums
    if args.track:
        from vlnverse.eval.scoring.episode_record import MetricsConfig, trace_metric_settings
        from vlnverse.eval.tracks import get_track

        track = get_track(args.track)
        if not track.checksums.is_file():
            raise ConfigError(f"track {track.name} publishes no SHA256SUMS to check a dataset against")
        release_sums = release_sums or track.checksums
        selection = Selection(split=args.split or ",".join(track.splits), task=args.task or ",".join(track.tasks),
                              physics=args.physics or track.physics, episodes=args.episodes or "all",
                              seed=track.eval_seed if args.seed is None else args.seed)
        scoring = {"success_distance": track.success_distance, "max_steps": track.max_steps,
                   "trace_metrics": trace_metric_settings(MetricsConfig()), **_scoring(args)}
    else:
        scoring = _scoring(args)
    try:
        report = verify_run(args.folder, dataset=args.dataset, scenes_dir=args.scenes_dir,
                            expect_dataset=args.expect_dataset, release_sums=release_sums, selection=selection,
                            scoring=scoring, allow_partial=args.allow_partial, subset=bool(stated),
                            rerun=args.rerun, transcript=args.transcript, checkpoints=_checkpoints(args.checkpoint),
                            workers=args.workers, on_check=show)
    except (MemoryError, RecursionError) as exc:  # the folder's files are larger than this machine can check
        raise MalformedInput(f"{args.folder}: {type(exc).__name__} while checking it (files too large or too "
                             "deeply nested for this machine)") from None
    if args.json:
        print_json({"ok": report.ok, "records": report.records, "checked": report.checked,
                    "not_checked": report.outside, "selection": report.selection,
                    "settings": report.settings, "checks": report.checks, "mismatches": report.mismatches,
                    "checksums": report.checksums, "proven": report.proven if report.ok else [],
                    "reported_only": report.reported})
    else:
        print(f"selection     {report.selection}")
        print(f"settings      {report.settings}")
        for name, digest in sorted(report.checksums.items()):
            print(f"sha256 {digest}  {name}")
        for line in report.proven if report.ok else ():
            print(f"proven:        {line}")
        for line in report.reported:
            print(f"reported only: {line}")
        what = "consistent; the agent was not re-run, see --rerun" if "rerun" not in report.checks else \
            "the actions follow from this transcript" if args.transcript else "the agent re-run"
        print(_verdict(report, what, stated, args.folder))
    return 0 if report.ok else VERIFY_MISMATCH_EXIT


def _verdict(report: Any, what: str, stated: list[str], folder: Path) -> str:
    """The last line of ``eval verify``: never a plain "verified" when records were left unchecked."""
    if not report.ok:
        return f"MISMATCH: {report.records} record(s) in {folder}; first: {report.mismatches[0]}"
    if report.outside:
        return (f"verified on the stated selection ({', '.join(stated)}: {report.checked} record(s)) ({what}); "
                f"{report.outside} record(s) outside it not checked, in {folder}")
    return f"verified ({what}): {report.records} record(s) in {folder}"


def _episodes(text: str) -> int | str:
    """``--episodes all`` or a positive count."""
    if text == "all":
        return text
    if text.isdigit() and int(text) > 0:
        return int(text)
    raise argparse.ArgumentTypeError(f"expected 'all' or a positive number, got {text!r}")


def _max_steps(text: str) -> int | str:
    """``--max-steps default`` or a positive count."""
    if text == "default" or (text.isdigit() and int(text) > 0):
        return text if text == "default" else int(text)
    raise argparse.ArgumentTypeError(f"expected 'default' or a positive number, got {text!r}")


def _scoring(args: argparse.Namespace) -> dict[str, Any]:
    """The scoring settings ``eval verify`` was told to require."""
    stated = {"success_distance": args.success_distance, "instruction_view": args.instruction_view,
              "max_steps": None if args.max_steps == "default" else args.max_steps}
    return {k: v for k, v in stated.items() if v is not None or (k == "max_steps" and args.max_steps)}


def _checkpoints(values: list[str]) -> dict[str, Path]:
    """``{agent config key: file}`` of ``--checkpoint [KEY=]FILE`` options."""
    out: dict[str, Path] = {}
    for text in values:
        key, sep, path = text.partition("=")
        key, path = (key, path) if sep and key.isidentifier() else ("checkpoint", text)
        if key in out:
            raise ConfigError(f"--checkpoint {key} given twice")
        out[key] = Path(path)
    return out


def _bundle(args: argparse.Namespace) -> int:
    from vlnverse.eval.verification.bundle import write_bundle

    members = write_bundle(args.folder, args.to, transcript=args.transcript)
    if args.json:
        print_json({"archive": str(args.to), "members": members})
    else:
        print(f"wrote {args.to} ({len(members)} files: {', '.join(members)})")
    return 0


def _unpack(args: argparse.Namespace) -> int:
    from vlnverse.eval.verification.unpack import unpack_bundle

    members = unpack_bundle(args.archive, args.to)
    if args.json:
        print_json({"folder": str(args.to), "members": members})
    else:
        print(f"unpacked {args.archive} into {args.to} ({len(members)} files: {', '.join(members)})")
    return 0


def _timeout(seconds: float | None) -> dict:
    """The ``episode_timeout`` setting of ``--episode-timeout`` (0: none; absent: the default)."""
    if seconds is None:
        return {}
    return {"episode_timeout": seconds or None}


def _modes(text: str) -> tuple[str, ...]:
    modes = tuple(m.strip() for m in text.split(",") if m.strip())
    if not modes:
        raise argparse.ArgumentTypeError("give at least one physics mode")
    return modes


def _eval(args: argparse.Namespace) -> int:
    from vlnverse.eval.registry import agent_label, load_agent_config
    from vlnverse.eval.reporting.health import health_line
    from vlnverse.eval.running.harness import EvalConfig, evaluate
    from vlnverse.eval.running.progress import RunProgress
    from vlnverse.eval.running.timings import timing_line

    missing = [f"--{name}" for name in ("dataset", "agent", "out") if getattr(args, name) is None]
    if missing:
        args.eval_parser.error(f"the following arguments are required: {', '.join(missing)}")

    config = EvalConfig(
        dataset=str(args.dataset), out=str(args.out), agent=args.agent,
        agent_config=load_agent_config(args.agent_config), split=args.split, task=args.task,
        physics=args.physics, episodes=args.episodes, workers=args.workers, executor=args.executor,
        ray_address=args.ray_address, backend=args.backend, seed=args.seed, max_steps=args.max_steps,
        success_distance=args.success_distance, plots=args.plots, instruction_view=args.instruction_view,
        **_timeout(args.episode_timeout),
        **({} if args.fallback_warning is None else {"fallback_warning": args.fallback_warning}),
        retry_errors=args.retry_errors, label=args.label,
        scenes_dir=str(args.scenes_dir) if args.scenes_dir else None,
        llm=args.llm, llm_cache=str(args.llm_cache) if args.llm_cache else None,
        llm_record=str(args.llm_record) if args.llm_record else None, budget_tokens=args.budget_tokens,
        budget_usd=args.budget_usd, concurrency=args.concurrency, oracle_llm=args.oracle_llm,
        metrics=trace_metrics_config(args.aori, args.debate_max_rounds),
    )
    progress: list[RunProgress] = []

    def on_start(total: int, finished: list) -> None:
        bar = RunProgress(total, finished, description=f"eval {args.label or agent_label(args.agent)}",
                          enabled=False if (args.no_progress or args.json) else None)
        progress.append(bar.__enter__())

    def on_result(record: dict) -> None:
        progress[0].update(record)

    try:
        result = evaluate(config, on_start=on_start, on_result=on_result)
    finally:
        if progress:
            progress[0].__exit__(None, None, None)
    health = result.summary.get("health", {})
    if args.json:
        print_json({"summary": result.summary, "out": str(result.out), "evaluated": result.evaluated,
                    "resumed": result.resumed, "retried": result.retried, "stopped": result.stopped,
                    "timings": result.timings})
    else:
        if result.records:
            print_summary([(result.summary["run"]["label"], result.summary)])
            if health.get("fallback_share") is not None:  # the agent's steps were traced: an LLM agent
                print(f"health: {health_line(health)}")
        if (times := timing_line(result.timings)) is not None:
            print(times)
        retried = f", {result.retried} error record(s) run again" if result.retried else ""
        print(f"{result.evaluated} evaluated, {result.resumed} resumed{retried} · report {result.summary_markdown} · "
              f"episodes {result.index_html}")
        if result.stopped:
            print(f"stopped: {result.stopped}; {len(result.records)} record(s) kept. Re-run the same command "
                  "(with a larger budget if needed) to continue.")
    for warning in health.get("warnings", []):
        print(f"warning: {warning}", file=sys.stderr)
    return exit_status(health, result.stopped)


def exit_status(health: Mapping[str, Any], stopped: str | None) -> int:
    """The exit status of a finished run: :data:`UNREACHABLE_EXIT`, then
    :data:`ALL_ERRORED_EXIT`, then :data:`BUDGET_STOP_EXIT`, else 0."""
    if health.get("verdict") == "unreachable":
        return UNREACHABLE_EXIT
    if health.get("verdict") == "all_errored":
        return ALL_ERRORED_EXIT
    return BUDGET_STOP_EXIT if stopped else 0


def trace_metrics_config(aori: list[str], debate_max_rounds: int) -> Any:
    """The metrics settings of ``--aori NAME=VALUE`` and ``--debate-max-rounds``."""
    import dataclasses

    from vlnverse.eval.scoring.episode_record import MetricsConfig
    from vlnverse.eval.scoring.trace_metrics import AORIParams

    kinds = {f.name: f.type for f in dataclasses.fields(AORIParams)}
    values: dict[str, Any] = {}
    for text in aori:
        name, sep, value = text.partition("=")
        name = name.strip()
        if not sep or name not in kinds:
            raise ConfigError(f"--aori {text!r}: expected NAME=VALUE with NAME one of {', '.join(kinds)}")
        try:
            values[name] = int(value) if name == "revisit_count" else float(value)
        except ValueError:
            raise ConfigError(f"--aori {text!r}: {value!r} is not a number") from None
    return MetricsConfig(aori=AORIParams(**values), debate_max_rounds=debate_max_rounds)


def print_summary(runs: list) -> None:
    """Print one table per task (rows: agent x physics mode) for ``(label, summary)`` runs.

    Piped output gets a wide console, so the long-horizon table is never truncated.
    """
    from rich.console import Console
    from rich.table import Table

    from vlnverse.eval.reporting.report import table_data, table_title, tasks_in

    tasks = tasks_in(runs)
    if not tasks:
        raise ConfigError("no episode records to summarize")
    console = Console()
    if not console.is_terminal:
        console = Console(width=160)
    for task in tasks:
        header, rows = table_data(runs, task)
        table = Table(title=table_title(runs, task))
        for index, column in enumerate(header):
            table.add_column(column, justify="left" if index < 2 else "right", no_wrap=True)
        for row in rows:
            table.add_row(*row)
        console.print(table)
