"""``vlnverse eval verify``: check an evaluation folder against its dataset by re-running it.

A run's numbers are trusted when anyone can reproduce them from what the folder holds:

1. **Inputs.** The dataset (its manifest and every shard it lists) and the scene files are
   hashed and compared with the checksums ``run.json`` recorded when the run was made.
2. **Records.** Every record of ``episodes.jsonl`` belongs to the run's episode selection and
   agrees with its dataset episode (instruction, scene, split, task, goals, reference path,
   geodesic distance).
3. **Re-simulation.** Each record's recorded actions are replayed through the same harness
   (same env, physics, seeds and scoring, see :class:`RecordedActions`); the replay's
   trajectory, collisions, STOPs, goal distances, ending and every metric must equal the
   record's (continuous actions are stored to 1e-6, so poses get a 1 mm tolerance).
4. **Summary.** ``summary.json`` is recomputed from the records.
5. **Transcript** (LLM agents, optional). The agent is re-run with its model replaced by the
   recorded transcript (``replay:FILE``) and must take the same actions.

The first mismatch is reported with its record and field; :func:`verify_run` returns every
check's outcome and the checksums of what it read.
"""

from __future__ import annotations

import dataclasses
import json
import math
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vlnverse.errors import DatasetError, VLNVerseError
from vlnverse.eval.agent import Agent, Answer, Ask, EpisodeInfo, Inconclusive
from vlnverse.tasks.storage import sha256_file

POSE_TOLERANCE_M = 1e-3
"""Replayed poses may differ from recorded ones by this much (continuous actions are stored to 1e-6)."""
METRIC_TOLERANCE = 1e-3
"""Absolute tolerance on each recomputed metric."""
NATURAL_ENDINGS = ("stop", "collision", "step_budget")
"""Endings the env decides; others (error, timeout, budgets) are the agent's and replay as ``error``."""
EPISODE_FIELDS = ("instruction", "scene_id", "split", "task", "geodesic_distance", "reference_path")
"""Record fields that must equal the dataset episode's."""
REPLAYED_FIELDS = ("actions", "collisions", "stops")
"""Record fields the re-simulation must reproduce exactly."""


class VerificationFailed(VLNVerseError):
    """A record, file or summary does not match what it claims to be."""


@dataclass
class VerifyReport:
    """What :func:`verify_run` checked and read.

    Attributes:
        records: Records checked.
        checksums: ``{path: sha256}`` of every file read (dataset, scenes, run files).
        checks: ``{check name: outcome}``, in the order run.
        mismatches: Every mismatch found (``"<episode> (<physics>): <field>: ..."``).
    """

    records: int = 0
    checksums: dict[str, str] = field(default_factory=dict)
    checks: dict[str, str] = field(default_factory=dict)
    mismatches: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches


def input_checksums(dataset: Any, scene_files: Sequence[str]) -> dict[str, str]:
    """sha256 of a dataset's identity file (its manifest, which lists every shard's sha256, or
    the single episode file) and of each scene file, keyed by a stable name."""
    files = list(getattr(dataset, "files", ()))
    identity = Path(dataset.root) / "manifest.json" if dataset.manifest else (files[0] if len(files) == 1 else None)
    sums = {"dataset": sha256_file(identity)} if identity is not None else {
        f"dataset:{Path(f).name}": sha256_file(f) for f in files}
    for scene in sorted(set(scene_files)):  # bundled and release scenes are <scene_id>/scene.usdc
        sums[f"scene:{Path(scene).parent.name}/{Path(scene).name}"] = sha256_file(scene)
    return sums


class RecordedActions(Agent):
    """Replays the actions of recorded episodes, ending each the way its record ended.

    Built from ``{(episode_id, physics): record}``; its action space is the recorded run's, and
    it needs no sensors (physics and scoring do not depend on rendering). Episodes the
    agent ended itself (error, timeout, budget) end with an error after their last action;
    ``inconclusive`` ones with the recorded reason. The recorded trace (waypoints, debate,
    tokens) is given back, so trace metrics are recomputed from it.
    """

    sensors = ()

    def __init__(self, records: Mapping[tuple[str, str], Mapping[str, Any]], action_space: Any) -> None:
        self.records = dict(records)
        self.action_space = action_space
        self._actions: list[Any] = []
        self._record: Mapping[str, Any] = {}

    def reset(self, episode: EpisodeInfo) -> None:
        self._record = self.records[(episode.episode_id, episode.physics)]
        self._actions = [_action(a) for a in self._record.get("actions") or ()]
        self._actions.reverse()

    def act(self, observation: Mapping[str, Any]) -> Any:
        if self._actions:
            return self._actions.pop()
        if self._record.get("fail_reason") == "inconclusive":
            return Inconclusive(self._record.get("outcome_reason") or "error")
        raise RuntimeError(f"recorded episode ended with {self._record.get('fail_reason')!r}")

    def trace(self) -> Mapping[str, Any] | None:
        trace = dict(self._record.get("agent_trace") or {})
        llm = self._record.get("llm")
        if llm and llm.get("calls"):  # the harness scored the model's usage, not the trace's
            trace["tokens"] = {"prompt": llm["prompt_tokens"], "completion": llm["completion_tokens"]}
            trace["cost"] = llm.get("cost_usd")
        return trace or None


def _action(value: Any) -> Any:
    """A recorded action (JSON) as the agent returned it."""
    if isinstance(value, Mapping) and "ask" in value:
        return Ask(str(value["ask"]))
    if isinstance(value, Mapping) and "answer" in value:
        return Answer(_action(value["answer"]))
    if isinstance(value, list):
        return np.asarray(value, dtype=np.float32)
    return value


def _first_difference(recorded: Any, replayed: Any, path: str, tolerance: float) -> str | None:
    """Where two JSON values differ (numbers within ``tolerance``), or ``None``."""
    if isinstance(recorded, Mapping) and isinstance(replayed, Mapping):
        for key in sorted(set(recorded) | set(replayed)):
            found = _first_difference(recorded.get(key), replayed.get(key), f"{path}.{key}", tolerance)
            if found:
                return found
        return None
    if isinstance(recorded, list) and isinstance(replayed, list):
        if len(recorded) != len(replayed):
            return f"{path}: {len(recorded)} items recorded, {len(replayed)} now"
        for index, (a, b) in enumerate(zip(recorded, replayed, strict=True)):
            found = _first_difference(a, b, f"{path}[{index}]", tolerance)
            if found:
                return found
        return None
    numbers = (int, float)
    if isinstance(recorded, numbers) and isinstance(replayed, numbers) and not isinstance(recorded, bool):
        if math.isclose(recorded, replayed, rel_tol=0.0, abs_tol=tolerance):
            return None
        return f"{path}: recorded {recorded!r}, now {replayed!r}"
    return None if recorded == replayed else f"{path}: recorded {_short(recorded)}, now {_short(replayed)}"


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def _label(record: Mapping[str, Any]) -> str:
    return f"{record.get('episode_id')} ({record.get('physics')})"


def compare_records(recorded: Mapping[str, Any], replayed: Mapping[str, Any]) -> str | None:
    """The first field where a re-simulated record differs from the recorded one, or ``None``."""
    label = _label(recorded)
    for name in REPLAYED_FIELDS:
        found = _first_difference(recorded.get(name), replayed.get(name), name, 0.0)
        if found:
            return f"{label}: {found}"
    for name in ("trajectory", "headings", "goal_distances"):
        found = _first_difference(recorded.get(name), replayed.get(name), name, POSE_TOLERANCE_M)
        if found:
            return f"{label}: {found}"
    ending = recorded.get("fail_reason")
    if ending in NATURAL_ENDINGS and replayed.get("fail_reason") != ending:
        return f"{label}: fail_reason: recorded {ending!r}, now {replayed.get('fail_reason')!r}"
    found = _first_difference(recorded.get("metrics"), replayed.get("metrics"), "metrics", METRIC_TOLERANCE)
    if found:
        return f"{label}: {found}"
    if ending in NATURAL_ENDINGS:
        for name in ("answer", "correct", "outcome", "outcome_reason", "stop_visible"):
            found = _first_difference(recorded.get(name), replayed.get(name), name, 0.0)
            if found:
                return f"{label}: {found}"
    return None


def check_against_dataset(record: Mapping[str, Any], episode: Any) -> str | None:
    """The first record field that disagrees with its dataset episode, or ``None``."""
    expected = {"instruction": episode.instruction.text, "scene_id": episode.scene_id, "split": episode.split,
                "task": episode.task, "geodesic_distance": episode.geodesic_distance,
                "reference_path": [list(p) for p in episode.reference_path],
                "goals": [list(g.position) for g in episode.goals]}
    actual = {name: record.get(name) for name in EPISODE_FIELDS}
    actual["goals"] = [g.get("position") if isinstance(g, Mapping) else g for g in record.get("goals") or ()]
    for name, value in expected.items():
        if _first_difference(value, actual[name], name, 1e-9):
            return f"{_label(record)}: {name} differs from the dataset (record {_short(actual[name])}, " \
                   f"dataset {_short(value)})"
    return None


def _read_run(out: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from vlnverse.eval.harness import EPISODES_FILE, RUN_FILE

    try:
        run = json.loads((out / RUN_FILE).read_text(encoding="utf-8"))["run"]
    except FileNotFoundError:
        raise DatasetError(f"{out} is not an evaluation folder (no {RUN_FILE})") from None
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise VerificationFailed(f"{out / RUN_FILE} is not a valid run file: {exc}") from exc
    records = []
    path = out / EPISODES_FILE
    if not path.is_file():
        raise DatasetError(f"{out} has no {EPISODES_FILE}")
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise VerificationFailed(f"{path}:{number}: not a JSON record ({exc})") from exc
        if not isinstance(record, dict) or "episode_id" not in record or "physics" not in record:
            raise VerificationFailed(f"{path}:{number}: not an episode record")
        records.append(record)
    return run, records


def _replay_config(run: Mapping[str, Any], out: Path, dataset: str, scenes_dir: str, workers: int) -> Any:
    """The :class:`EvalConfig` that re-runs ``run`` (its selection, physics, seeds, scoring)."""
    from vlnverse.eval.harness import EvalConfig

    return EvalConfig(dataset=dataset, out=str(out), agent=str(run["agent"]), split=run["split"], task=run["task"],
                      physics=tuple(run["physics"]), episodes=run.get("episodes"), seed=int(run["seed"]),
                      max_steps=run.get("max_steps"), success_distance=float(run["success_distance"]),
                      instruction_view=run.get("instruction_view", "full"), plots=0, workers=workers,
                      backend=run.get("backend", "bullet"), episode_timeout=None, scenes_dir=scenes_dir,
                      metrics=_metrics_config(run.get("trace_metrics") or {}))


def _metrics_config(trace_metrics: Mapping[str, Any]) -> Any:
    """The scoring settings of ``run.json``'s ``trace_metrics`` (``aori.NAME`` and ``debate_max_rounds``)."""
    from vlnverse.eval.episode_record import MetricsConfig
    from vlnverse.eval.trace_metrics import AORIParams

    aori = {name.split(".", 1)[1]: value for name, value in trace_metrics.items() if name.startswith("aori.")}
    return MetricsConfig(aori=AORIParams(**aori),
                         debate_max_rounds=int(trace_metrics.get("debate_max_rounds", MetricsConfig().debate_max_rounds)))


def _recorded_action_space(run: Mapping[str, Any]) -> Any:
    """The recorded run's action space (``run.json``, or its agent rebuilt from the registry)."""
    if run.get("action_space") is not None:
        return run["action_space"]
    from vlnverse.eval.worker import RunSpec, build_agent

    agent = build_agent(RunSpec(agent=run["agent"], agent_config=dict(run.get("agent_config") or {})))
    try:
        return agent.action_space
    finally:
        agent.close()


def verify_run(out: str | Path, *, dataset: str | Path | None = None, scenes_dir: str | Path | None = None,
               transcript: str | Path | None = None, workers: int = 1, on_check: Callable[[str, str], None] | None = None) -> VerifyReport:
    """Check the evaluation folder ``out`` (see the module docs).

    Args:
        out: The evaluation folder.
        dataset: The dataset (default: the one ``run.json`` names).
        scenes_dir: Where its scene paths are relative to (default: ``run.json``'s).
        transcript: An LLM transcript (``--llm-record`` file) to re-run the agent from.
        workers: Processes for the re-simulation.
        on_check: Called with ``(check, outcome)`` as each check ends.

    Raises:
        VerificationFailed: a file cannot be read as what it should be.
        DatasetError: no evaluation folder, or no dataset.
    """
    from vlnverse.eval.harness import EPISODES_FILE, RUN_FILE, evaluate, select_episodes
    from vlnverse.eval.report import summarize
    from vlnverse.tasks.dataset import EpisodeDataset
    from vlnverse.tasks.storage import verify_dataset

    out = Path(out)
    report = VerifyReport()

    def done(check: str, problems: list[str], detail: str = "") -> None:
        report.mismatches.extend(problems)
        report.checks[check] = f"FAIL: {problems[0]}" if problems else f"ok{detail}"
        if on_check:
            on_check(check, report.checks[check])

    run, records = _read_run(out)
    report.records = len(records)
    for name in (RUN_FILE, EPISODES_FILE, "summary.json"):
        if (out / name).is_file():
            report.checksums[name] = sha256_file(out / name)
    dataset_path = str(dataset or run["dataset"])
    data = EpisodeDataset.open(dataset_path, scenes_dir=scenes_dir or run.get("scenes_dir"))
    episodes = select_episodes(data, run["split"], run["task"], run.get("episodes"), int(run["seed"]))
    by_id = {e.episode_id: e for e in episodes}
    scenes = sorted({str(data.scene_file(e)) for e in episodes})
    read = input_checksums(data, scenes)
    report.checksums.update(read)
    problems = verify_dataset(data.root) if data.manifest else []
    recorded = run.get("inputs")
    if recorded is None:
        done("inputs", problems, " (run.json has no checksums: made before they were recorded)")
    else:
        problems += [f"{name}: sha256 {read.get(name, 'missing')[:12]} now, {digest[:12]} when the run was made"
                     for name, digest in sorted(recorded.items()) if read.get(name) != digest]
        done("inputs", problems)
    if report.mismatches:  # the harness refuses a dataset that does not match its manifest
        return report

    wanted = {(e.episode_id, p) for e in episodes for p in run["physics"]}
    problems, seen = [], set()
    for record in records:
        key = (str(record["episode_id"]), str(record["physics"]))
        if key in seen:
            problems.append(f"{_label(record)}: recorded twice")
        elif key not in wanted:
            problems.append(f"{_label(record)}: not in the run's episode selection")
        else:
            found = check_against_dataset(record, by_id[key[0]])
            if found:
                problems.append(found)
        seen.add(key)
    done("records", problems, f" ({len(records)} of {len(wanted)} selected)")

    keyed = {(str(r["episode_id"]), str(r["physics"])): r for r in records}
    replayed = _replay(run, dataset_path, str(data.scenes_dir), keyed, workers)
    problems = [found for key, record in keyed.items() if key in replayed
                for found in [compare_records(record, replayed[key])] if found]
    done("resimulation", problems, f" ({len(replayed)} episodes re-simulated)")

    summary_path = out / "summary.json"
    if summary_path.is_file():
        stored = json.loads(summary_path.read_text(encoding="utf-8"))
        again = json.loads(json.dumps(summarize(records, stored.get("run", run), seed=int(run["seed"])), default=str))
        found = _first_difference(_comparable_summary(stored), _comparable_summary(again), "summary", 1e-9)
        done("summary", [found] if found else [])

    if transcript is not None:
        with tempfile.TemporaryDirectory(prefix="vlnverse-verify-") as tmp:
            config = dataclasses.replace(_replay_config(run, Path(tmp), dataset_path, str(data.scenes_dir), workers),
                                         agent_config=dict(run.get("agent_config") or {}),
                                         llm=f"replay:{Path(transcript).resolve()}")
            rerun = {(r["episode_id"], r["physics"]): r for r in evaluate(config).records}
        problems = [f"{_label(record)}: {found}" for key, record in keyed.items()
                    for found in [_first_difference(record.get("actions"), (rerun.get(key) or {}).get("actions"),
                                                    "actions", 0.0)] if found]
        report.checksums[f"transcript:{Path(transcript).name}"] = sha256_file(transcript)
        done("transcript", problems, f" ({len(rerun)} episodes re-run from the transcript)")
    return report


def _comparable_summary(summary: Mapping[str, Any]) -> dict[str, Any]:
    """A summary without the parts that describe the invocation rather than the records."""
    return {k: v for k, v in summary.items() if k not in ("run", "timing", "llm_budget")}


def _replay(run: Mapping[str, Any], dataset: str, scenes_dir: str,
            records: Mapping[tuple[str, str], Mapping[str, Any]], workers: int) -> dict[tuple[str, str], dict[str, Any]]:
    """Re-simulate ``records`` through the harness with :class:`RecordedActions`."""
    from vlnverse.eval.harness import evaluate

    agent = RecordedActions(records, _recorded_action_space(run))
    with tempfile.TemporaryDirectory(prefix="vlnverse-verify-") as tmp:
        result = evaluate(_replay_config(run, Path(tmp), dataset, scenes_dir, workers), agent=agent)
    return {(str(r["episode_id"]), str(r["physics"])): r for r in result.records}
