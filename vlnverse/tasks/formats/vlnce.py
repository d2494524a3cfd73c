"""VLN-CE (``R2R_VLNCE_v1-3``) format: ``{split}/{split}.json.gz`` + ``{split}_gt.json.gz``.

Episodes are habitat-style: Y-up positions, (x, y, z, w) rotations, ``goals`` a list of
``{position, radius}``, ``info.geodesic_distance``, ``instruction.{instruction_text,
instruction_tokens}``. Episode and trajectory ids stay strings (VLN-CE casts them to str
on load). What the format cannot hold (object/room ids of goals, coarse styles,
provenance) is dropped on export; importing rebuilds a valid episode without them.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from pathlib import Path

from vlnverse.errors import DatasetError
from vlnverse.tasks.episode import SPLITS, Episode, Goal, Instruction, Provenance
from vlnverse.tasks.formats.frames import (
    habitat_to_zup_rotation,
    yup_to_zup_position,
    zup_to_habitat_rotation,
    zup_to_yup_position,
)
from vlnverse.tasks.formats.vocab import build_vocab, encode
from vlnverse.tasks.storage import write_bytes_atomic

DECIMALS = 6


def _r(values) -> list[float]:
    return [round(float(v), DECIMALS) + 0.0 for v in values]


def dump_gz(path: Path, obj) -> None:
    """Deterministic gzip JSON (no timestamp)."""
    import io

    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as handle:
        handle.write(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode("utf-8"))
    write_bytes_atomic(path, buffer.getvalue())


def load_gz(path: Path):
    try:
        raw = path.read_bytes()
        return json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)
    except (OSError, EOFError, json.JSONDecodeError, gzip.BadGzipFile) as exc:
        raise DatasetError(f"cannot read {path}: {exc}") from exc


def export_vlnce(episodes: Sequence[Episode], out: str | Path) -> list[Path]:
    """Write ``episodes`` (any single task) in VLN-CE layout under ``out``; returns the files."""
    out = Path(out)
    vocab = build_vocab(e.instruction.text for e in episodes)
    written = []
    for split in SPLITS:
        chosen = [e for e in episodes if e.split == split]
        if not chosen:
            continue
        records, gt = [], {}
        for e in chosen:
            records.append({
                "episode_id": e.episode_id,
                "trajectory_id": e.trajectory_id,
                "scene_id": e.scene_path,
                "start_position": _r(zup_to_yup_position(e.start_position)),
                "start_rotation": _r(zup_to_habitat_rotation(e.start_rotation)),
                "info": {"geodesic_distance": e.geodesic_distance},
                "goals": [{"position": _r(zup_to_yup_position(g.position)), "radius": g.radius} for g in e.goals],
                "instruction": {"instruction_text": e.instruction.text,
                                "instruction_tokens": encode(e.instruction.text, vocab)},
                "reference_path": [_r(zup_to_yup_position(p)) for p in e.reference_path],
            })
            gt[e.episode_id] = {"locations": [_r(zup_to_yup_position(p)) for p in e.reference_path]}
        dump_gz(out / split / f"{split}.json.gz", {"episodes": records, "instruction_vocab": vocab})
        dump_gz(out / split / f"{split}_gt.json.gz", gt)
        written += [out / split / f"{split}.json.gz", out / split / f"{split}_gt.json.gz"]
    return written


def scene_id_from_path(scene_path: str) -> str:
    """``mp3d/X/X.glb`` → ``X``; ``house_0/scene.usda`` → ``house_0``."""
    path = Path(scene_path)
    return path.parent.name if path.stem == "scene" and path.parent.name else path.stem


def import_vlnce(path: str | Path, *, task: str = "fine") -> list[Episode]:
    """Episodes of a VLN-CE folder (``{split}/{split}.json.gz``) or one split file.

    Raises:
        DatasetError: no split file found, or an episode lacks a required field.
    """
    path = Path(path)
    files = [path] if path.is_file() else sorted(path.glob("*/*.json.gz")) + sorted(path.glob("*/*.json"))
    files = [f for f in files if not f.name.split(".")[0].endswith("_gt")]
    if not files:
        raise DatasetError(f"no VLN-CE split files ({{split}}/{{split}}.json.gz) under {path}")
    episodes = []
    for file in files:
        split = {"val": "val_seen"}.get(file.name.split(".")[0], file.name.split(".")[0])
        if split not in SPLITS:
            raise DatasetError(f"{file}: unknown split {split!r}; valid: {', '.join(SPLITS)}")
        data = load_gz(file)
        for i, raw in enumerate(data.get("episodes", [])):
            try:
                episodes.append(_vlnce_episode(raw, split, task))
            except (KeyError, TypeError, ValueError) as exc:
                raise DatasetError(f"{file}: episode {i}: missing or bad field {exc}") from None
    return episodes


def _polyline(points) -> float:
    if not points or len(points) < 2:
        return 0.0
    import numpy as np

    return float(np.linalg.norm(np.diff(np.asarray(points, float), axis=0), axis=1).sum())


def _vlnce_episode(raw: dict, split: str, task: str) -> Episode:
    instruction = raw["instruction"]
    text = instruction["instruction_text"] if isinstance(instruction, dict) else str(instruction)
    goals = raw["goals"] if isinstance(raw["goals"], list) else [raw["goals"]]
    return Episode(
        episode_id=str(raw["episode_id"]),
        trajectory_id=str(raw.get("trajectory_id", raw["episode_id"])),
        scene_id=scene_id_from_path(raw["scene_id"]),
        scene_path=str(raw["scene_id"]),
        split=split,
        task=task,
        start_position=yup_to_zup_position(raw["start_position"]),
        start_rotation=habitat_to_zup_rotation(raw["start_rotation"]),
        goals=tuple(Goal(position=yup_to_zup_position(g["position"]), radius=g.get("radius", 3.0)) for g in goals),
        reference_path=tuple(tuple(yup_to_zup_position(p)) for p in raw.get("reference_path") or ()),
        geodesic_distance=float((raw.get("info") or {}).get("geodesic_distance", _polyline(raw.get("reference_path")))),
        instruction=Instruction(text=text, style="natural"),
        provenance=Provenance(instruction_source="import:vlnce", stages=("import:vlnce",)),
    )
