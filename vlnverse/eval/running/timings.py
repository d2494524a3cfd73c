"""Where each episode's wall time went, kept beside its record: ``timings.jsonl`` in the run
folder (a line per episode run, appended as records are; a re-run episode adds a line) and
one line of means for the terminal.

A line holds ``episode_id``, ``physics`` and the seconds of
:class:`~vlnverse.eval.running.runner.EpisodeTiming`: ``build`` (getting the env) and ``built``
(whether one was built), ``agent`` (the agent, a served policy's replies included), ``env``
(the simulator), ``waited`` (for the env lock), ``harness`` and ``total``. Timings differ
from run to run, so they stay out of ``episodes.jsonl``, whose records are reproducible.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

TIMINGS_FILE = "timings.jsonl"
PHASES = ("build", "agent", "env", "waited")
"""The phases the terminal line reports (means over the episodes run)."""


def timing_row(record: Mapping[str, Any], timing: Any) -> dict[str, Any]:
    """The ``timings.jsonl`` line of ``record``'s episode, ``timing`` an ``EpisodeTiming``."""
    return {"episode_id": record["episode_id"], "physics": record["physics"], "build": timing.build,
            "built": timing.built, "agent": timing.agent, "env": timing.env, "waited": timing.waited,
            "harness": timing.harness, "total": timing.total}


def append_timing(out: Path, row: Mapping[str, Any]) -> None:
    """Add ``row`` to the run folder's ``timings.jsonl``."""
    with (out / TIMINGS_FILE).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(row, sort_keys=True) + "\n")


def timing_line(timings: Sequence[Mapping[str, Any]]) -> str | None:
    """One line of the mean seconds per phase over ``timings`` (None when there are none)."""
    if not timings:
        return None
    means = ", ".join(f"{name} {sum(t[name] for t in timings) / len(timings):.2f} s" for name in PHASES)
    built = sum(bool(t["built"]) for t in timings)
    return f"time per episode (mean of {len(timings)}, {built} env(s) built): {means}; each in {TIMINGS_FILE}"
