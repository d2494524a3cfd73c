"""Records under test: against their dataset episodes, and against their re-simulation.

:class:`RecordedActions` replays a record's actions through the harness (same env, physics,
seeds and scoring); :func:`compare_records` says where the replay differs from the record,
:func:`check_against_dataset` where a record differs from its dataset episode.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from vlnverse.eval.agent import Agent, Answer, Ask, EpisodeInfo, Inconclusive

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


def first_difference(recorded: Any, replayed: Any, path: str, tolerance: float) -> str | None:
    """Where two JSON values differ (numbers within ``tolerance``), or ``None``."""
    if isinstance(recorded, Mapping) and isinstance(replayed, Mapping):
        for key in sorted(set(recorded) | set(replayed)):
            found = first_difference(recorded.get(key), replayed.get(key), f"{path}.{key}", tolerance)
            if found:
                return found
        return None
    if isinstance(recorded, list) and isinstance(replayed, list):
        if len(recorded) != len(replayed):
            return f"{path}: {len(recorded)} items recorded, {len(replayed)} now"
        for index, (a, b) in enumerate(zip(recorded, replayed, strict=True)):
            found = first_difference(a, b, f"{path}[{index}]", tolerance)
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


def record_label(record: Mapping[str, Any]) -> str:
    return f"{record.get('episode_id')} ({record.get('physics')})"


def compare_records(recorded: Mapping[str, Any], replayed: Mapping[str, Any]) -> str | None:
    """The first field where a re-simulated record differs from the recorded one, or ``None``."""
    label = record_label(recorded)
    for name in REPLAYED_FIELDS:
        found = first_difference(recorded.get(name), replayed.get(name), name, 0.0)
        if found:
            return f"{label}: {found}"
    for name in ("trajectory", "headings", "goal_distances"):
        found = first_difference(recorded.get(name), replayed.get(name), name, POSE_TOLERANCE_M)
        if found:
            return f"{label}: {found}"
    ending = recorded.get("fail_reason")
    if ending in NATURAL_ENDINGS and replayed.get("fail_reason") != ending:
        return f"{label}: fail_reason: recorded {ending!r}, now {replayed.get('fail_reason')!r}"
    found = first_difference(recorded.get("metrics"), replayed.get("metrics"), "metrics", METRIC_TOLERANCE)
    if found:
        return f"{label}: {found}"
    if ending in NATURAL_ENDINGS:
        for name in ("answer", "correct", "outcome", "outcome_reason", "stop_visible"):
            found = first_difference(recorded.get(name), replayed.get(name), name, 0.0)
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
    goals = record.get("goals")
    actual["goals"] = [g.get("position") if isinstance(g, Mapping) else g for g in goals] \
        if isinstance(goals, list) else goals
    for name, value in expected.items():
        if first_difference(value, actual[name], name, 1e-9):
            return f"{record_label(record)}: {name} differs from the dataset (record {_short(actual[name])}, " \
                   f"dataset {_short(value)})"
    return None


def replay_groups(records: Mapping[tuple[str, str], Any]) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """``(physics modes, episode ids)`` groups covering exactly the keys of ``records``."""
    by_mode: dict[str, set[str]] = {}
    for episode_id, physics in records:
        by_mode.setdefault(physics, set()).add(episode_id)
    groups: dict[tuple[str, ...], list[str]] = {}
    for physics, ids in by_mode.items():
        groups.setdefault(tuple(sorted(ids)), []).append(physics)
    return [(tuple(modes), ids) for ids, modes in groups.items()]
