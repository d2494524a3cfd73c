"""Per-episode bird's-eye trajectory pictures (paper Fig. 6): the scene's BEV map with the
reference path, the agent's path, its collisions, STOPs, the start and the goal radii."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from vlnverse.fileio import atomic_open

AGENT_COLOR = "#e8590c"
COLLISION_COLOR = "#c92a2a"
GOAL_COLOR = "#2b8a3e"
PLOT_DPI = 80


def plot_filename(record: Mapping[str, Any]) -> str:
    """A file name for the record's picture, safe on every file system."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in str(record["episode_id"]))
    return f"{safe}__{record['physics']}.png"


def _fmt(value: Any, pct: bool = False) -> str:
    if value is None:
        return "-"
    return f"{100 * value:.0f}%" if pct else f"{value:.2f}"


def save_episode_plot(path: str | Path, scene: Any, occupancy: Any, record: Mapping[str, Any]) -> Path:
    """Draw one episode of ``episodes.jsonl`` over its scene and write the PNG atomically.

    Args:
        path: Output PNG.
        scene: The episode's :class:`vlnverse.scene.types.Scene`.
        occupancy: The agent's occupancy map of that scene.
        record: The episode record (``trajectory``, ``reference_path``, ``goals``,
            ``collisions``, ``stops``, ``metrics``).
    """
    from matplotlib.patches import Circle

    from vlnverse.scene.bev import bev_figure

    traj = np.asarray(record["trajectory"], dtype=np.float64).reshape(-1, 3)
    reference = np.asarray(record.get("reference_path") or [], dtype=np.float64).reshape(-1, 3)
    goals = [np.asarray(g["position"], dtype=np.float64) for g in record["goals"]]
    m = record.get("metrics") or {}
    title = (f"{record['episode_id']} · {record['task']} · {record['physics']} — "
             f"SR {_fmt(m.get('SR'), True)}  SPL {_fmt(m.get('SPL'))}  NE {_fmt(m.get('NE'))} m  "
             f"CR {_fmt(m.get('CR'))}  ({record.get('fail_reason')})")
    markers = [(traj[0, :2], "white", "start")]
    markers += [(g[:2], GOAL_COLOR, f"goal {k + 1}" if len(goals) > 1 else "goal") for k, g in enumerate(goals)]
    fig = bev_figure(scene, occupancy, paths=[reference] if len(reference) else [], markers=markers, title=title)
    ax = fig.axes[0]
    for k, (goal, spec) in enumerate(zip(goals, record["goals"], strict=True)):
        ax.add_patch(Circle(goal[:2], float(spec.get("radius", 3.0)), fill=False, ls="--", lw=1.2, ec=GOAL_COLOR,
                            label="success radius" if k == 0 else None))
    ax.plot(traj[:, 0], traj[:, 1], "-", color=AGENT_COLOR, lw=1.6, label="agent")
    hits = np.flatnonzero(np.asarray(record.get("collisions") or [], dtype=bool))
    if len(hits):
        where = traj[np.minimum(hits + 1, len(traj) - 1)]
        ax.plot(where[:, 0], where[:, 1], "x", color=COLLISION_COLOR, ms=8, mew=2, label="collision")
    stops = [s for s in record.get("stops") or [] if 0 <= s < len(traj)]
    if stops:
        ax.plot(traj[stops, 0], traj[stops, 1], "s", color="black", ms=6, label="STOP")
    if len(reference):
        ax.plot([], [], "-", color="#1f5fd6", lw=1.8, label="reference")
    ax.legend(loc="upper right", fontsize=7, framealpha=0.8)
    path = Path(path)
    with atomic_open(path, "wb") as handle:
        fig.savefig(handle, format="png", dpi=PLOT_DPI)
    return path
