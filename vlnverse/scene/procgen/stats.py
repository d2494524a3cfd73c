"""Corpus statistics in the style of the paper's Fig. 2: navigable area, room count, their relation."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np

from vlnverse.errors import SceneError
from vlnverse.fileio import atomic_open, write_json_atomic


def load_metas(folder: str | Path) -> list[dict]:
    """All ``*/meta.json`` records of a corpus folder, sorted by scene id."""
    folder = Path(folder)
    if not folder.is_dir():
        raise SceneError(f"corpus folder not found: {folder}")
    metas = []
    for meta in sorted(folder.glob("*/meta.json")):
        try:
            metas.append(json.loads(meta.read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError) as exc:
            raise SceneError(f"unreadable {meta}: {exc}") from exc
    if not metas:
        raise SceneError(f"no scenes (*/meta.json) in {folder}")
    return metas


def corpus_stats(metas: list[dict]) -> dict:
    """Summary numbers and diversity measures of a corpus."""
    area = np.array([m["navigable_area_m2"] for m in metas], dtype=float)
    rooms = np.array([m["num_rooms"] for m in metas], dtype=float)
    objects = np.array([m["num_objects"] for m in metas], dtype=float)
    cats: Counter = Counter()
    for m in metas:
        cats.update(m["categories"])
    corr = float(np.corrcoef(area, rooms)[0, 1]) if len(metas) > 1 and area.std() > 0 and rooms.std() > 0 else None

    def describe(x: np.ndarray) -> dict:
        return {"mean": round(float(x.mean()), 3), "std": round(float(x.std()), 3),
                "min": round(float(x.min()), 3), "max": round(float(x.max()), 3)}

    return {
        "num_scenes": len(metas),
        "navigable_area_m2": describe(area),
        "num_rooms": describe(rooms),
        "num_objects": describe(objects),
        "num_on_relations": describe(np.array([m["num_on_relations"] for m in metas], dtype=float)),
        "area_room_correlation": None if corr is None else round(corr, 4),
        "distinct_floorplan_graphs": len({m["floorplan_signature"] for m in metas}),
        "distinct_scenes": len({(m["seed"], m["attempt"]) for m in metas}),
        "num_categories": len(cats),
        "category_counts": dict(sorted(cats.items())),
        "room_type_counts": dict(sorted(Counter(r["type"] for m in metas for r in m["rooms"]).items())),
    }


def plot_stats(metas: list[dict], path: str | Path) -> Path:
    """Histograms of navigable area and room count, and their scatter (Fig. 2 style)."""
    from matplotlib.figure import Figure

    area = np.array([m["navigable_area_m2"] for m in metas], dtype=float)
    rooms = np.array([m["num_rooms"] for m in metas], dtype=int)
    fig = Figure(figsize=(13, 3.8))
    axes = fig.subplots(1, 3)
    axes[0].hist(area, bins=min(30, max(5, len(area) // 4)), color="#4c72b0")
    axes[0].set(title="Navigable area", xlabel="m²", ylabel="scenes")
    bins = np.arange(rooms.min(), rooms.max() + 2) - 0.5
    axes[1].hist(rooms, bins=bins, color="#55a868", rwidth=0.85)
    axes[1].set(title="Rooms per scene", xlabel="rooms", ylabel="scenes")
    axes[2].scatter(rooms, area, s=12, alpha=0.6, color="#c44e52")
    if len(metas) > 1 and area.std() > 0 and rooms.std() > 0:
        r = np.corrcoef(area, rooms)[0, 1]
        axes[2].set_title(f"Area vs rooms (r = {r:.2f})")
    else:
        axes[2].set_title("Area vs rooms")
    axes[2].set(xlabel="rooms", ylabel="navigable area (m²)")
    fig.tight_layout()
    path = Path(path)
    with atomic_open(path, "wb") as handle:
        fig.savefig(handle, format="png", dpi=110)
    return path


def write_stats(folder: str | Path, out: str | Path | None = None) -> dict:
    """Write ``stats.json`` and ``stats.png`` for the corpus in ``folder``; returns the stats."""
    metas = load_metas(folder)
    out = Path(out) if out is not None else Path(folder)
    stats = corpus_stats(metas)
    write_json_atomic(out / "stats.json", stats)
    stats["plot"] = str(plot_stats(metas, out / "stats.png"))
    return stats
