"""The zero-shot agents' results table (paper Table 5 protocol) on a fixed episode set.

Runs ``text_history``, ``text_history_cot``, ``map_history`` and ``map_history_cot`` in
``gt`` perception (or ``--perception vlm``) over the same seeded sample of episodes under
Strict and Tel-Hop, and prints one markdown table: SR, SPL, NE, nDTW, CR per agent and
physics mode, with the parse failures, fallbacks and tokens of the run.

Recording against a live model (every call lands in ``DIR/<agent>.jsonl``)::

    python tools/agents_table.py --dataset data/ds --llm 'openai:qwen3-vl-4b?base_url=http://127.0.0.1:8000/v1&api_key_env=none' \\
        --record transcripts/ --out runs/table

Reproducing the same table offline from those transcripts (no model, same numbers)::

    python tools/agents_table.py --dataset data/ds --replay transcripts/ --out runs/table-replay
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

AGENTS = ("text_history", "text_history_cot", "map_history", "map_history_cot")
COLUMNS = ("SR", "SPL", "NE", "nDTW", "CR")


def client_for(agent: str, args: argparse.Namespace) -> Any:
    """The agent's client: replayed from ``--replay``, else ``--llm`` (recorded with ``--record``)."""
    from vlnverse.llm import ReplayClient, make_llm

    if args.replay:
        return ReplayClient(Path(args.replay) / f"{agent}.jsonl")
    record = Path(args.record) / f"{agent}.jsonl" if args.record else None
    return make_llm(args.llm, record=record)


def run_agent(agent: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Evaluate one agent; returns its episode records."""
    from vlnverse.eval.harness import EvalConfig, evaluate
    from vlnverse.eval.registry import load_agent_config, make_agent

    config = {**load_agent_config(args.agent_config), "perception": args.perception}
    instance = make_agent(agent, config, llm=client_for(agent, args))
    result = evaluate(EvalConfig(
        dataset=args.dataset, out=str(Path(args.out) / agent), agent=agent, agent_config=config,
        split=args.split, task=args.task, physics=tuple(args.physics.split(",")), episodes=args.episodes,
        seed=args.seed, plots=0), agent=instance)
    return list(result.records)


def table_rows(agent: str, records: list[dict[str, Any]]) -> list[str]:
    """One markdown row per physics mode."""
    rows = []
    for physics in sorted({r["physics"] for r in records}):
        group = [r for r in records if r["physics"] == physics]
        traces = [r.get("agent_trace") or {} for r in group]

        def mean(key: str, group: list[dict[str, Any]] = group) -> str:
            values = [r["metrics"][key] for r in group if r["metrics"].get(key) is not None]
            return f"{sum(values) / len(values):.2f}" if values else "-"

        failures = sum(t.get("parse_failures", 0) for t in traces)
        fallbacks = sum(t.get("fallbacks", 0) for t in traces)
        steps = sum(len(t.get("steps", ())) for t in traces)
        tokens = sum(sum((t.get("tokens") or {}).values()) for t in traces)
        errors = sum(1 for r in group if r.get("error"))
        rows.append(f"| {agent} | {physics} | {len(group)} | " + " | ".join(mean(c) for c in COLUMNS)
                    + f" | {failures}/{steps} | {fallbacks} | {tokens} | {errors} |")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--llm", help="model spec (vlnverse.llm.make_llm)")
    source.add_argument("--replay", help="folder of <agent>.jsonl transcripts to replay")
    parser.add_argument("--record", help="with --llm: write <agent>.jsonl transcripts here")
    parser.add_argument("--out", required=True)
    parser.add_argument("--perception", default="gt", choices=("gt", "vlm"))
    parser.add_argument("--agent-config", help="YAML/JSON agent settings shared by the four agents")
    parser.add_argument("--task", default="coarse")
    parser.add_argument("--split", default="all")
    parser.add_argument("--physics", default="strict,tel_hop")
    parser.add_argument("--episodes", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--agents", default=",".join(AGENTS))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    header = ["| agent | physics | episodes | " + " | ".join(COLUMNS)
              + " | parse failures/steps | fallbacks | tokens | errors |",
              "|" + "---|" * (len(COLUMNS) + 7)]
    rows = [row for agent in args.agents.split(",") for row in table_rows(agent, run_agent(agent, args))]
    text = "\n".join(header + rows)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "table.md").write_text(text + "\n", encoding="utf-8")
    (Path(args.out) / "table.json").write_text(json.dumps({"rows": rows}, indent=1), encoding="utf-8")
    sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
