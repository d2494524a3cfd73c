"""Table 3 on our benchmark: learned baselines beside random, forward and the oracle.

One table per task (fine, coarse) and split (val_seen, val_unseen, test): a row per agent
and physics mode (Strict, Tel-Hop), the columns TL, NE, SR, OSR, SPL, nDTW and CR, each
``mean [95 % bootstrap CI]`` from the evaluation folders' ``summary.json``. The paper's
reported SR / SPL (its Table 3: other scenes, another renderer, no physics modes) sit in a
separate, labelled column, never mixed with our figures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vlnverse.errors import ConfigError
from vlnverse.eval.registry import augmented_label
from vlnverse.eval.reporting.report import ARROWS, COLUMNS, PHYSICS_TITLES, TASK_TITLES, is_percent
from vlnverse.eval.tracks import Track

TASKS = ("fine", "coarse")
SPLITS = ("val_seen", "val_unseen", "test")
PHYSICS = ("strict", "tel_hop")

#: The paper's Table 3 (SR, SPL in %) per method, task and split; its "Ours" is GAMA.
PAPER_TABLE3: dict[str, dict[str, dict[str, tuple[float, float]]]] = {
    "cma": {"fine": {"val_seen": (37.35, 33.36), "val_unseen": (31.15, 27.92), "test": (28.83, 25.54)},
            "coarse": {"val_seen": (32.15, 29.06), "val_unseen": (35.52, 32.48), "test": (31.85, 28.67)}},
    "seq2seq": {"fine": {"val_seen": (32.62, 30.39), "val_unseen": (35.03, 33.37), "test": (30.19, 28.15)},
                "coarse": {"val_seen": (31.91, 29.68), "val_unseen": (33.09, 31.00), "test": (27.17, 25.53)}},
    "gama": {"fine": {"val_seen": (38.25, 34.84), "val_unseen": (38.69, 34.38), "test": (37.72, 33.85)},
             "coarse": {"val_seen": (42.45, 38.89), "val_unseen": (48.30, 41.50), "test": (37.20, 31.02)}},
}
PAPER_COLUMN = "Paper's SR / SPL (their scenes, renderer; no physics modes)"


def load_runs(specs: Sequence[str]) -> list[tuple[str, str, Mapping[str, Any]]]:
    """``(label, agent, summary)`` of each evaluation folder, given as ``FOLDER`` or ``LABEL=FOLDER``.

    A row is labelled by the caller's ``LABEL`` or else by ``run.json``'s agent, the name
    ``eval verify --rerun`` re-runs, with `` +aug`` when the model trained on augmentation homes
    (``run.json``'s ``training_data``); ``summary.json``'s own ``run`` section (which verify
    compares with ``run.json``) must agree, so a summary cannot relabel its row.

    Raises:
        ConfigError: a folder without ``summary.json`` or ``run.json``, or whose two disagree.
    """
    from vlnverse.eval.verification.untrusted import read_json

    runs = []
    for spec in specs:
        label, _, folder = spec.rpartition("=") if "=" in spec else ("", "", spec)
        files = {name: Path(folder) / name for name in ("summary.json", "run.json")}
        for name, path in files.items():
            if not path.is_file():
                raise ConfigError(f"{folder} is not an evaluation folder (no {name}); run `vlnverse eval` first")
        summary, document = read_json(files["summary.json"]), read_json(files["run.json"])
        run = document.get("run") if isinstance(document, dict) else None
        if not isinstance(summary, dict) or not isinstance(run, dict) or summary.get("run") != run:
            raise ConfigError(f"{folder}: summary.json's run section is not run.json's; check the folder with "
                              "`vlnverse eval verify`")
        agent = str(run.get("agent", "agent"))
        training = run.get("training_data") if isinstance(run.get("training_data"), dict) else None
        runs.append((augmented_label(label or agent, training), agent, summary))
    return runs


def is_augmented(label: str) -> bool:
    return "+aug" in label


def _cell(metric: Mapping[str, Any] | None, name: str) -> str:
    if not metric or metric.get("mean") is None:
        return "-"
    scale = 100.0 if is_percent(name) else 1.0
    return f"{metric['mean'] * scale:.1f} [{metric['ci_low'] * scale:.1f}, {metric['ci_high'] * scale:.1f}]"


def rows(runs: Sequence[tuple[str, str, Mapping[str, Any]]], task: str, split: str) -> list[dict[str, Any]]:
    """The rows of one task × split table: agent, physics, n, each column's cell, the paper's."""
    out = []
    for label, agent, summary in runs:
        groups = {g["physics"]: g for g in summary.get("groups", []) if g["task"] == task and g["split"] == split}
        for physics in PHYSICS:
            group = groups.get(physics)
            if group is None:
                continue
            paper = PAPER_TABLE3.get(agent, {}).get(task, {}).get(split)
            out.append({"agent": label, "physics": physics, "n": group.get("n_episodes", 0),
                        "cells": {c: _cell(group["metrics"].get(c), c) for c in COLUMNS},
                        "metrics": {c: group["metrics"].get(c) for c in COLUMNS},
                        "paper": None if paper is None else {"SR": paper[0], "SPL": paper[1]}})
    return out


def partial_label(runs: Sequence[tuple[str, str, Mapping[str, Any]]], track: Track) -> str | None:
    """``"partial: val_unseen, Tel-Hop only"`` when the runs cover less of ``track`` (its splits,
    tasks and physics modes) than its tables report; ``None`` when they cover it all."""
    covered = {(g.get("split"), g.get("task"), g.get("physics")) for _, _, summary in runs
               for g in summary.get("groups", [])}
    parts = []
    for index, wanted in enumerate((track.splits, track.tasks, track.physics)):
        present = [name for name in wanted if any(key[index] == name for key in covered)]
        if len(present) < len(wanted):
            parts += [PHYSICS_TITLES.get(name, name) if index == 2 else name for name in present]
    return f"partial: {', '.join(parts) or 'nothing of the track'} only" if parts else None


def page_cell(cell: str) -> str:
    """A ``mean [lo, hi]`` cell for a web page: the interval on a second line, in small type."""
    mean, _, interval = cell.partition(" ")
    return f"{mean}<br><small>{interval}</small>" if interval else cell


def table3_markdown(runs: Sequence[tuple[str, str, Mapping[str, Any]]], track: str | None = None,
                    partial: str | None = None, page: bool = False) -> str:
    """Every task × split table the runs cover, as Markdown (headed by the ``track`` label when
    given, and by ``partial`` (:func:`partial_label`) instead of "Table 3" when they cover only
    part of it); models trained with augmentation homes (``+aug``) in tables of their own, after.
    ``page``: each interval on a second line (:func:`page_cell`), for a web page's width."""
    heading = f"{track}, {partial} (not the track's Table 3)" if partial else f"Table 3 on {track}"
    lines = [f"### {heading}", ""] if track else []
    lines += ["Rates in %, TL and NE in metres; each cell: mean [95 % bootstrap CI]. The last column is the "
             "paper's Table 3, reported on its own scenes and renderer: context, not a comparison.", ""]
    plain = [run for run in runs if not is_augmented(run[0])]
    augmented = [run for run in runs if is_augmented(run[0])]
    lines += _tables(plain, track, page)
    if augmented:
        lines += ["### Trained with augmentation homes (+aug)" + (f" on {track}" if track else ""), "",
                  "These models saw the track's training episodes and those of new procedural homes "
                  "(`vlnverse release augment`); evaluated on the same episodes, reported apart.", "",
                  *_tables([*[run for run in plain if run[1] in ("random", "forward", "oracle")], *augmented],
                           track, page)]
    return "\n".join(lines)


def _tables(runs: Sequence[tuple[str, str, Mapping[str, Any]]], track: str | None, page: bool) -> list[str]:
    lines = []
    header = ["Agent", "Physics", *[f"{c}{ARROWS.get(c, '')}" for c in COLUMNS], "n",
              "Paper's SR / SPL" if page else PAPER_COLUMN]   # a page's preamble says whose they are
    for task in TASKS:
        for split in SPLITS:
            body = rows(runs, task, split)
            if not body:
                continue
            lines += [f"#### {TASK_TITLES[task]} · {split}" + (f" · {track}" if track else ""), "", "| " + " | ".join(header) + " |",
                      "|" + "---|" * len(header)]
            for row in body:
                paper = row["paper"]
                lines.append("| " + " | ".join([row["agent"], PHYSICS_TITLES[row["physics"]],
                                                 *(page_cell(c) if page else c for c in row["cells"].values()),
                                                 str(row["n"]),
                                                 "-" if paper is None else f"{paper['SR']:.2f} / {paper['SPL']:.2f}"])
                             + " |")
            lines.append("")
    return lines
