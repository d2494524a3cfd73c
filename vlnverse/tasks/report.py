"""Dataset statistics and the generation report (paper Table 2, Fig. 3, Fig. 4).

* counts in the shape of Table 2: episodes (scenes) per task and split;
* instruction lengths (words) per task and style — Fig. 3b;
* landmark and action-verb frequencies — Fig. 3a / Fig. 4;
* EQA: questions per kind and the correct option's position (A-D): no position may be a
  better guess than chance (``max_position_share`` is 0.25 for a perfectly balanced set);
* per task, the distributions of path length (the reference path's geodesic length),
  expert steps and instruction length — Fig. 2c / Fig. 3b, to set beside the human TL of
  Table 3 (12.1 m fine, 10.2 m coarse). Expert steps are the VLN-CE discrete actions a
  shortest-path follower takes along the reference path: 15° turns, 0.25 m forward
  steps (:func:`expert_steps`) and one STOP per goal.

Written as ``report.md`` + ``report.json`` + PNG charts.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vlnverse.fileio import atomic_open, write_json_atomic, write_text_atomic
from vlnverse.tasks.episode import (
    OPTION_COUNT,
    OPTION_LETTERS,
    QUESTION_KINDS,
    SPLITS,
    STYLES,
    TASKS,
    Episode,
)
from vlnverse.tasks.grounding import HOUSEHOLD_NOUNS
from vlnverse.tasks.registry import task_families

VERBS = frozenset("""walk go turn move head stop enter pass keep continue proceed find locate approach take make
wait face exit leave cross follow grab navigate stay""".split())
ROOM_WORDS = frozenset("""bedroom bathroom kitchen hallway study laundry storage living dining room doorway door
corridor""".split())
TASK_LABELS = {family.name: family.label for family in task_families()}
_WORD = re.compile(r"[a-z]+")
FORWARD_M = 0.25  # VLN-CE discrete forward step
TURN_DEG = 15.0  # VLN-CE discrete turn


def expert_steps(points: Sequence[Sequence[float]], start_yaw: float, goals: int = 1) -> int:
    """Discrete actions of a shortest-path follower along ``points`` from heading
    ``start_yaw``: turns of :data:`TURN_DEG`, forward steps of :data:`FORWARD_M`, one STOP per goal."""
    steps, heading = goals, start_yaw
    for a, b in zip(points[:-1], points[1:], strict=False):
        dx, dy = float(b[0]) - float(a[0]), float(b[1]) - float(a[1])
        length = math.hypot(dx, dy)
        if length < 1e-6:
            continue
        new = math.atan2(dy, dx)
        steps += round(abs(math.degrees(math.remainder(new - heading, math.tau))) / TURN_DEG)
        steps += math.ceil(length / FORWARD_M - 1e-9)
        heading = new
    return steps


def _summary(values: Sequence[float]) -> dict[str, float]:
    v = np.asarray(values, dtype=np.float64)
    return {"mean": round(float(v.mean()), 2), "std": round(float(v.std()), 2), "min": round(float(v.min()), 2),
            "median": round(float(np.median(v)), 2), "p90": round(float(np.percentile(v, 90)), 2),
            "max": round(float(v.max()), 2), "n": int(v.size)}


class _Tally:
    """What the report needs of a dataset, gathered in one pass over its episodes: numbers
    and distinct texts, never the episodes themselves (a paper-scale dataset streams
    through in flat memory)."""

    def __init__(self) -> None:
        self.counts: Counter = Counter()
        self.scenes: dict[tuple[str, str], set[str]] = {}
        self.groups: dict[str, list[int]] = {}
        self.distributions: dict[str, dict[str, list[float]]] = {}
        self.landmarks: Counter = Counter()
        self.verbs: Counter = Counter()
        self.sources: Counter = Counter()
        self.categories: Counter = Counter()
        self.eqa_kinds: Counter = Counter()
        self.eqa_positions: Counter = Counter()
        self.geodesic: list[float] = []
        self.fallbacks = 0
        self._trajectories: set[str] = set()
        self._texts: set[str] = set()

    def add(self, e: Episode) -> None:
        self.counts[(e.task, e.split)] += 1
        self.scenes.setdefault((e.task, e.split), set()).add(e.scene_id)
        self.geodesic.append(float(e.geodesic_distance))
        self.sources[e.provenance.instruction_source] += 1
        self.fallbacks += bool(e.provenance.fallback)
        if e.task == "objectnav":
            self.categories[e.goals[0].category] += 1
        if e.task == "eqa" and e.question is not None:
            self.eqa_kinds[e.question.kind] += 1
            self.eqa_positions[e.question.answer] += 1
        row = self.distributions.setdefault(e.task, {"path_length": [], "steps": [], "instruction_words": []})
        row["path_length"].append(float(e.geodesic_distance))
        if e.reference_path:
            row["steps"].append(float(expert_steps(e.reference_path, e.start_yaw, len(e.goals))))
        row["instruction_words"].append(float(len(e.instruction.text.split())))
        self._add_lengths(e)
        for text in [e.instruction.text, *e.instruction.styles.values()]:
            self._add_words(text)

    def _add_lengths(self, e: Episode) -> None:
        """Instruction lengths in words: Fine, Coarse-<style> (one per trajectory), Long-horizon."""
        if e.task == "fine":
            self.groups.setdefault("Fine", []).append(len(e.instruction.text.split()))
        elif e.task == "long_horizon":
            self.groups.setdefault("Long-horizon", []).append(len(e.instruction.text.split()))
        elif e.trajectory_id not in self._trajectories:
            self._trajectories.add(e.trajectory_id)
            for style in STYLES:
                if style in e.instruction.styles:
                    self.groups.setdefault(f"Coarse-{style.capitalize()}", []).append(
                        len(e.instruction.styles[style].split()))

    def _add_words(self, text: str) -> None:
        """Landmark nouns (rooms included) and action verbs, over the distinct instructions."""
        if text in self._texts:
            return
        self._texts.add(text)
        for word in _WORD.findall(text.lower()):
            if word in VERBS:
                self.verbs[word] += 1
            elif word in HOUSEHOLD_NOUNS or word.rstrip("s") in HOUSEHOLD_NOUNS or word in ROOM_WORDS:
                self.landmarks[word.rstrip("s") if word not in ROOM_WORDS else word] += 1

    def stats(self) -> dict[str, Any]:
        counts = {}
        for task in TASKS:
            row = {split: {"episodes": self.counts[(task, split)], "scenes": len(self.scenes[(task, split)])}
                   for split in SPLITS if (task, split) in self.scenes}
            if row:
                counts[task] = row
        geodesic = np.asarray(self.geodesic)
        stats = {
            "episodes": int(sum(self.counts.values())),
            "counts": counts,
            "instruction_length": {k: {"mean": round(float(np.mean(v)), 2), "min": int(min(v)), "max": int(max(v))}
                                   for k, v in self.groups.items()},
            "geodesic_distance": ({"mean": round(float(geodesic.mean()), 3), "min": round(float(geodesic.min()), 3),
                                   "max": round(float(geodesic.max()), 3)} if geodesic.size else {}),
            "per_task": {task: {name: _summary(values) for name, values in row.items() if values}
                         for task, row in self.distributions.items()},
            "landmarks": dict(self.landmarks.most_common(30)),
            "verbs": dict(self.verbs.most_common(20)),
            "instruction_sources": dict(self.sources),
            "fallbacks": self.fallbacks,
        }
        if self.categories:  # ObjectNav's category vocabulary: episodes per goal category
            stats["objectnav_categories"] = dict(sorted(self.categories.items()))
        stats.update(_eqa_balance(self.eqa_kinds, self.eqa_positions))
        return stats


def _tally(episodes: Iterable[Episode]) -> _Tally:
    tally = _Tally()
    for episode in episodes:
        tally.add(episode)
    return tally


def dataset_stats(episodes: Iterable[Episode]) -> dict[str, Any]:
    """Counts, lengths and frequencies of ``episodes`` (JSON-ready; one pass)."""
    return _tally(episodes).stats()


def _eqa_balance(kinds: Counter, positions: Counter) -> dict[str, Any]:
    """EQA: questions per kind and per answer position (absent without EQA)."""
    questions = sum(kinds.values())
    if not questions:
        return {}
    return {"eqa": {
        "questions": questions,
        "question_kinds": {k: kinds[k] for k in QUESTION_KINDS if kinds[k]},
        "answer_positions": {OPTION_LETTERS[p]: positions[p] for p in range(OPTION_COUNT)},
        "max_position_share": round(max(positions.values()) / questions, 4),
    }}


def eqa_markdown(stats: dict[str, Any]) -> list[str]:
    """The EQA balance section of the report (empty without EQA)."""
    eqa = stats.get("eqa")
    if not eqa:
        return []
    n = eqa["questions"]
    lines = ["", "## EQA questions", "", f"{n} questions. Always guessing one position scores at most "
             f"{100 * eqa['max_position_share']:.1f} % (chance: {100 / OPTION_COUNT:.0f} %).", "",
             "| Question kind | questions | share |", "|---|---|---|"]
    lines += [f"| {k} | {v} | {100 * v / n:.1f} % |" for k, v in eqa["question_kinds"].items()]
    lines += ["", "| Answer position | questions | share |", "|---|---|---|"]
    lines += [f"| {k} | {v} | {100 * v / n:.1f} % |" for k, v in eqa["answer_positions"].items()]
    return lines


def counts_table_markdown(stats: dict[str, Any]) -> str:
    """Table 2-shaped Markdown: episodes (scenes) per task and split."""
    lines = ["| Task | " + " | ".join(SPLITS) + " |", "|---|" + "---|" * len(SPLITS)]
    for task, row in stats["counts"].items():
        cells = [f"{row[s]['episodes']} ({row[s]['scenes']})" if s in row else "0" for s in SPLITS]
        lines.append(f"| {TASK_LABELS[task]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def distribution_series(distributions: dict[str, dict[str, list]], name: str) -> list[tuple[str, list]]:
    """``(label, values)`` per plotted series of metric ``name``: tasks with identical values (the
    coarse, visual-reference and dialogue episodes share their paths) are one series, so their bars
    do not overlap into a colour that no legend names."""
    series: dict[tuple, list[str]] = {}
    for task, row in distributions.items():
        if row[name]:
            series.setdefault(tuple(sorted(row[name])), []).append(TASK_LABELS.get(task, task))
    return [(" = ".join(labels) + (" (same paths)" if len(labels) > 1 else ""), list(values))
            for values, labels in series.items()]


def _save(fig, path: Path) -> None:
    with atomic_open(path, "wb") as handle:
        fig.savefig(handle, format="png", dpi=100, metadata={"Software": None})


def write_report(episodes: Iterable[Episode], out_dir: str | Path, *, title: str = "VLNVerse dataset",
                 extra_lines: Sequence[str] = ()) -> dict[str, Any]:
    """Write ``report.md``, ``report.json``, ``instruction_lengths.png``, ``paths.png`` and
    ``vocabulary.png`` (one pass over ``episodes``, which may be a stream)."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tally = _tally(episodes)
    stats = tally.stats()
    lengths = tally.groups
    fig = Figure(figsize=(8, 4))
    ax = fig.subplots()
    if lengths:
        top = max(max(v) for v in lengths.values())
        bins = np.arange(0, top + 5, 4)
        for name, values in lengths.items():
            ax.hist(values, bins=bins, alpha=0.5, label=name)
        ax.legend()
    ax.set_xlabel("instruction length (words)")
    ax.set_ylabel("instructions")
    ax.set_title("Instruction length per task and style (cf. Fig. 3b)")
    fig.tight_layout()
    _save(fig, out / "instruction_lengths.png")
    distributions = tally.distributions
    fig = Figure(figsize=(11, 5))
    axes = fig.subplots(1, 2)
    for ax, name, unit in ((axes[0], "path_length", "path length (m)"), (axes[1], "steps", "expert steps")):
        series = distribution_series(distributions, name)
        if series:
            bins = np.histogram_bin_edges(np.concatenate([values for _, values in series]), bins=20)
            for label, values in series:
                ax.hist(values, bins=bins, histtype="step", linewidth=2, label=label)
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), fontsize="small", frameon=False)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel(unit)
        ax.set_ylabel("episodes")
    axes[0].set_title("Path length per task (cf. Fig. 2c)")
    axes[1].set_title("Expert steps per task (0.25 m / 15 deg)")
    fig.tight_layout()
    _save(fig, out / "paths.png")
    landmarks, verbs = tally.landmarks, tally.verbs
    fig = Figure(figsize=(11, 4.5))
    axes = fig.subplots(1, 2)
    for ax, counter, name in ((axes[0], landmarks, "landmarks"), (axes[1], verbs, "action verbs")):
        items = counter.most_common(15)
        ax.barh([w for w, _ in items][::-1], [n for _, n in items][::-1])
        ax.set_title(f"Most frequent {name} (cf. Fig. 3a/4)")
    fig.tight_layout()
    _save(fig, out / "vocabulary.png")
    md = [f"# {title}", "", f"{stats['episodes']} episodes.", "", "## Episodes per task and split (scenes)", "",
          counts_table_markdown(stats), "", "## Instruction length (words)", "",
          "| Group | mean | min | max |", "|---|---|---|---|"]
    md += [f"| {k} | {v['mean']} | {v['min']} | {v['max']} |" for k, v in stats["instruction_length"].items()]
    md += ["", "![instruction lengths](instruction_lengths.png)", "",
           "## Per task: path length (m), expert steps, instruction length (words)", "",
           "Human TL in the paper's Table 3: 12.13 m (fine), 10.23 m (coarse).", "",
           "| Task | measure | mean | std | min | median | p90 | max |", "|---|---|---|---|---|---|---|---|"]
    md += [f"| {TASK_LABELS.get(task, task)} | {name} | {s['mean']} | {s['std']} | {s['min']} | {s['median']} | "
           f"{s['p90']} | {s['max']} |" for task, row in stats["per_task"].items() for name, s in row.items()]
    md += ["", "![paths](paths.png)", "", "## Landmarks and verbs", "",
           "![vocabulary](vocabulary.png)", "", "## Instruction sources", ""]
    md += [f"- {k}: {v}" for k, v in sorted(stats["instruction_sources"].items())]
    md += [f"- fallbacks to the prior: {stats['fallbacks']}"]
    if "objectnav_categories" in stats:
        md += ["", "## ObjectNav categories (episodes)", "",
               ", ".join(f"{c} {n}" for c, n in stats["objectnav_categories"].items())]
    md += eqa_markdown(stats)
    if extra_lines:
        md += ["", "## Run", "", *extra_lines]
    write_text_atomic(out / "report.md", "\n".join(md) + "\n")
    write_json_atomic(out / "report.json", stats)
    return stats
