"""A track's leaderboard as data: one row per agent, split, task (and the tasks pooled) and physics
mode, every metric with its 95 % bootstrap interval, how the episodes ended, the bundle it comes
from (with its sha256) and the command that verifies it.

``vlnverse eval table --leaderboard FILE.json`` writes it from evaluation folders or published
bundles; :mod:`vlnverse.release.leaderboard_figure` draws SR from it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlnverse.eval.reporting.report import is_percent
from vlnverse.eval.scoring.pooled import PooledGroup, ending_shares
from vlnverse.eval.tracks import Track, sha256_of

POOLED = "pooled"
"""The task name of the rows that pool every task of a split."""
DATASET = "REL/dataset"
"""How a verify command names the verifier's build of the track (``release build --out REL``)."""


@dataclass(frozen=True)
class Entry:
    """One evaluation of the leaderboard.

    Attributes:
        label: The agent's row name (``+aug`` when its model trained on augmentation homes).
        summary: Its ``summary.json`` (whose ``run`` section is ``run.json``'s).
        pooled: Its records pooled over tasks (:func:`vlnverse.eval.scoring.pooled.pooled_groups`).
        source: The folder or bundle, as the user named it.
        bundle_sha256: The bundle's sha256 (``None`` for a folder).
    """

    label: str
    summary: Mapping[str, Any]
    pooled: Sequence[PooledGroup]
    source: str
    bundle_sha256: str | None = None


def shipped_weights() -> dict[str, str]:
    """``{sha256: path}`` of the weights in a checkout's ``assets/agents`` (paths from the
    repository root; none where the package runs from a wheel)."""
    root = Path(__file__).resolve().parents[2]
    return {sha256_of(path): path.relative_to(root).as_posix()
            for path in sorted((root / "assets" / "agents").glob("*/*.pt"))}


def leaderboard(entries: Sequence[Entry], track: Track | None, command: str,
                weights: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The leaderboard of ``entries`` (``weights``: ``{sha256: path}`` of weights a verifier holds)."""
    splits = track.splits if track else None
    rows = [row for entry in entries for row in _rows(entry, track, weights or {})]
    if splits:
        rows.sort(key=lambda row: splits.index(row["split"]) if row["split"] in splits else len(splits))
    rates = sorted({name for row in rows for name in row["metrics"] if is_percent(name)})
    return {
        "track": track.label if track else None,
        "generated_by": command,
        "units": f"{', '.join(rates)} in %, distances in metres; each metric: mean and its 95 % bootstrap "
                 "interval over the row's episodes; endings: share of the row's episodes in %",
        "verify": f"{DATASET}: your build of the track (vlnverse release build --track {track.name if track else 'NAME'}"
                  " --out REL); WEIGHTS.pt: your copy of the weights whose sha256 the row gives",
        "rows": rows,
    }


def _rows(entry: Entry, track: Track | None, weights: Mapping[str, str]) -> list[dict[str, Any]]:
    run = entry.summary["run"]
    common = {"agent": entry.label, "agent_name": run.get("agent"), "training": training_text(run),
              "training_data": run.get("training_data"), "privileged": run.get("privileged") or []}
    tail = {"bundle": entry.source, "bundle_sha256": entry.bundle_sha256,
            "checkpoint_sha256": run.get("checkpoints") or {}, "verify": verify_command(entry, track, weights)}
    rows = []
    for group in entry.summary.get("groups", []):
        if track and (group["split"] not in track.splits or group["task"] not in track.tasks):
            continue
        n = group.get("n_episodes", 0)
        rows.append({**common, "split": group["split"], "task": group["task"], "physics": group["physics"],
                     "n": n, "metrics": {k: _metric(k, m) for k, m in group["metrics"].items()},
                     "endings": _percent(ending_shares(group.get("fail_reasons", {}), n)), **tail})
    for group in entry.pooled:
        if track and group.split not in track.splits:
            continue
        rows.append({**common, "split": group.split, "task": POOLED, "physics": group.physics, "n": group.n,
                     "metrics": {k: _metric(k, m.to_dict()) for k, m in group.metrics.items()},
                     "endings": _percent(group.endings), **tail})
    return rows


def _metric(name: str, metric: Mapping[str, Any]) -> dict[str, float | None]:
    scale = 100.0 if is_percent(name) else 1.0
    return {key: None if metric.get(key) is None else round(metric[key] * scale, 4)
            for key in ("mean", "ci_low", "ci_high")}


def _percent(shares: Mapping[str, float]) -> dict[str, float]:
    return {name: round(100.0 * share, 2) for name, share in shares.items()}


def training_text(run: Mapping[str, Any]) -> str:
    """What the run's model trained on, in words: ``none`` for an agent without weights."""
    config = run.get("agent_config") or {}
    if not any(key == "checkpoint" or key.endswith("_checkpoint") for key in config):
        return "none (no trained weights)"
    data = run.get("training_data")
    if not isinstance(data, Mapping):
        return "not recorded (a checkpoint from before training data was recorded)"
    text = f"{data.get('split', '?')} split ({data.get('task') or 'every task'})"
    for augment in data.get("augment") or []:
        text += f" + {augment.get('homes')} augmentation homes ({augment.get('episodes')} episodes)"
    return text


def verify_command(entry: Entry, track: Track | None, weights: Mapping[str, str]) -> str:
    """The commands that check ``entry`` (unpacking it first when it is a bundle)."""
    run = entry.summary["run"]
    folder = entry.source
    unpack = ""
    if entry.bundle_sha256 is not None:
        folder = Path(entry.source).name.removesuffix(".tar.gz")
        unpack = f"vlnverse eval unpack {entry.source} --to {folder} && "
    options = [f"--track {track.name}"] if track else []
    if run.get("llm") is None:
        options.append("--rerun")
        for key, digest in sorted((run.get("checkpoints") or {}).items()):
            file = weights.get(digest, "WEIGHTS.pt")
            options.append(f"--checkpoint {file}" if key == "checkpoint" else f"--checkpoint {key}={file}")
    return f"{unpack}vlnverse eval verify {folder} --dataset {DATASET} {' '.join(options)}".rstrip()
