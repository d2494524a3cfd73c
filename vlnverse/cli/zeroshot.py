"""``vlnverse eval zeroshot`` and ``vlnverse eval zeroshot-tasks``: the zero-shot LLM agents' runs of
the paper (its Table 5: fine and coarse instructions; its Table 6: the visual-reference, dialogue and
long-horizon tasks), also reachable by the paper's table names, ``table5`` and ``table6``."""

from __future__ import annotations

import argparse
from pathlib import Path

from vlnverse.cli.output import print_json

#: Command → (the paper's table it runs, also the command's alias; its help; its description).
COMMANDS = {
    "zeroshot": ("table5", "the zero-shot LLM agents on fine and coarse instructions (the paper's Table 5)",
                 "Evaluate the LLM agents as the paper's Table 5 does (vlm perception, the learned waypoint "
                 "predictor, 200 sampled test episodes of fine and coarse instructions, Strict and Tel-Hop) and "
                 "write OUT/table.md and OUT/table.json; each agent and task is an ordinary eval folder "
                 "OUT/AGENT/TASK. Re-running continues where it stopped."),
    "zeroshot-tasks": ("table6", "the zero-shot LLM agents on visual reference, dialogue (LLM oracle) and long "
                       "horizon, Tel-Hop (the paper's Table 6)",
                       "Evaluate text_history and map_history as the paper's Table 6 does: its three blocks, visual "
                       "reference, dialogue with an LLM oracle (--oracle-llm, named in the table) and long horizon, "
                       "under Tel-Hop only, on the same seeded sample and with the same bootstrap intervals as "
                       "zeroshot; privileged options (sub-goals, gt perception) are named in the table's header. "
                       "Writes OUT/table.md and OUT/table.json; re-running continues where it stopped."),
}


def register(tools) -> None:
    """Add ``zeroshot`` and ``zeroshot-tasks`` (aliases ``table5``, ``table6``) to ``vlnverse eval``'s tools."""
    from vlnverse.eval.running.zeroshot import TABLES

    for command, (name, summary, description) in COMMANDS.items():
        spec = TABLES[name]
        parser = tools.add_parser(command, aliases=[name], help=summary, description=description)
        parser.add_argument("--dataset", required=True, type=Path, help="dataset folder")
        parser.add_argument("--out", required=True, type=Path, help="output folder")
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--llm", metavar="SPEC", help="the agents' model (openai:MODEL?base_url=...&api_key_env=...)")
        source.add_argument("--replay", type=Path, metavar="DIR", help="answer from the transcripts --record wrote here")
        parser.add_argument("--record", type=Path, metavar="DIR",
                            help="with --llm: record every call into DIR/AGENT/TASK.jsonl")
        if name == "table6":
            parser.add_argument("--oracle-llm", metavar="SPEC", default=None,
                                help="with --llm: the dialogue oracle's model (required for the dialogue task; "
                                     "recorded into DIR/AGENT/dialogue.oracle.jsonl)")
        parser.add_argument("--agents", default=",".join(spec.agents),
                            help=f"comma-separated (default: {','.join(spec.agents)})")
        parser.add_argument("--tasks", default=",".join(spec.tasks),
                            help=f"comma-separated among {', '.join(spec.tasks)} (default: all)")
        parser.add_argument("--split", default="test", help="split the episodes are sampled from (default: test)")
        parser.add_argument("--episodes", type=int, default=200, help="episodes sampled per task (default: 200; 0: all)")
        if name == "table5":
            parser.add_argument("--physics", default=",".join(spec.physics),
                                help=f"comma-separated (default: {','.join(spec.physics)})")
        parser.add_argument("--perception", choices=("vlm", "gt"), default="vlm",
                            help="vlm (images to the model, the paper's; default) or gt (privileged semantic text)")
        parser.add_argument("--agent-config", type=Path, default=None,
                            help="settings shared by the agents (YAML/JSON), e.g. privileged_subgoals: true")
        parser.add_argument("--seed", type=int, default=0, help="episode sample and run seed (default: 0)")
        parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples (default: 1000)")
        parser.add_argument("--workers", type=int, default=1, help="parallel workers per run (default: 1)")
        parser.add_argument("--concurrency", type=int, default=1, help="episodes per worker at once (default: 1)")
        parser.add_argument("--max-steps", type=int, default=None, help="step budget per episode (default: the harness's)")
        parser.add_argument("--json", action="store_true", help="print the table as one JSON object")
        parser.set_defaults(handler=_run_table, zeroshot_table=name)


def _names(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _run_table(args: argparse.Namespace) -> int:
    from vlnverse.eval.registry import load_agent_config
    from vlnverse.eval.running.zeroshot import ZeroShotConfig, markdown, run_zeroshot

    config = ZeroShotConfig(
        dataset=str(args.dataset), out=str(args.out), llm=args.llm, record=str(args.record) if args.record else None,
        replay=str(args.replay) if args.replay else None, table=args.zeroshot_table,
        oracle_llm=getattr(args, "oracle_llm", None), agents=_names(args.agents), tasks=_names(args.tasks),
        split=args.split, episodes=args.episodes or None, physics=_names(args.physics) if args.zeroshot_table == "table5" else (),
        perception=args.perception, agent_config=load_agent_config(args.agent_config), seed=args.seed,
        bootstrap=args.bootstrap, workers=args.workers, concurrency=args.concurrency, max_steps=args.max_steps)
    table = run_zeroshot(config)
    if args.json:
        print_json(table)
    else:
        print(markdown(table))
    return 3 if table["header"]["stopped"] else 0
