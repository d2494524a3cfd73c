"""The zero-shot LLM agents' runs of the paper (§5.3–5.4): ``vlnverse eval table5`` and
``vlnverse eval table6``.

Every agent is evaluated through the harness on the same seeded sample of ``episodes``
episodes of each task of ``split`` (the paper: 200 test episodes), in ``vlm`` perception
with the learned waypoint predictor unless the agent config says otherwise. **Table 5**
(:data:`TABLES` ``table5``): ``text_history``, ``map_history`` and their CoT variants on fine
and coarse instructions under Strict and Tel-Hop. **Table 6** (``table6``): ``text_history``
and ``map_history`` on its three blocks, visual reference, dialogue (with an LLM oracle,
``oracle_llm``, named in the table) and long-horizon, under Tel-Hop only (§5.4). Each
(agent, task) run is an ordinary eval folder ``OUT/<agent>/<task>/`` (resumable);
``table.md`` / ``table.json`` gather TL, NE, SR, OSR, SPL, nDTW and CR (and SR_1..SR_n, SR_All
for long-horizon) with their 95 % bootstrap intervals, under a header naming the perception,
the waypoint predictor, the model, the oracle, the privileged options, the episodes and the
seed. ``gt`` perception reads the semantic sensor: such a run is labelled "privileged
perception" in the header and in every row; the sub-goal split (``privileged_subgoals``) is
named in the header too.

The model's calls can be recorded (``record``: one transcript per agent and task,
``DIR/<agent>/<task>.jsonl``, and the oracle's ``DIR/<agent>/<task>.oracle.jsonl``) and
replayed from that folder (``replay``) with no model.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlnverse.errors import ConfigError
from vlnverse.fileio import write_json_atomic, write_text_atomic

AGENTS = ("text_history", "text_history_cot", "map_history", "map_history_cot")
TABLE5_TASKS = ("fine", "coarse")
TABLE6_TASKS = ("visual_reference", "dialogue", "long_horizon")
LONG_HORIZON = ("long_horizon",)
ORACLE_TASKS = ("dialogue",)


@dataclass(frozen=True)
class TableSpec:
    """One of the paper's zero-shot tables: its agents, its blocks (title, tasks), its physics."""

    title: str
    agents: tuple[str, ...]
    blocks: tuple[tuple[str, tuple[str, ...]], ...]
    physics: tuple[str, ...]

    @property
    def tasks(self) -> tuple[str, ...]:
        return tuple(t for _, tasks in self.blocks for t in tasks)


TABLES = {
    "table5": TableSpec("paper Table 5", AGENTS, (("Table 5", TABLE5_TASKS),), ("strict", "tel_hop")),
    "table6": TableSpec("paper Table 6, Tel-Hop", ("text_history", "map_history"),
                        (("Visual reference", ("visual_reference",)), ("Dialogue-based", ("dialogue",)),
                         ("Long-horizon", LONG_HORIZON)), ("tel_hop",)),
}
PRIVILEGED_OPTIONS = {"subgoal_instructions": "sub-goals (privileged_subgoals)",
                      "semantic_categories": "gt perception (perception: gt)"}
"""The privileged inputs a run reads (``run.json``'s ``privileged``), as the header names them."""
COLUMNS = ("TL", "NE", "SR", "OSR", "SPL", "nDTW", "CR")
PERCENT = frozenset({"SR", "OSR", "SPL", "nDTW", "CR", "SR_All"})
PHYSICS_TITLES = {"strict": "Strict", "tel_hop": "Tel-Hop", "slide": "Slide"}
PRIVILEGED_LABEL = "privileged perception"


@dataclass(frozen=True)
class ZeroShotConfig:
    """A Table 5 or Table 6 run (see the module docs).

    Attributes:
        dataset, out: Dataset and output folders.
        llm: The model spec (``openai:MODEL?...``); exclusive with ``replay``.
        record: Folder to record every call's transcript into (with ``llm``).
        replay: Folder of recorded transcripts to answer from instead of a model.
        table: ``table5`` or ``table6`` (:data:`TABLES`).
        oracle_llm: The dialogue oracle's model spec (with ``llm``; needed for the dialogue
            task, the paper's LLM oracle); in replay its transcripts answer.
        agents: Agents evaluated, in table order (default: the table's).
        tasks: Tasks evaluated, among the table's (default: all of them).
        split: Split the episodes are drawn from.
        episodes: Episodes sampled per task (``None``: all).
        physics: Physics modes.
        perception: ``vlm`` (the paper's) or ``gt`` (privileged).
        agent_config: Settings shared by the agents (``perception`` is set from above).
        seed: Sample and run seed.
        bootstrap: Bootstrap resamples of the intervals.
        workers, concurrency, max_steps: Passed to the harness.
    """

    dataset: str
    out: str
    llm: str | None = None
    record: str | None = None
    replay: str | None = None
    table: str = "table5"
    oracle_llm: str | None = None
    agents: tuple[str, ...] = ()
    tasks: tuple[str, ...] = ()
    split: str = "test"
    episodes: int | None = 200
    physics: tuple[str, ...] = ()
    perception: str = "vlm"
    agent_config: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0
    bootstrap: int = 1000
    workers: int = 1
    concurrency: int = 1
    max_steps: int | None = None

    def __post_init__(self) -> None:
        if (self.llm is None) == (self.replay is None):
            raise ConfigError("give a model (--llm) or a folder of transcripts to replay (--replay), not both")
        if self.record and self.replay:
            raise ConfigError("--record needs a live model (--llm), not --replay")
        if self.perception not in ("vlm", "gt"):
            raise ConfigError(f"perception must be vlm or gt, got {self.perception!r}")
        if self.table not in TABLES:
            raise ConfigError(f"table must be one of {', '.join(TABLES)}, got {self.table!r}")
        spec = TABLES[self.table]
        for name, default in (("agents", spec.agents), ("tasks", spec.tasks), ("physics", spec.physics)):
            if not getattr(self, name):
                object.__setattr__(self, name, default)
        unknown = set(self.tasks) - set(spec.tasks)
        if unknown:
            raise ConfigError(f"{self.table}: tasks must be among {', '.join(spec.tasks)}, got {list(self.tasks)}")
        if self.llm is not None and set(self.tasks) & set(ORACLE_TASKS) and self.oracle_llm is None:
            raise ConfigError(f"{self.table}: the dialogue task needs the LLM oracle's model (--oracle-llm SPEC)")
        if self.oracle_llm is not None and self.replay is not None:
            raise ConfigError("--oracle-llm needs a live model (--llm); a replay answers from the oracle's transcripts")
        if not self.agents or "perception" in self.agent_config:
            raise ConfigError("give at least one agent; set perception with --perception, not in the agent config")

    def transcript(self, agent: str, task: str) -> Path:
        return Path(self.record or self.replay or ".") / agent / f"{task}.jsonl"

    def llm_spec(self, agent: str, task: str) -> str:
        return f"replay:{self.transcript(agent, task)}" if self.replay else str(self.llm)

    def oracle_transcript(self, agent: str, task: str) -> Path:
        return Path(self.record or self.replay or ".") / agent / f"{task}.oracle.jsonl"

    def oracle_spec(self, agent: str, task: str) -> str | None:
        """The dialogue oracle of a run: the live model, its replayed transcript, or none."""
        if task not in ORACLE_TASKS:
            return None
        return f"replay:{self.oracle_transcript(agent, task)}" if self.replay else self.oracle_llm


def run_zeroshot(config: ZeroShotConfig, *, on_run: Callable[[str, str], None] | None = None) -> dict[str, Any]:
    """Evaluate every agent on every task; write ``table.md`` / ``table.json``; the table object."""
    from vlnverse.eval.running.harness import EvalConfig, evaluate

    out = Path(config.out)
    runs: list[dict[str, Any]] = []
    for agent in config.agents:
        for task in config.tasks:
            if on_run:
                on_run(agent, task)
            record = config.transcript(agent, task) if config.record else None
            if record is not None:
                record.parent.mkdir(parents=True, exist_ok=True)
            result = evaluate(EvalConfig(
                dataset=config.dataset, out=str(out / agent / task), agent=agent,
                agent_config={**config.agent_config, "perception": config.perception}, split=config.split,
                task=task, physics=tuple(config.physics), episodes=config.episodes, seed=config.seed,
                plots=0, bootstrap=config.bootstrap, workers=config.workers, concurrency=config.concurrency,
                max_steps=config.max_steps, llm=config.llm_spec(agent, task),
                llm_record=str(record) if record else None, oracle_llm=config.oracle_spec(agent, task),
                oracle_llm_record=str(config.oracle_transcript(agent, task))
                if record is not None and task in ORACLE_TASKS else None))
            run_file = json.loads((out / agent / task / "run.json").read_text(encoding="utf-8"))["run"]
            runs.append({"agent": agent, "task": task, "run": run_file, "summary": result.summary,
                         "stopped": result.stopped})
    table = {"header": header(config, runs), "rows": [row for r in runs for row in rows_of(r, config.perception)]}
    write_json_atomic(out / "table.json", table)
    write_text_atomic(out / "table.md", markdown(table))
    return table


def header(config: ZeroShotConfig, runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What the numbers stand on: perception, predictor, model, oracle, privileged options,
    episodes, seed, split, physics."""
    predictors = sorted({json.dumps(r["run"].get("waypoint_predictor"), sort_keys=True) for r in runs})
    privileged = sorted({PRIVILEGED_OPTIONS[p] for r in runs for p in r["run"].get("privileged", ())
                         if p in PRIVILEGED_OPTIONS})
    oracle = oracle_name(config) if set(config.tasks) & set(ORACLE_TASKS) else None
    return {"table": config.table, "perception": config.perception + (
                f" ({PRIVILEGED_LABEL})" if config.perception == "gt" else ""),
            "waypoint_predictor": [json.loads(p) for p in predictors], "model": model_name(config),
            "oracle": oracle, "privileged": privileged,
            "episodes_per_task": config.episodes, "split": config.split, "seed": config.seed,
            "physics": list(config.physics), "bootstrap": config.bootstrap,
            "episodes": {f"{r['agent']}/{r['task']}": r["summary"]["episodes"] for r in runs},
            "stopped": sorted({r["stopped"] for r in runs if r["stopped"]})}


def model_name(config: ZeroShotConfig) -> str:
    """The model the numbers come from: the spec's model, or the replayed transcripts' models."""
    if config.llm is not None:
        from vlnverse.llm.factory import describe_llm_spec

        described = describe_llm_spec(config.llm) or {}
        return f"{described.get('backend', '')}:{described.get('target', config.llm)}"
    from vlnverse.llm.transcript import read_transcript

    models = sorted({r["request"]["model"] for path in Path(str(config.replay)).rglob("*.jsonl")
                     if not path.name.endswith(".oracle.jsonl") for r in read_transcript(path)})
    return "replayed " + ", ".join(models or ["(empty transcripts)"])


def oracle_name(config: ZeroShotConfig) -> str:
    """The dialogue oracle's model: the spec's, or the replayed oracle transcripts' models."""
    if config.oracle_llm is not None:
        from vlnverse.llm.factory import describe_llm_spec

        described = describe_llm_spec(config.oracle_llm) or {}
        return f"{described.get('backend', '')}:{described.get('target', config.oracle_llm)}"
    from vlnverse.llm.transcript import read_transcript

    models = sorted({r["request"]["model"] for path in Path(str(config.replay)).rglob("*.oracle.jsonl")
                     for r in read_transcript(path)})
    return "replayed " + ", ".join(models or ["(no oracle transcripts)"])


def rows_of(run: Mapping[str, Any], perception: str) -> list[dict[str, Any]]:
    """One row per physics mode of an (agent, task) run: every column's mean and interval."""
    label = run["agent"] + (f" ({PRIVILEGED_LABEL})" if perception == "gt" else "")
    out = []
    for group in run["summary"].get("overall", []):
        metrics = group.get("metrics", {})
        sr_n = sorted((k for k in metrics if k.startswith("SR_") and k[3:].isdigit()), key=lambda k: int(k[3:]))
        columns = [*COLUMNS, *([*sr_n, "SR_All"] if run["task"] in LONG_HORIZON else [])]
        out.append({"agent": label, "task": run["task"], "physics": group["physics"],
                    "episodes": group.get("n_episodes", 0),
                    "metrics": {c: metrics.get(c) for c in columns}})
    return out


def cell(name: str, metric: Mapping[str, Any] | None) -> str:
    """``mean [low, high]`` (percent for rates), ``-`` where undefined."""
    if not metric or metric.get("mean") is None or metric["mean"] != metric["mean"]:
        return "-"
    scale = 100.0 if name in PERCENT or (name.startswith("SR_") and name[3:].isdigit()) else 1.0
    low, high = metric.get("ci_low"), metric.get("ci_high")
    interval = f" [{low * scale:.1f}, {high * scale:.1f}]" if low == low and high == high and low is not None else ""
    return f"{metric['mean'] * scale:.2f}{interval}"


def markdown(table: Mapping[str, Any]) -> str:
    """The header and the table's blocks as markdown."""
    h = table["header"]
    spec = TABLES[h.get("table", "table5")]
    predictors = "; ".join(", ".join(f"{k}={v}" for k, v in p.items()) if p else "none"
                           for p in h["waypoint_predictor"])
    lines = [f"## Zero-shot LLM agents ({spec.title})", "",
             f"- perception: **{h['perception']}**", f"- waypoint predictor: {predictors}",
             f"- model: {h['model']}",
             *([f"- dialogue oracle: {h['oracle']}"] if h.get("oracle") else []),
             f"- privileged options: {', '.join(h.get('privileged') or []) or 'none'}",
             f"- episodes: {h['episodes_per_task'] or 'all'} sampled per task from split `{h['split']}` "
             f"(seed {h['seed']}); evaluated: " + ", ".join(f"{k} {v}" for k, v in h["episodes"].items()),
             f"- physics: {', '.join(PHYSICS_TITLES.get(p, p) for p in h['physics'])}; "
             f"intervals: 95 % bootstrap ({h['bootstrap']} resamples)"]
    if h["stopped"]:
        lines.append(f"- **incomplete**: {'; '.join(h['stopped'])}")
    lines.append("")
    for title, tasks in spec.blocks:
        rows = [r for r in table["rows"] if r["task"] in tasks]
        if not rows:
            continue
        if set(tasks) & set(ORACLE_TASKS) and h.get("oracle"):
            title += f" (LLM oracle: {h['oracle']})"
        columns = list(dict.fromkeys(c for r in rows for c in r["metrics"]))
        lines += [f"### {title}", "", "| Agent | Task | Physics | n | " + " | ".join(columns) + " |",
                  "|" + "---|" * (len(columns) + 4)]
        for r in rows:
            lines.append(f"| {r['agent']} | {r['task']} | {PHYSICS_TITLES.get(r['physics'], r['physics'])} | "
                         f"{r['episodes']} | " + " | ".join(cell(c, r["metrics"].get(c)) for c in columns) + " |")
        lines.append("")
    return "\n".join(lines)
