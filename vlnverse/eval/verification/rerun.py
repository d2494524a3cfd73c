"""``eval verify --rerun``: re-run the recorded agent from trusted parts and compare its actions.

Only agents of this package whose every action follows from what the verifier holds are
re-run, each built by its registered name (never a name or path the folder gives):

- ``random``, ``forward``, ``oracle``: from the recorded agent config and seed (an
  episode's randomness is derived from the run seed, the episode and the physics mode);
- checkpoint agents (``seq2seq``, ``cma``, ``gama``, ``waypoint_bert``): from the
  verifier's copy of each weights file, whose sha256 must equal the one ``run.json``
  recorded (:func:`vlnverse.eval.running.inputs.checkpoint_checksums`);
- LLM agents: with their model replaced by the run's transcript (``replay:FILE``).

Any other agent (``module:attr``, a file, ``replay``) cannot be re-run: the check fails and
says so. The agent config is data, built from an allow-list: its keys must be settings of the
agent's config class, and its values numbers, booleans, ``null`` or plain names (no
``module:attr``, no path); its weights-file keys are replaced by the verifier's files (an
unrecorded one is refused) and an LLM agent's ``llm`` by the transcript.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from vlnverse.errors import ConfigError
from vlnverse.eval.running.inputs import is_checkpoint_key
from vlnverse.eval.verification.records import (
    METRIC_TOLERANCE,
    first_difference,
    record_label,
    replay_groups,
)
from vlnverse.eval.verification.submission import RUN_FILE, RecordedRun
from vlnverse.eval.verification.untrusted import FILE_CAPS, read_json, read_json_lines, regular_file
from vlnverse.tasks.storage import sha256_file

SEEDED_AGENTS = ("random", "forward", "oracle")
CHECKPOINT_AGENTS = ("seq2seq", "cma", "gama", "waypoint_bert")
TRANSCRIPT_AGENTS = ("text_history", "text_history_cot", "map_history", "map_history_cot", "discussnav",
                     "dscd_nav", "arna")
RERUN_AGENTS = (*SEEDED_AGENTS, *CHECKPOINT_AGENTS, *TRANSCRIPT_AGENTS)
"""The agents ``--rerun`` re-runs, by registered name."""
USAGE_FIELDS = ("calls", "prompt_tokens", "completion_tokens", "tokens", "cost_usd")
"""The model usage of a record (``llm``) a transcript re-run must reproduce."""


PLAIN_NAME = re.compile(r"[A-Za-z0-9_.+\- ]{0,200}(:[0-9]+)?")
"""A string setting verify re-runs with: a name, optionally ``:N`` (``cuda:0``); never ``module:attr``
(an attribute name never starts with a digit) nor a path."""


class CannotRerun(Exception):
    """The recorded agent cannot be rebuilt from trusted parts (the check fails with this)."""


def allowed_config(agent: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """The recorded agent config of the registered ``agent`` when every key is one of its
    settings and every value plain data (weights files and ``llm``, replaced by the verifier's
    parts, are left out).

    Raises:
        CannotRerun: a key the agent has no setting of, or a value that could name code or a file.
    """
    from vlnverse.eval.registry import AGENTS

    config_class = getattr(AGENTS.get(agent), "config_class", None)
    settings = {f.name for f in dataclasses.fields(config_class)} if config_class else set()
    kept = {}
    for key, value in config.items():
        if key not in settings:
            raise CannotRerun(f"agent config {key!r} is not a setting of {agent}")
        if is_checkpoint_key(key) or (key == "llm" and agent in TRANSCRIPT_AGENTS):
            continue
        found = _not_plain(value)
        if found is not None:
            raise CannotRerun(f"agent config {key!r}: {found[:80]!r} is not a plain setting (verify never "
                              "imports a module or opens a file the folder names)")
        kept[key] = value
    return kept


def _not_plain(value: Any) -> str | None:
    """The first part of ``value`` that is not a number, boolean, null or plain name, or ``None``."""
    if isinstance(value, Mapping):
        return next((found for k, v in value.items() for found in (_not_plain(k), _not_plain(v)) if found), None)
    if isinstance(value, list):
        return next((found for v in value if (found := _not_plain(v)) is not None), None)
    if isinstance(value, str):
        return None if PLAIN_NAME.fullmatch(value) else value
    if value is None or isinstance(value, (bool, int)) or (isinstance(value, float) and math.isfinite(value)):
        return None
    return repr(value)


def rerun_settings(run: RecordedRun, *, transcript: Path | None,
                   checkpoints: Mapping[str, Path]) -> tuple[dict[str, Any], str | None, dict[str, str]]:
    """The agent config, model spec and ``{name: sha256}`` of the verifier's files to re-run
    ``run``'s agent with.

    Raises:
        CannotRerun: the agent is not one verify re-runs, or a weights file's sha256 is not the
            recorded one (or was not recorded).
        ConfigError: the verifier did not give a file the re-run needs (a checkpoint, the transcript),
            or gave one it does not take.
    """
    if run.agent not in RERUN_AGENTS:
        raise CannotRerun(f"agent {run.agent!r} is not one verify can re-run (only {', '.join(RERUN_AGENTS)}); "
                          "its actions are checked for consistency only")
    config = allowed_config(run.agent, run.agent_config)
    read: dict[str, str] = {}
    for key in sorted(k for k, v in run.agent_config.items() if is_checkpoint_key(k) and v is not None):
        recorded = run.checkpoints.get(key)
        if recorded is None:
            raise CannotRerun(f"agent config {key!r} names a weights file whose sha256 run.json does not record")
        given = checkpoints.get(key)
        if given is None:
            flag = "--checkpoint FILE" if key == "checkpoint" else f"--checkpoint {key}=FILE"
            raise ConfigError(f"--rerun of {run.agent} needs your copy of its {key} ({flag}; the run used "
                              f"sha256 {recorded})")
        regular_file(Path(given))
        digest = read[f"checkpoint:{key}"] = sha256_file(given)
        if digest != recorded:
            raise CannotRerun(f"{key}: your copy has sha256 {digest[:12]}, the run recorded {recorded[:12]}")
        config[key] = str(Path(given).resolve())
    unused = sorted(set(checkpoints) - {k for k in config if is_checkpoint_key(k) and config[k] is not None})
    if unused:
        raise ConfigError(f"--checkpoint {unused[0]}: the agent config has no such weights file")
    llm = None
    if transcript is not None and run.agent not in TRANSCRIPT_AGENTS:
        raise ConfigError(f"--transcript: {run.agent} is not an LLM agent; its re-run takes no transcript")
    if run.agent in TRANSCRIPT_AGENTS:
        if transcript is None:
            raise ConfigError(f"--rerun of the LLM agent {run.agent} needs its transcript (--transcript FILE)")
        for _ in read_json_lines(transcript, FILE_CAPS["transcript.jsonl"]):  # the submitter's file: checked first
            pass
        read[f"transcript:{Path(transcript).name}"] = sha256_file(transcript)
        llm = f"replay:{Path(transcript).resolve()}"
    return config, llm, read


def rerun_actions(run: RecordedRun, records: Mapping[tuple[str, str], Mapping[str, Any]],
                  make_config: Callable[..., Any], *, transcript: Path | None,
                  checkpoints: Mapping[str, Path]) -> tuple[list[str], int, dict[str, str]]:
    """Re-run ``run``'s agent on the episodes of ``records`` and compare every action.

    ``make_config(out, physics, episode_ids)`` is the :class:`~vlnverse.eval.running.harness.EvalConfig`
    that replays those episodes with the run's settings. Returns the mismatches (one per
    differing record), how many records were re-run and the checksums of the files read.
    """
    from vlnverse.eval.running.harness import evaluate

    config_mapping, llm, read = rerun_settings(run, transcript=transcript, checkpoints=checkpoints)
    rerun: dict[tuple[str, str], dict[str, Any]] = {}
    for physics, ids in replay_groups(records):
        with tempfile.TemporaryDirectory(prefix="vlnverse-rerun-") as tmp:
            config = dataclasses.replace(make_config(Path(tmp), physics, ids), agent=run.agent,
                                         agent_config=config_mapping, llm=llm)
            rerun.update({(r["episode_id"], r["physics"]): r for r in evaluate(config).records})
            trained_on = read_json(Path(tmp) / RUN_FILE)["run"].get("training_data")
    problems = []
    if rerun and trained_on != run.raw.get("training_data"):  # the label's "+aug" rests on it
        problems.append(f"{RUN_FILE} training_data {json.dumps(run.raw.get('training_data'))[:120]} is not the "
                        f"re-run checkpoint's {json.dumps(trained_on)[:120]}")
    for key, record in records.items():
        again = rerun.get(key)
        found = "not re-run" if again is None else _rerun_difference(record, again)
        if found:
            problems.append(f"{record_label(record)}: {found} (re-run {run.agent})")
    return problems, sum(key in rerun for key in records), read


def _rerun_difference(record: Mapping[str, Any], again: Mapping[str, Any]) -> str | None:
    """Where the re-run record ``again`` differs from ``record``: actions, trace, model usage
    (when recorded) or metrics, or ``None``."""
    recorded_usage = {k: v for k, v in (record.get("llm") or {}).items() if k in USAGE_FIELDS}
    rerun_usage = {k: v for k, v in (again.get("llm") or {}).items() if k in USAGE_FIELDS and "llm" in record}
    return first_difference(record.get("actions"), again.get("actions"), "actions", 0.0) \
        or first_difference(record.get("agent_trace"), again.get("agent_trace"), "agent_trace", 0.0) \
        or first_difference(recorded_usage, rerun_usage, "llm", 0.0) \
        or first_difference(record.get("metrics"), again.get("metrics"), "metrics", METRIC_TOLERANCE)

