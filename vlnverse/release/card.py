"""The release's statistics, dataset card (``README.md``) and checksums (``SHA256SUMS``).

Everything here is computed from the files of the build (manifest, corpus metadata), so
the card's numbers are the data's, and written deterministically: the same build gives
the same bytes whichever executor made it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from vlnverse.fileio import write_text_atomic
from vlnverse.redact import redact
from vlnverse.release.table2 import PAPER_PER_SCENE, TABLE2, TOLERANCE, Cell, compare
from vlnverse.tasks.report import TASK_LABELS
from vlnverse.tasks.storage import sha256_file

CARD = "README.md"
CHECKSUMS = "SHA256SUMS"
LICENCE = ("Apache-2.0, the licence of the VLNVerse code that generated it. The homes are procedural: every "
           "wall, floor and object is built from geometric primitives by `vlnverse.scene.procgen` (no "
           "third-party meshes, textures or scans), and the instructions come from the project's templates "
           "(or, with an LLM, from that model under its provider's terms).")


def write_stats(out: Path, datagen, tick: Callable[[str, int, int], None]) -> None:
    """The dataset report (counts, instruction lengths, paths, vocabulary; one streaming
    pass over the shards) and the corpus's statistics plots in ``out/stats``."""
    from vlnverse.scene.procgen.stats import write_stats as write_corpus_stats
    from vlnverse.tasks.dataset import EpisodeDataset
    from vlnverse.tasks.report import write_report

    tick("report", 0, 2)
    dataset = EpisodeDataset.open(datagen.out)
    write_report(dataset.stream(), Path(datagen.out) / "report", title="VLNVerse release: episodes",
                 extra_lines=[f"- seed: {datagen.seed}", f"- llm: {redact(datagen.llm)}"])
    tick("report", 1, 2)
    write_corpus_stats(out / "scenes", out / "stats")
    tick("report", 2, 2)


def scene_counts(manifest: dict[str, Any]) -> dict[str, int]:
    """Scenes per scene split (train, val_unseen, test) of the corpus the dataset was made from."""
    counts = {"train": 0, "val_unseen": 0, "test": 0}
    for split in manifest.get("scene_splits", {}).values():
        counts[split] = counts.get(split, 0) + 1
    return counts


def counts_table(cells: Iterable[Cell], scaled: bool) -> list[str]:
    """Markdown rows: each task × split beside Table 2 (and its scaled expectation)."""
    head = "| Task | Split | Episodes | Table 2 |" + (" Expected here |" if scaled else "") + " Difference | Within ±3 % |"
    rows = [head, "|---" * (head.count("|") - 1) + "|"]
    for c in cells:
        paper = "—" if c.paper is None else str(c.paper)
        expected = ("—" if c.expected is None else f"{c.expected:.0f}") if scaled else None
        deviation = "—" if c.deviation is None else f"{100 * c.deviation:+.1f} %"
        within = "—" if c.within is None else ("yes" if c.within else "**no**")
        cells_text = [TASK_LABELS.get(c.task, c.task), c.split, str(c.episodes), paper]
        cells_text += [expected] if scaled else []
        rows.append("| " + " | ".join(cells_text + [deviation, within]) + " |")
    return rows


def _shortfall_lines(manifest: dict[str, Any], per_scene: int) -> list[str]:
    shortfall = manifest.get("shortfall", {})
    skipped = manifest.get("skipped_scenes", {})
    if not shortfall and not skipped:
        return ["Every scene gave every trajectory asked of it; no scene was skipped."]
    totals: dict[str, int] = {}
    for short in shortfall.values():
        for kind, n in short.items():
            totals[kind] = totals.get(kind, 0) + n
    lines = [f"{len(shortfall)} scene(s) gave fewer trajectories than asked ({per_scene} coarse per scene): "
             + ", ".join(f"{kind} {n} short" for kind, n in sorted(totals.items())) + ". The sampler gives up on "
             "a scene after its attempts run out: a small home holds few start/goal pairs within the distance "
             "limits (fine paths 5-20 m across rooms; every path longer than the success radius plus the start "
             "margin), and chains need distinct targets within reach of one another.", ""]
    lines += [f"- {scene}: " + ", ".join(f"{kind} {n} short" for kind, n in sorted(short.items()))
              for scene, short in sorted(shortfall.items())]
    lines += [f"- {scene} skipped: {error}" for scene, error in sorted(skipped.items())]
    return lines


def write_card(out: Path, config, manifest: dict[str, Any], tick: Callable[[str, int, int], None]) -> Path:
    """Write the dataset card ``out/README.md`` from the manifest and the corpus statistics."""
    tick("card", 0, 1)
    generation = config.generation()
    cells = compare(manifest["splits"], scene_counts(manifest), generation.per_scene, generation.tasks)
    scaled = config.scale < 1 or generation.per_scene != PAPER_PER_SCENE
    others = [TASK_LABELS.get(t, t) for t in generation.tasks if t not in TABLE2]
    checked = [c for c in cells if c.within is not None]
    outside = [c for c in checked if not c.within]
    corpus = json.loads((out / "stats" / "stats.json").read_text(encoding="utf-8"))
    identity = config.identity()
    command = (f"vlnverse release build --out DIR --scale {config.scale:g} --seed {config.seed}"
               + (f" --per-scene {config.per_scene}" if config.per_scene is not None else "")
               + (f" --llm {redact(config.llm)}" if config.llm != "none" else ""))
    scenes = scene_counts(manifest)
    lines = [
        "# VLNVerse benchmark release", "",
        "Vision-language navigation episodes of the five tasks of the VLNVerse paper (fine-grained, "
        "coarse-grained, visual reference, long horizon, dialogue)"
        + (" and " + ", ".join(others) if others else "")
        + f", on {sum(scenes.values())} procedural homes ({scenes['train']} train / {scenes['val_unseen']} "
        f"val-unseen / {scenes['test']} test), with a reference image per visual-reference episode. "
        f"Built by `vlnverse release build` at scale {config.scale:g} of the paper's 263 scenes"
        + (f", {generation.per_scene} coarse trajectories per scene" if generation.per_scene != PAPER_PER_SCENE
           else "") + ".",
        "", "## Contents", "",
        "- `scenes/`: the corpus, one `scene_NNNN/scene.usdc` (Z-up, metres) with its `meta.json`; "
        "`splits.json` names each scene's split.",
        "- `dataset/`: `manifest.json` (counts, SHA-256 of each shard and image), `shards/<scene>.jsonl.gz` "
        "(one episode per line), `images/<scene>/` (visual references, 224×224, 90° FoV), `report/` (statistics "
        "and plots). Open it with `vlnverse.tasks.dataset.EpisodeDataset.open(\"dataset\")` or play it with "
        "`vlnverse eval --dataset dataset ...`.",
        "- `stats/`: the corpus's statistics (`stats.json`, `stats.png`).",
        f"- `{CHECKSUMS}`: the SHA-256 of every file (check with `sha256sum -c {CHECKSUMS}`); `build.json` "
        "(stage times and memory of the build that made this copy) is outside it.",
        "", f"## Episodes per task and split beside Table 2 ({manifest['total_episodes']} episodes)", "",
        *counts_table(cells, scaled), "",
        (f"{len(checked) - len(outside)} of {len(checked)} cells with a Table 2 count are within "
         f"±{100 * TOLERANCE:.0f} % of " + ("the expectation at this scale (Table 2 × scenes of the split / "
                                            "the paper's × trajectories per scene / 75)." if scaled else "Table 2.")),
        "", "## Shortfalls", "", *_shortfall_lines(manifest, generation.per_scene), "",
        "## Statistics", "",
        f"Homes: {corpus['num_rooms']['mean']} rooms on average ({corpus['num_rooms']['min']}-"
        f"{corpus['num_rooms']['max']}), navigable area {corpus['navigable_area_m2']['mean']} m² "
        f"({corpus['navigable_area_m2']['min']}-{corpus['navigable_area_m2']['max']}), "
        f"{corpus['num_objects']['mean']} objects, {corpus['num_categories']} categories, "
        f"{corpus['distinct_floorplan_graphs']} distinct floor-plan graphs.", "",
        "![corpus statistics](stats/stats.png)", "",
        "![path lengths and expert steps](dataset/report/paths.png)", "",
        "![instruction lengths](dataset/report/instruction_lengths.png)", "",
        "![vocabulary](dataset/report/vocabulary.png)", "",
        "More in `dataset/report/report.md`.", "",
        "## Generator", "",
        f"- vlnverse {identity['vlnverse']}; scene generator `{identity['corpus']['generator']}`; "
        f"dataset config hash `{manifest.get('config_hash')}`",
        f"- seed {config.seed} (corpus and dataset); instructions: "
        + ("prior templates (no LLM)" if config.llm == "none" else f"LLM `{redact(config.llm)}`"),
        f"- trajectories per scene: {generation.per_scene} coarse (shared by coarse, visual reference and "
        f"dialogue), {generation.counts()['fine']} fine, {generation.counts()['long_horizon']} long-horizon; "
        f"val-seen share {generation.val_seen_fraction:g} (long horizon "
        f"{generation.long_horizon_val_seen_fraction or generation.val_seen_fraction:g})",
        "", "## Licence", "", LICENCE,
        "", "## Regenerate bit for bit", "",
        "With this version of vlnverse installed (`make install`):", "",
        f"    {command}", "    cd DIR && sha256sum -c SHA256SUMS", "",
        "Any `--workers`, `--executor local|ray` gives the same bytes" + (
            "" if config.llm == "none" else " (with an LLM, only from the same response cache)")
        + "; a killed build resumes where it stopped when the command is run again.", "",
    ]
    path = out / CARD
    write_text_atomic(path, "\n".join(lines))
    tick("card", 1, 1)
    return path


def write_checksums(out: Path, exclude: Iterable[str] = (), skip_dirs: Iterable[str] = ()) -> Path:
    """``SHA256SUMS`` (``sha256sum`` format, sorted) of every file under ``out`` except
    ``exclude``, the top-level folders ``skip_dirs``, hidden files (locks) and the checksum file itself."""
    skip = {CHECKSUMS, *exclude}
    skipped_dirs = {Path(out, name) for name in skip_dirs}
    lines = []
    for root, dirs, files in os.walk(out):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and Path(root, d) not in skipped_dirs)
        for name in files:
            rel = Path(root, name).relative_to(out).as_posix()
            if name.startswith(".") or rel in skip:
                continue
            lines.append(f"{sha256_file(Path(root, name))}  {rel}")
    path = out / CHECKSUMS
    write_text_atomic(path, "\n".join(sorted(lines, key=lambda line: line[66:])) + "\n")
    return path
