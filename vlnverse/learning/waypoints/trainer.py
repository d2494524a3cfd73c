"""``vlnverse train waypoints``: the waypoint predictor, trained on the dataset's own scenes.

Renders the samples of the training and validation splits (:mod:`.samples`, resumable),
then trains with AdamW on a per-cell binary cross-entropy against Gaussian bumps around the
targets (σ = 2 heading bins, 1 distance bin), each batch turned by a random multiple of 30°
(the panorama's views rolled, the heatmap with them). After every epoch:
``checkpoints/epoch_NNN.pt`` and ``latest.pt`` (a re-run continues after the last finished
epoch), the validation figures (recall and precision of the predicted waypoints within
``match_distance`` of a target, the share of predicted waypoints on navigable cells, the
mean count), ``history.json``, ``curves.png``, TensorBoard events in ``tb/`` and
``agent.yaml`` (the best epoch by validation F1, as the LLM agents' ``waypoint_checkpoint``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from vlnverse.agents.config import PanoramaConfig
from vlnverse.agents.waypoints.learned.grid import (
    DISTANCE_STEP,
    HEADING_STEP,
    HEADINGS,
    distance_of,
    heading_of,
)
from vlnverse.agents.waypoints.learned.net import (
    BINS_PER_VIEW,
    VIEWS,
    PeakConfig,
    WaypointNetConfig,
    build_net,
    pick_peaks,
)
from vlnverse.config import config_to_dict
from vlnverse.fileio import atomic_open, write_json_atomic, write_text_atomic
from vlnverse.learning.curves import EpochScalars
from vlnverse.learning.waypoints.targets import TargetConfig, polar_to_xy

log = logging.getLogger(__name__)

CHECKPOINTS = "checkpoints"
LATEST = "latest.pt"


@dataclass(frozen=True)
class WaypointTrainConfig:
    """A waypoint predictor training run.

    Attributes:
        dataset: Dataset folder (its scenes and reference paths).
        out: Output folder.
        split: Training split.
        val_split: Validation split (``None``: none).
        poses_per_scene: Rendered poses per training scene (a quarter of it per validation scene).
        epochs, batch_size, lr, weight_decay: Optimization.
        seed: Seeds the poses, initialization and batch order.
        threads: Torch CPU threads.
        match_distance: A prediction within this distance of a target matches it (m).
        panorama: The rig rendered (the LLM agents' 12 × 224 px, 90° views).
        targets: How targets are read from the navigable map.
        net: The network.
        peaks: How waypoints are read from the heatmap.
    """

    dataset: str
    out: str
    split: str = "train"
    val_split: str | None = "val_unseen"
    poses_per_scene: int = 400
    epochs: int = 30
    batch_size: int = 64
    lr: float = 2e-3
    weight_decay: float = 1e-4
    seed: int = 0
    threads: int = 1
    match_distance: float = 0.5
    panorama: PanoramaConfig = field(default_factory=PanoramaConfig)
    targets: TargetConfig = field(default_factory=TargetConfig)
    net: WaypointNetConfig = field(default_factory=WaypointNetConfig)
    peaks: PeakConfig = field(default_factory=PeakConfig)


@dataclass
class EpochRow:
    """One epoch (a row of ``history.json``)."""

    epoch: int
    loss: float
    val_loss: float | None
    recall: float | None
    precision: float | None
    navigable: float | None
    waypoints: float | None
    seconds: float
    checkpoint: str


def heatmap_targets(targets: np.ndarray, sigma_heading: float = 2.0, sigma_distance: float = 1.0) -> np.ndarray:
    """``(n, 120, 12)`` soft targets: the max over each pose's targets of a Gaussian bump."""
    h = np.arange(HEADINGS, dtype=np.float32)
    d = np.arange(12, dtype=np.float32)
    out = np.zeros((len(targets), HEADINGS, 12), dtype=np.float32)
    for i, rows in enumerate(targets):
        for heading, distance in rows[~np.isnan(rows[:, 0])]:
            hb = (heading / HEADING_STEP) % HEADINGS
            db = distance / DISTANCE_STEP - 1.0
            gap = np.abs(h - hb)
            gap = np.minimum(gap, HEADINGS - gap)
            bump = np.exp(-0.5 * (gap[:, None] / sigma_heading) ** 2 - 0.5 * ((d[None, :] - db) / sigma_distance) ** 2)
            out[i] = np.maximum(out[i], bump)
    return out


def waypoints_of(probabilities: np.ndarray, peaks: PeakConfig) -> np.ndarray:
    """``(n, 2)`` predicted waypoints (heading rad, distance m) of one heatmap."""
    found = pick_peaks(probabilities, peaks.threshold, peaks.window_deg, peaks.max_waypoints)
    return np.array([[heading_of(h), distance_of(d)] for h, d, _ in found], dtype=np.float64).reshape(-1, 2)


def score(probabilities: np.ndarray, targets: np.ndarray, navigable: np.ndarray, peaks: PeakConfig,
          match_distance: float) -> dict[str, float]:
    """Recall, precision (within ``match_distance``), share on navigable cells and mean count
    of the waypoints predicted from ``(n, 120, 12)`` heatmaps, pooled over the poses."""
    matched_targets = total_targets = matched_predictions = on_navigable = total_predictions = 0
    for prob, rows, nav in zip(probabilities, targets, navigable, strict=True):
        found = pick_peaks(prob, peaks.threshold, peaks.window_deg, peaks.max_waypoints)
        truth = rows[~np.isnan(rows[:, 0])]
        predicted = np.array([polar_to_xy(heading_of(h), distance_of(d)) for h, d, _ in found]).reshape(-1, 2)
        wanted = polar_to_xy(truth[:, 0], truth[:, 1]).reshape(-1, 2)
        gaps = np.linalg.norm(predicted[:, None] - wanted[None], axis=-1) if len(found) and len(truth) else None
        total_targets += len(truth)
        total_predictions += len(found)
        if gaps is not None:
            matched_targets += int((gaps.min(axis=0) <= match_distance).sum())
            matched_predictions += int((gaps.min(axis=1) <= match_distance).sum())
        on_navigable += sum(int(nav[h, d]) for h, d, _ in found)
    return {"recall": matched_targets / max(total_targets, 1), "precision": matched_predictions / max(total_predictions, 1),
            "navigable": on_navigable / max(total_predictions, 1), "waypoints": total_predictions / max(len(targets), 1)}


def predict_probabilities(net: Any, depth: np.ndarray, batch_size: int = 256) -> np.ndarray:
    """``(n, 120, 12)`` heatmap probabilities of ``(n, 12, s, s)`` depth."""
    from vlnverse.learning.torch_support import require_torch

    torch = require_torch()
    outs = []
    with torch.inference_mode():
        for start in range(0, len(depth), batch_size):
            outs.append(torch.sigmoid(net(torch.from_numpy(depth[start:start + batch_size].astype(np.float32)))).numpy())
    return np.concatenate(outs) if outs else np.zeros((0, HEADINGS, 12), dtype=np.float32)


def train_waypoints(config: WaypointTrainConfig, *, progress: Callable[[str, int, int], None] | None = None,
                    on_epoch_end: Callable[[EpochRow], None] | None = None) -> list[EpochRow]:
    """Train (or resume) the predictor on ``config.threads`` torch threads (the caller's
    setting back after); its per-epoch history."""
    from vlnverse.shared_settings import torch_threads

    with torch_threads(config.threads):
        return _train(config, progress, on_epoch_end)


def _train(config: WaypointTrainConfig, progress: Callable[[str, int, int], None] | None,
           on_epoch_end: Callable[[EpochRow], None] | None) -> list[EpochRow]:
    from vlnverse.learning.checkpoints import claim_run, resume, save_checkpoint, training_state
    from vlnverse.learning.torch_support import require_torch, seed_everything
    from vlnverse.learning.waypoints.samples import load_samples, render_split

    torch = require_torch()
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    claim_run(out, fingerprint(config), config)
    common = {"seed": config.seed, "input_size": config.net.input_size, "panorama": config.panorama,
              "targets": config.targets, "progress": progress}
    train = load_samples(render_split(config.dataset, config.split, out / "samples" / config.split,
                                      count=config.poses_per_scene, **common))
    val = None
    if config.val_split:
        val = load_samples(render_split(config.dataset, config.val_split, out / "samples" / config.val_split,
                                        count=max(config.poses_per_scene // 4, 1), **common))
    seed_everything(config.seed)
    net = build_net(config.net)
    optimizer = torch.optim.AdamW(net.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    (out / CHECKPOINTS).mkdir(exist_ok=True)
    history = [EpochRow(**row) for row in resume(out / CHECKPOINTS / LATEST, net, optimizer)]
    soft = torch.from_numpy(heatmap_targets(train["targets"]))
    depth = torch.from_numpy(train["depth"])
    val_soft = torch.from_numpy(heatmap_targets(val["targets"])) if val is not None else None
    loss_fn = torch.nn.BCEWithLogitsLoss()
    logger = EpochScalars(out, len(history), "waypoints",
                          ("loss", "val_loss", "recall", "precision", "navigable", "waypoints"))
    try:
        for epoch in range(len(history) + 1, config.epochs + 1):
            started = time.perf_counter()
            rng = np.random.default_rng([config.seed, epoch])
            order = rng.permutation(len(depth))
            net.train()
            total = 0.0
            batches = range(0, len(order), config.batch_size)
            for n, start in enumerate(batches):
                index = torch.from_numpy(order[start:start + config.batch_size])
                turn = int(rng.integers(VIEWS))  # as if the agent had turned 30° * turn to the left
                x = torch.roll(depth[index].float(), -turn, dims=1)
                y = torch.roll(soft[index], -turn * BINS_PER_VIEW, dims=1)
                loss = loss_fn(net(x), y)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                total += float(loss.detach()) * len(index)
                if progress:
                    progress(f"epoch {epoch}", n + 1, len(batches))
            net.eval()
            row = {"val_loss": None, "recall": None, "precision": None, "navigable": None, "waypoints": None}
            if val is not None:
                probabilities = predict_probabilities(net, val["depth"])
                with torch.inference_mode():
                    row["val_loss"] = float(torch.nn.functional.binary_cross_entropy(
                        torch.from_numpy(probabilities).clamp(1e-6, 1 - 1e-6), val_soft))
                row.update(score(probabilities, val["targets"], val["navigable"], config.peaks, config.match_distance))
            path = out / CHECKPOINTS / f"epoch_{epoch:03d}.pt"
            stats = EpochRow(epoch=epoch, loss=total / len(order), seconds=time.perf_counter() - started,
                             checkpoint=str(path.resolve()), **row)
            history.append(stats)
            save_checkpoint(checkpoint_payload(net, config), path)
            save_checkpoint({"model": net.state_dict(),
                             **training_state(optimizer, [dataclasses.asdict(e) for e in history])},
                            out / CHECKPOINTS / LATEST)
            _write_outputs(out, history)
            logger.log(stats)
            if on_epoch_end:
                on_epoch_end(stats)
    finally:
        logger.close()
    return history


def fingerprint(config: WaypointTrainConfig) -> str:
    """What decides the weights of the epochs done so far (not how many epochs, where or how fast)."""
    data = config_to_dict(config)
    for name in ("epochs", "out", "threads"):
        data.pop(name)
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def checkpoint_payload(net: Any, config: WaypointTrainConfig) -> dict[str, Any]:
    """What a predictor checkpoint holds: weights, the network's and peak settings, provenance."""
    return {"kind": "waypoint_predictor", "model": {k: v.detach().clone() for k, v in net.state_dict().items()},
            "net_config": dataclasses.asdict(config.net), "peaks": dataclasses.asdict(config.peaks),
            "train_config": config_to_dict(config)}


def best_epoch(history: list[EpochRow]) -> EpochRow:
    """The epoch of the highest validation F1 (the latest when there is no validation)."""
    def f1(e: EpochRow) -> float:
        if e.recall is None or e.precision is None or e.recall + e.precision == 0:
            return 0.0
        return 2 * e.recall * e.precision / (e.recall + e.precision)
    return max(reversed(history), key=f1)


def _write_outputs(out: Path, history: list[EpochRow]) -> None:
    write_json_atomic(out / "history.json", [dataclasses.asdict(e) for e in history])
    best = best_epoch(history)
    write_text_atomic(out / "agent.yaml",
                      f"# vlnverse eval --agent text_history --agent-config {out / 'agent.yaml'}\n"
                      f"# best epoch {best.epoch} (val recall {best.recall}, precision {best.precision})\n"
                      + yaml.safe_dump({"waypoint_predictor": "learned", "waypoint_checkpoint": best.checkpoint},
                                       sort_keys=True))
    _plot(out / "curves.png", history)


def _plot(path: Path, history: list[EpochRow]) -> None:
    from matplotlib.figure import Figure

    epochs = [e.epoch for e in history]
    fig = Figure(figsize=(9, 3.5))
    axes = fig.subplots(1, 2)
    axes[0].plot(epochs, [e.loss for e in history], marker="o", label="train loss")
    if any(e.val_loss is not None for e in history):
        axes[0].plot(epochs, [e.val_loss for e in history], marker="s", label="val loss")
        for name in ("recall", "precision", "navigable"):
            axes[1].plot(epochs, [100 * (getattr(e, name) or 0) for e in history], marker="o", label=f"val {name} %")
        axes[1].legend()
    axes[0].legend()
    for axis in axes:
        axis.set_xlabel("epoch")
    fig.suptitle("waypoint predictor")
    fig.tight_layout()
    with atomic_open(path, "wb") as handle:
        fig.savefig(handle, format="png", dpi=90)
