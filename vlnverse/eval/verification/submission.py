"""An evaluation folder as ``eval verify`` reads it: data to check, never code to run.

:func:`read_submission` reads ``run.json`` and ``episodes.jsonl`` through
:mod:`vlnverse.eval.verification.untrusted` and checks every ``run.json`` field verify uses for its kind
and range (:class:`RecordedRun`). Nothing it reads is imported or opened as a path: the
action space must be one of the simulator's (:data:`vlnverse.sim.actions.ACTION_SPACES`),
the backend and physics modes registered names, the scoring settings numbers. A field the
harness does not write (:data:`RUN_FIELDS`, :data:`RECORD_FIELDS`) is refused, not ignored:
what a verified folder holds was checked, and each record field has the kind the harness
writes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlnverse.errors import ConfigError, DatasetError
from vlnverse.eval.verification.untrusted import MalformedInput, read_json, read_json_lines

RUN_FILE = "run.json"
EPISODES_FILE = "episodes.jsonl"
SHA256 = re.compile(r"[0-9a-f]{64}")
BACKEND_NAMES = ("auto", "bullet", "isaac")
RUN_FIELDS = ("agent", "label", "agent_config", "dataset", "split", "task", "physics", "physics_hz", "episodes",
              "seed", "max_steps", "success_distance", "backend", "instruction_view", "concurrency",
              "episode_timeout", "privileged", "agent_settings", "fallback_warning", "trace_metrics",
              "action_space", "scenes_dir", "inputs", "checkpoints", "waypoint_predictor", "llm", "llm_cache",
              "llm_record", "budget_tokens", "budget_usd", "llm_features", "oracle_llm", "oracle_llm_record",
              "training_data", "served_agent")
"""The fields of ``run.json``'s ``run`` the harness writes."""
_TEXT = (str, type(None))
RECORD_FIELDS: dict[str, tuple[type, ...]] = {
    "episode_id": (str,), "task": (str,), "split": (str,), "physics": (str,), "scene_id": (str,),
    "instruction": (str,), "geodesic_distance": (int, float, type(None)), "metrics": (dict,),
    "trajectory": (list,), "headings": (list,), "reference_path": (list,), "goals": (list,),
    "goal_distances": (list,), "actions": (list,), "collisions": (list,), "hits": (dict,),
    "action_space": _TEXT, "stops": (list,), "fail_reason": _TEXT, "error": _TEXT, "error_source": _TEXT,
    "agent_trace": (dict, type(None)), "llm": (dict,), "stop_visible": (list,), "outcome": _TEXT,
    "outcome_reason": _TEXT, "answer": (int, type(None)), "answer_correct": (bool,), "plot": _TEXT}
"""The fields of an episode record (``episodes.jsonl``) and their JSON kinds."""


@dataclass(frozen=True)
class RecordedRun:
    """The settings of ``run.json`` that verify uses, each checked (see the module docs).

    Attributes:
        raw: The ``run`` object as read (compared with ``summary.json``'s).
        agent: The agent's name as recorded (a label unless ``--rerun`` re-runs it).
        agent_config: Its config mapping (data only).
        split, task: The run's own selection (names or ``all``; comma lists allowed).
        physics: Its physics modes.
        episodes: Its sample size (``None``: all).
        seed: Its seed.
        max_steps, success_distance, instruction_view, backend: Its scoring settings.
        action_space: The action space its actions are in (a name or ``{"name", ...}``).
        trace_metrics: ``run.json``'s trace-metric settings.
        inputs: ``{name: sha256}`` of the dataset and scenes it read (``None``: not recorded).
        checkpoints: ``{agent config key: sha256}`` of the weights files its agent read.
    """

    raw: dict[str, Any]
    agent: str
    agent_config: dict[str, Any]
    split: str
    task: str
    physics: tuple[str, ...]
    episodes: int | None
    seed: int
    max_steps: int | None
    success_distance: float
    instruction_view: str
    backend: str
    action_space: Any
    trace_metrics: dict[str, Any]
    inputs: dict[str, str] | None
    checkpoints: dict[str, str]

    def metrics_config(self) -> Any:
        """The :class:`~vlnverse.eval.scoring.metrics.MetricsConfig` of ``trace_metrics`` (AORI, ``R_max``)."""
        from vlnverse.config import config_from_mapping
        from vlnverse.eval.scoring.episode_record import MetricsConfig
        from vlnverse.eval.scoring.trace_metrics import AORIParams

        aori = {k.split(".", 1)[1]: v for k, v in self.trace_metrics.items() if k.startswith("aori.")}
        rounds = self.trace_metrics.get("debate_max_rounds", MetricsConfig().debate_max_rounds)
        return MetricsConfig(aori=config_from_mapping(AORIParams, aori, where=f"{RUN_FILE} trace_metrics"),
                             debate_max_rounds=int(rounds))


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _field(run: Mapping[str, Any], name: str, valid: Any, kind: str, default: Any = ...) -> Any:
    """``run[name]`` when ``valid(value)`` (``default`` when absent and one is given)."""
    if name not in run:
        if default is ...:
            raise MalformedInput(f"{RUN_FILE}: no {name!r}")
        return default
    value = run[name]
    if not valid(value):
        raise MalformedInput(f"{RUN_FILE}: {name!r} must be {kind}, got {str(value)[:80]!r}")
    return value


def _digests(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) and SHA256.fullmatch(v)
                                           for k, v in value.items())


def _action_space(value: Any) -> Any:
    """``value`` when it names one of the simulator's action spaces (with valid parameters)."""
    from vlnverse.sim.actions import make_action_space

    if not isinstance(value, (str, dict)):
        raise MalformedInput(f"{RUN_FILE}: 'action_space' must name an action space, got {str(value)[:80]!r}; "
                             "verify replays actions in the simulator's own spaces and never builds the agent")
    try:
        make_action_space(value)
    except ConfigError as exc:
        raise MalformedInput(f"{RUN_FILE}: 'action_space': {exc}") from None
    return value


def recorded_run(raw: Any) -> RecordedRun:
    """The checked settings of a ``run.json`` ``run`` object.

    Raises:
        MalformedInput: a field verify needs is missing or of the wrong kind.
    """
    from vlnverse.envs.episode import INSTRUCTION_VIEWS
    from vlnverse.sim.physics import physics_mode

    if not isinstance(raw, dict):
        raise MalformedInput(f"{RUN_FILE}: 'run' must be an object")
    unknown = sorted(set(raw) - set(RUN_FIELDS))
    if unknown:
        raise MalformedInput(f"{RUN_FILE}: unknown field {unknown[0][:80]!r} in 'run' (verify refuses what it "
                             "cannot check)")
    text = (lambda v: isinstance(v, str) and 0 < len(v) <= 200, "a name")
    physics = _field(raw, "physics", lambda v: isinstance(v, list) and v and all(isinstance(p, str) for p in v),
                     "a list of physics modes")
    try:
        modes = tuple(physics_mode(p) for p in physics)
    except ConfigError as exc:
        raise MalformedInput(f"{RUN_FILE}: 'physics': {exc}") from None
    trace = _field(raw, "trace_metrics", lambda v: isinstance(v, dict) and all(
        isinstance(k, str) and (x is None or _number(x)) for k, x in v.items()), "an object of numbers", {})
    return RecordedRun(
        raw=raw, agent=_field(raw, "agent", *text),
        agent_config=_field(raw, "agent_config", lambda v: isinstance(v, dict), "an object", {}),
        split=_field(raw, "split", *text), task=_field(raw, "task", *text), physics=modes,
        episodes=_field(raw, "episodes", lambda v: v is None or (_integer(v) and v > 0), "a positive integer or null"),
        seed=_field(raw, "seed", lambda v: _integer(v) and v >= 0, "a non-negative integer"),
        max_steps=_field(raw, "max_steps", lambda v: v is None or (_integer(v) and v > 0),
                         "a positive integer or null", None),
        success_distance=float(_field(raw, "success_distance", lambda v: _number(v) and v > 0, "a positive number")),
        instruction_view=_field(raw, "instruction_view", lambda v: v in INSTRUCTION_VIEWS,
                                f"one of {', '.join(INSTRUCTION_VIEWS)}", "full"),
        backend=_field(raw, "backend", lambda v: v in BACKEND_NAMES, f"one of {', '.join(BACKEND_NAMES)}", "bullet"),
        action_space=_action_space(raw.get("action_space")),
        trace_metrics=trace,
        inputs=_field(raw, "inputs", lambda v: v is None or _digests(v), "{name: sha256}", None),
        checkpoints=_field(raw, "checkpoints", _digests, "{key: sha256}", {}),
    )


def read_submission(out: Path) -> tuple[RecordedRun, list[dict[str, Any]]]:
    """``run.json``'s checked settings and the records of ``episodes.jsonl``.

    Raises:
        DatasetError: ``out`` is not an evaluation folder.
        MalformedInput: a file cannot be read as what it should be.
    """
    for name in (RUN_FILE, EPISODES_FILE):
        if not (out / name).exists() and not (out / name).is_symlink():
            raise DatasetError(f"{out} is not an evaluation folder (no {name})")
    document = read_json(out / RUN_FILE)
    if not isinstance(document, dict) or "run" not in document or set(document) - {"run", "fingerprint"}:
        raise MalformedInput(f"{out / RUN_FILE}: expected an object of 'run' (and 'fingerprint') only")
    run = recorded_run(document["run"])
    records = []
    for number, record in read_json_lines(out / EPISODES_FILE):
        problem = _record_problem(record)
        if problem:
            raise MalformedInput(f"{out / EPISODES_FILE}:{number}: {problem}")
        records.append(record)
    return run, records


def _record_problem(record: Any) -> str | None:
    """Why ``record`` is not an episode record as the harness writes one, or ``None``."""
    if not isinstance(record, dict) or not isinstance(record.get("episode_id"), str) \
            or not isinstance(record.get("physics"), str):
        return "not an episode record"
    for name, value in record.items():
        kinds = RECORD_FIELDS.get(name)
        if kinds is None:
            return f"unknown field {name[:80]!r} (verify refuses what it cannot check)"
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            return f"field {name!r} must be {' or '.join(k.__name__ for k in kinds)}, got {type(value).__name__}"
    return None
