"""The public VLNVerse release format: ``final_splits/{task}_{split}.json.gz``.

As read by the official evaluator (``vlnverse_emr``): Z-up positions, (w, x, y, z)
rotations, ``scan`` = scene id, ``goals`` a dict ``{position, radius}`` (a list for
multi-goal long-horizon episodes), ``info.geodesic_distance`` = polyline length of
``reference_path``, ``instruction.instruction_text`` a string (fine) or a dict of styles
(coarse family), ``instruction_vocab``; split names ``train``, ``val`` (our
``val_seen``), ``val_unseen``, ``test``. Extra keys carry what the release has no slot for
(goal object/room ids, sub-instructions, reference images, question budgets) so our own
round trip is lossless; the evaluator ignores them. ``withhold_test_paths`` drops the test
reference paths, as the official test split does, and an EQA test record's answer and
relevant objects (so a withheld EQA split cannot be imported back: it has no answers).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from vlnverse.errors import DatasetError
from vlnverse.tasks.episode import (
    SPLITS,
    TASKS,
    Episode,
    Goal,
    Instruction,
    Provenance,
    Question,
    question_dict,
)
from vlnverse.tasks.formats.vlnce import dump_gz, load_gz
from vlnverse.tasks.formats.vocab import build_vocab, encode

RELEASE_SPLIT = {"train": "train", "val_seen": "val", "val_unseen": "val_unseen", "test": "test"}
OUR_SPLIT = {v: k for k, v in RELEASE_SPLIT.items()} | {"val_seen": "val_seen"}


def _goal(goal: Goal) -> dict:
    out = {"position": list(goal.position), "radius": goal.radius}
    for name in ("object_id", "room_id", "category"):
        if getattr(goal, name) is not None:
            out[name] = getattr(goal, name)
    return out


def _texts(e: Episode) -> list[str]:
    return list(e.instruction.styles.values()) if e.instruction.styles else [e.instruction.text]


def export_release(episodes: Sequence[Episode], out: str | Path, *, withhold_test_paths: bool = False) -> list[Path]:
    """Write ``episodes`` as ``out/final_splits/{task}_{split}.json.gz``; returns the files."""
    out = Path(out) / "final_splits"
    vocab = build_vocab(t for e in episodes for t in _texts(e))
    written = []
    for task in TASKS:
        for split in SPLITS:
            chosen = [e for e in episodes if e.task == task and e.split == split]
            if not chosen:
                continue
            records = [_record(e, vocab, withhold_test_paths and split == "test") for e in chosen]
            path = out / f"{task}_{RELEASE_SPLIT[split]}.json.gz"
            dump_gz(path, {"episodes": records, "instruction_vocab": vocab})
            written.append(path)
    return written


def _record(e: Episode, vocab: dict, withhold: bool) -> dict:
    styles = dict(e.instruction.styles)
    text = styles if styles else e.instruction.text
    tokens = {k: encode(v, vocab) for k, v in styles.items()} if styles else encode(e.instruction.text, vocab)
    instruction = {"instruction_text": text, "instruction_tokens": tokens}
    if styles:
        instruction["instruction_type"] = e.instruction.style
    if e.instruction.subgoals:
        instruction["sub_instructions"] = list(e.instruction.subgoals)
    if e.instruction.landmarks:
        instruction["landmarks"] = list(e.instruction.landmarks)
    if e.instruction.rooms:
        instruction["rooms"] = list(e.instruction.rooms)
    record = {
        "episode_id": e.episode_id,
        "trajectory_id": e.trajectory_id,
        "scan": e.scene_id,
        "scene_id": e.scene_path,
        "start_position": list(e.start_position),
        "start_rotation": list(e.start_rotation),
        "goals": _goal(e.goals[0]) if len(e.goals) == 1 else [_goal(g) for g in e.goals],
        "info": {"geodesic_distance": e.geodesic_distance},
        "instruction": instruction,
    }
    if not withhold:
        record["reference_path"] = [list(p) for p in e.reference_path]
    if e.reference_image:
        record["reference_image"] = e.reference_image
    if e.subgoal_distances:
        record["info"]["subgoal_distances"] = list(e.subgoal_distances)
    if e.question_budget is not None:
        record["question_budget"] = e.question_budget
    if e.question is not None:
        record["question"] = question_dict(e.question)
        if withhold:
            _withhold_answer(record)
    return record


def _withhold_answer(record: dict) -> None:
    """A withheld EQA record keeps the question and its options only: the answer, and the
    relevant objects and rooms (their ids and categories name the answer of existence and
    near questions), are ground truth like the reference path."""
    record["question"] = {k: record["question"][k] for k in ("text", "options", "kind")}
    for key in ("landmarks", "rooms"):
        record["instruction"].pop(key, None)
    goals = record["goals"] if isinstance(record["goals"], list) else [record["goals"]]
    for goal in goals:
        for key in ("object_id", "category", "room_id"):
            goal.pop(key, None)


def import_release(path: str | Path) -> list[Episode]:
    """Episodes of a release folder (``final_splits/*.json.gz``, or the folder holding it).

    Raises:
        DatasetError: no split file found, an unknown task/split in a file name, or a bad episode.
    """
    path = Path(path)
    folder = path / "final_splits" if (path / "final_splits").is_dir() else path
    files = [path] if path.is_file() else sorted(folder.glob("*.json.gz"))
    if not files:
        raise DatasetError(f"no release split files (final_splits/{{task}}_{{split}}.json.gz) under {path}")
    episodes = []
    for file in files:
        stem = file.name[: -len(".json.gz")] if file.name.endswith(".json.gz") else file.stem
        task, split = _task_split(stem, file)
        data = load_gz(file)
        for i, raw in enumerate(data.get("episodes", [])):
            try:
                episodes.append(_episode(raw, task, split))
            except (KeyError, TypeError, ValueError) as exc:
                raise DatasetError(f"{file}: episode {i}: missing or bad field {exc}") from None
    return episodes


def _task_split(stem: str, file: Path) -> tuple[str, str]:
    for split in sorted(OUR_SPLIT, key=len, reverse=True):
        if stem.endswith("_" + split):
            task = stem[: -len(split) - 1]
            if task in TASKS:
                return task, OUR_SPLIT[split]
    raise DatasetError(f"{file.name}: expected <task>_<split>.json.gz with task in {', '.join(TASKS)} "
                       f"and split in {', '.join(sorted(OUR_SPLIT))}")


def _grounding(instruction: dict) -> dict:
    return {"subgoals": tuple(instruction.get("sub_instructions", ())),
            "landmarks": tuple(instruction.get("landmarks", ())), "rooms": tuple(instruction.get("rooms", ()))}


def _episode(raw: dict, task: str, split: str) -> Episode:
    instruction = raw["instruction"]
    text = instruction["instruction_text"]
    if isinstance(text, dict):
        style = instruction.get("instruction_type", "formal")
        instr = Instruction(text=text[style], style=style, styles=text, **_grounding(instruction))
    else:
        instr = Instruction(text=text, style="natural", **_grounding(instruction))
    goals = raw["goals"] if isinstance(raw["goals"], list) else [raw["goals"]]
    info = raw.get("info") or {}
    return Episode(
        episode_id=str(raw["episode_id"]),
        trajectory_id=str(raw.get("trajectory_id", raw["episode_id"])),
        scene_id=str(raw.get("scan") or raw["scene_id"]),
        scene_path=str(raw.get("scene_id") or raw["scan"]),
        split=split,
        task=task,
        start_position=raw["start_position"],
        start_rotation=raw["start_rotation"],
        goals=tuple(Goal(**{k: g[k] for k in ("position", "radius", "object_id", "room_id", "category") if k in g})
                    for g in goals),
        reference_path=tuple(tuple(p) for p in raw.get("reference_path") or ()),
        geodesic_distance=float(info.get("geodesic_distance", 0.0)),
        instruction=instr,
        reference_image=raw.get("reference_image"),
        subgoal_distances=tuple(info.get("subgoal_distances", ())),
        question_budget=raw.get("question_budget"),
        question=Question(**raw["question"]) if raw.get("question") else None,
        provenance=Provenance(instruction_source="import:vlnverse", stages=("import:vlnverse",)),
    )
