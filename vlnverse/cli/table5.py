"""``vlnverse eval table5``: the zero-shot LLM agents' run of the paper (Tables 5 and 6)."""

from __future__ import annotations

import argparse
from pathlib import Path

from vlnverse.cli.output import print_json


def register(tools) -> None:
    """Add ``table5`` to ``vlnverse eval``'s tools."""
    from vlnverse.eval.zeroshot import AGENTS, TABLE5_TASKS, TABLE6_TASKS

    parser = tools.add_parser(
        "table5", help="the paper's zero-shot LLM agent run: Tables 5 and 6 with bootstrap intervals",
        description="Evaluate the LLM agents as the paper does (vlm perception, the learned waypoint predictor, "
                    "200 sampled test episodes per task: fine and coarse for Table 5, long-horizon for Table 6, "
                    "Strict and Tel-Hop) and write OUT/table.md and OUT/table.json; each agent and task is an "
                    "ordinary eval folder OUT/AGENT/TASK. Re-running continues where it stopped.")
    parser.add_argument("--dataset", required=True, type=Path, help="dataset folder")
    parser.add_argument("--out", required=True, type=Path, help="output folder")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--llm", metavar="SPEC", help="the agents' model (openai:MODEL?base_url=...&api_key_env=...)")
    source.add_argument("--replay", type=Path, metavar="DIR", help="answer from the transcripts --record wrote here")
    parser.add_argument("--record", type=Path, metavar="DIR", help="with --llm: record every call into DIR/AGENT/TASK.jsonl")
    parser.add_argument("--agents", default=",".join(AGENTS), help=f"comma-separated (default: {','.join(AGENTS)})")
    parser.add_argument("--tasks", default=",".join(TABLE5_TASKS + TABLE6_TASKS),
                        help="comma-separated among fine, coarse, long_horizon (default: all three)")
    parser.add_argument("--split", default="test", help="split the episodes are sampled from (default: test)")
    parser.add_argument("--episodes", type=int, default=200, help="episodes sampled per task (default: 200; 0: all)")
    parser.add_argument("--physics", default="strict,tel_hop", help="comma-separated (default: strict,tel_hop)")
    parser.add_argument("--perception", choices=("vlm", "gt"), default="vlm",
                        help="vlm (images to the model, the paper's; default) or gt (privileged semantic text)")
    parser.add_argument("--agent-config", type=Path, default=None,
                        help="settings shared by the agents (YAML/JSON), e.g. waypoint_predictor: depth")
    parser.add_argument("--seed", type=int, default=0, help="episode sample and run seed (default: 0)")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples (default: 1000)")
    parser.add_argument("--workers", type=int, default=1, help="parallel workers per run (default: 1)")
    parser.add_argument("--concurrency", type=int, default=1, help="episodes per worker at once (default: 1)")
    parser.add_argument("--max-steps", type=int, default=None, help="step budget per episode (default: the harness's)")
    parser.add_argument("--json", action="store_true", help="print the table as one JSON object")
    parser.set_defaults(handler=_table5)


def _names(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _table5(args: argparse.Namespace) -> int:
    from vlnverse.eval.registry import load_agent_config
    from vlnverse.eval.zeroshot import ZeroShotConfig, markdown, run_zeroshot

    config = ZeroShotConfig(
        dataset=str(args.dataset), out=str(args.out), llm=args.llm, record=str(args.record) if args.record else None,
        replay=str(args.replay) if args.replay else None, agents=_names(args.agents), tasks=_names(args.tasks),
        split=args.split, episodes=args.episodes or None, physics=_names(args.physics), perception=args.perception,
        agent_config=load_agent_config(args.agent_config), seed=args.seed, bootstrap=args.bootstrap,
        workers=args.workers, concurrency=args.concurrency, max_steps=args.max_steps)
    table = run_zeroshot(config)
    if args.json:
        print_json(table)
    else:
        print(markdown(table))
    return 3 if table["header"]["stopped"] else 0
