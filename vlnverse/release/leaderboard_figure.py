"""The picture a reader scans first: each agent's SR (every task pooled) with its 95 % interval,
one panel per split, beside random's interval (a band). Drawn from the leaderboard's rows
(:mod:`vlnverse.release.leaderboard`); agents that read privileged inputs (the oracle) are left
out, so the learned agents' scale stays readable."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vlnverse.eval.reporting.report import PHYSICS_TITLES
from vlnverse.release.leaderboard import POOLED

COLOURS = {"tel_hop": "#1f77b4", "strict": "#d62728"}
BASELINE = "random"


def sr_figure(board: Mapping[str, Any]) -> Any:
    """A :class:`matplotlib.figure.Figure` of the leaderboard's pooled SR per split (no pyplot)."""
    from matplotlib.figure import Figure

    rows = [row for row in board["rows"] if row["task"] == POOLED and not row["privileged"]]
    splits = list(dict.fromkeys(row["split"] for row in rows))
    agents = list(dict.fromkeys(row["agent"] for row in rows))
    physics = [p for p in COLOURS if any(row["physics"] == p for row in rows)]
    figure = Figure(figsize=(4.2 * max(1, len(splits)), 1.6 + 0.34 * len(agents)), layout="constrained")
    axes = figure.subplots(1, max(1, len(splits)), sharex=True, sharey=True, squeeze=False)[0]
    for ax, split in zip(axes, splits, strict=False):
        for offset, mode in enumerate(physics):
            shown = {row["agent"]: row for row in rows if row["split"] == split and row["physics"] == mode}
            baseline = next((row for row in shown.values() if row["agent_name"] == BASELINE), None)
            if baseline is not None:
                sr = baseline["metrics"]["SR"]
                ax.axvspan(sr["ci_low"], max(sr["ci_high"], sr["ci_low"] + 0.2), color=COLOURS[mode], alpha=0.12)
            label = PHYSICS_TITLES.get(mode, mode)
            for index, agent in enumerate(agents):
                row = shown.get(agent)
                if row is None:
                    continue
                sr = row["metrics"]["SR"]
                ax.errorbar(sr["mean"], index + 0.18 * (offset - (len(physics) - 1) / 2),
                            xerr=[[sr["mean"] - sr["ci_low"]], [sr["ci_high"] - sr["mean"]]], fmt="o",
                            color=COLOURS[mode], markersize=4, capsize=2, label=label)
                label = None
        n = sorted({row["n"] for row in rows if row["split"] == split})
        ax.set_title(f"{split} (n = {', '.join(map(str, n))})", fontsize=10)
        ax.set_xlabel("SR % (tasks pooled), 95 % CI")
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_xlim(left=0)
    axes[0].set_yticks(range(len(agents)), agents, fontsize=8)
    axes[0].invert_yaxis()
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, [f"{label} (band: random's 95 % CI)" for label in labels], loc="outside lower center",
                  ncols=len(labels), fontsize=8)
    figure.suptitle(f"SR with 95 % intervals beside random{' · ' + board['track'] if board.get('track') else ''}",
                    fontsize=11)
    return figure
