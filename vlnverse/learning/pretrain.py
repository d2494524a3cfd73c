"""Pretrained visual encoders for the imitation baselines (``vlnverse train encoders``).

VLN-CE starts from encoders trained elsewhere (ImageNet for RGB, point-goal navigation for
depth); we cannot download those, but every frame our renderer makes comes with its depth. So:

- the RGB trunk learns to predict each frame's depth, pooled to the trunk's own grid (8 × 8
  for 64 px frames), from the RGB frame alone: walls, openings and floor from appearance. An
  L1 loss; the figure of merit is the held-out homes' error against a constant prediction
  (the training frames' mean depth map);
- the depth trunk is the waypoint predictor's CNN (trunk ``waypoints``), which learned from
  depth where the navigable places around the agent are; its weights are copied from a
  waypoint predictor checkpoint (``depth_trunk="cnn"`` leaves the depth encoder untrained).

The frames are the pre-rendered frames of the track's train split and of augmentation sets
(:mod:`vlnverse.learning.prerender`); a few homes of the last set are held out. The result is
``OUT/encoders.pt`` (``rgb_encoder.trunk.*`` and ``depth_encoder.trunk.*`` weights, the trunks'
names and sizes, and the data they saw) for ``vlnverse train cma --encoders OUT/encoders.pt``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vlnverse.config import config_to_dict
from vlnverse.errors import ConfigError
from vlnverse.fileio import write_json_atomic
from vlnverse.shared_settings import torch_threads

log = logging.getLogger(__name__)

ENCODERS = "encoders.pt"
#: Scenes whose frames are shuffled together (a batch mixes this many homes).
SCENES_PER_POOL = 8


@dataclass(frozen=True)
class EncoderPretrainConfig:
    """One pretraining run.

    Attributes:
        frames: A pre-render folder whose ``train`` split is read (the track's frames).
        out: Output folder.
        augment: Augmentation sets (``vlnverse release augment``) whose frames are read too.
        channels: The RGB trunk's channels (the ``cpu`` preset's by default, which the
            imitation run must use too).
        depth_trunk: ``waypoints`` (copied from ``waypoint_checkpoint``) or ``cnn`` (not pretrained).
        waypoint_checkpoint: A ``vlnverse train waypoints`` checkpoint (None: the shipped one).
        epochs: Passes over the training frames.
        batch_size: Frames per step.
        lr: AdamW learning rate.
        frame_stride: Every ``frame_stride``-th frame of each home (consecutive frames are near copies).
        val_scenes: Homes of the last frame store held out for validation.
        seed: Seeds the weights and the order of the frames.
        threads: Torch CPU threads (None: torch's setting).
    """

    frames: str
    out: str
    augment: tuple[str, ...] = ()
    channels: tuple[int, int, int] = (16, 32, 32)
    depth_trunk: str = "waypoints"
    waypoint_checkpoint: str | None = None
    epochs: int = 4
    batch_size: int = 256
    lr: float = 1e-3
    frame_stride: int = 2
    val_scenes: int = 2
    seed: int = 0
    threads: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "augment", tuple(str(a) for a in self.augment))
        object.__setattr__(self, "channels", tuple(self.channels))
        for name in ("epochs", "batch_size", "frame_stride", "val_scenes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"encoder pretraining {name} must be a positive integer, got {value!r}")
        if self.depth_trunk not in ("waypoints", "cnn"):
            raise ConfigError(f"depth_trunk must be 'waypoints' or 'cnn', got {self.depth_trunk!r}")
        if not self.lr > 0:
            raise ConfigError(f"lr must be positive, got {self.lr!r}")


@dataclass
class PretrainEpoch:
    """One epoch: mean L1 (depth in [0, 1]) on the training frames and on the held-out homes,
    and the held-out error of the constant mean-depth prediction."""

    epoch: int
    train_l1: float
    val_l1: float
    val_l1_constant: float
    frames: int
    seconds: float


def pretrain_encoders(config: EncoderPretrainConfig,
                      on_epoch_end: Callable[[PretrainEpoch], None] | None = None) -> list[PretrainEpoch]:
    """Train the RGB trunk on depth targets, copy the depth trunk, write ``OUT/encoders.pt``."""
    from vlnverse.learning.frames import FrameStore, augment_digest
    from vlnverse.learning.models.trunks import small_cnn
    from vlnverse.learning.torch_support import require_torch, seed_everything

    torch = require_torch()
    stores = [FrameStore(config.frames, "train")]
    for folder in config.augment:
        augment_digest(folder)
        stores.append(FrameStore(Path(folder) / "frames", "train"))
    sizes = _frame_sizes(stores)
    train_scenes, val_scenes = _split_scenes(stores, config.val_scenes)
    seed_everything(config.seed)
    trunk = small_cnn(3, config.channels)
    head = torch.nn.Conv2d(config.channels[-1], 1, 1)
    model = torch.nn.Sequential(trunk, head)
    grid = int(trunk(torch.zeros(1, 3, sizes["rgb_size"], sizes["rgb_size"])).shape[-1])
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.01)
    with torch_threads(config.threads):
        mean_map = _mean_depth_map(train_scenes, config.frame_stride, grid)
        history = []
        for epoch in range(1, config.epochs + 1):
            started = time.perf_counter()
            rng = np.random.default_rng(config.seed * 1_000_003 + epoch)
            model.train()
            total = frames = 0
            for rgb, target in _batches(train_scenes, config, grid, rng):
                loss = (model(rgb).squeeze(1) - target).abs().mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total += float(loss.detach()) * len(rgb)
                frames += len(rgb)
            val, constant = _validate(model, val_scenes, config, grid, mean_map)
            history.append(PretrainEpoch(epoch, total / max(frames, 1), val, constant, frames,
                                         time.perf_counter() - started))
            if on_epoch_end:
                on_epoch_end(history[-1])
    _write(config, trunk, sizes, history)
    return history


def _frame_sizes(stores: list[Any]) -> dict[str, Any]:
    keys = ("rgb_size", "depth_size", "depth_dtype")
    first = {key: stores[0].config.get(key) for key in keys}
    for store in stores[1:]:
        theirs = {key: store.config.get(key) for key in keys}
        if theirs != first:
            raise ConfigError(f"frames of {store.root} are stored as {theirs}, those of {stores[0].root} as {first}")
    return first


def _split_scenes(stores: list[Any], held_out: int) -> tuple[list[tuple[Any, str]], list[tuple[Any, str]]]:
    """(store, scene) pairs to train on and the last ``held_out`` homes of the last store."""
    scenes = [(store, scene_id) for store in stores for scene_id in sorted(store.records)]
    if len(scenes) <= held_out:
        raise ConfigError(f"{len(scenes)} home(s) of frames: too few to hold {held_out} out for validation")
    return scenes[:-held_out], scenes[-held_out:]


def _scene_frames(store: Any, scene_id: str, stride: int) -> tuple[np.ndarray, np.ndarray]:
    """Every ``stride``-th RGB and depth frame of a home."""
    count = sum(e.length for e in store.episodes if e.scene_id == scene_id)
    rgb = store.frames(scene_id, "rgb", 0, count)[::stride]
    depth = store.frames(scene_id, "depth", 0, count)[::stride]
    return rgb, depth


def _depth_targets(depth: np.ndarray, grid: int) -> np.ndarray:
    """Depth frames (N, H, W, 1) averaged over ``grid × grid`` cells: (N, grid, grid) float32."""
    n, height, width = depth.shape[:3]
    cells = depth.reshape(n, grid, height // grid, grid, width // grid).astype(np.float32)
    return cells.mean(axis=(2, 4))


def _mean_depth_map(scenes: list[tuple[Any, str]], stride: int, grid: int) -> np.ndarray:
    total, count = np.zeros((grid, grid), dtype=np.float64), 0
    for store, scene_id in scenes:
        _, depth = _scene_frames(store, scene_id, stride)
        targets = _depth_targets(depth, grid)
        total += targets.sum(axis=0)
        count += len(targets)
    return (total / max(count, 1)).astype(np.float32)


def _batches(scenes: list[tuple[Any, str]], config: EncoderPretrainConfig, grid: int,
             rng: np.random.Generator) -> Iterator[tuple[Any, Any]]:
    """Shuffled batches; a batch mixes the frames of ``SCENES_PER_POOL`` homes."""
    from vlnverse.learning.torch_support import require_torch

    torch = require_torch()
    order = rng.permutation(len(scenes))
    for start in range(0, len(order), SCENES_PER_POOL):
        parts = [_scene_frames(*scenes[i], config.frame_stride) for i in order[start:start + SCENES_PER_POOL]]
        rgb = np.concatenate([p[0] for p in parts])
        targets = _depth_targets(np.concatenate([p[1] for p in parts]), grid)
        shuffle = rng.permutation(len(rgb))
        for first in range(0, len(shuffle), config.batch_size):
            pick = np.sort(shuffle[first:first + config.batch_size])
            yield _rgb_tensor(torch, rgb[pick]), torch.from_numpy(targets[pick])


def _rgb_tensor(torch: Any, rgb: np.ndarray) -> Any:
    """uint8 (N, H, W, 3) → float (N, 3, H, W) in [0, 1], as the policies' RGB encoder reads it."""
    return torch.from_numpy(np.ascontiguousarray(rgb)).permute(0, 3, 1, 2).float().div_(255.0)


def _validate(model: Any, scenes: list[tuple[Any, str]], config: EncoderPretrainConfig, grid: int,
              mean_map: np.ndarray) -> tuple[float, float]:
    from vlnverse.learning.torch_support import require_torch

    torch = require_torch()
    model.eval()
    error = constant = count = 0.0
    with torch.no_grad():
        for store, scene_id in scenes:
            rgb, depth = _scene_frames(store, scene_id, config.frame_stride)
            targets = _depth_targets(depth, grid)
            for first in range(0, len(rgb), config.batch_size):
                predicted = model(_rgb_tensor(torch, rgb[first:first + config.batch_size])).squeeze(1).numpy()
                error += float(np.abs(predicted - targets[first:first + config.batch_size]).mean(axis=(1, 2)).sum())
            constant += float(np.abs(targets - mean_map).mean(axis=(1, 2)).sum())
            count += len(targets)
    return error / max(count, 1.0), constant / max(count, 1.0)


def _write(config: EncoderPretrainConfig, trunk: Any, sizes: dict[str, Any], history: list[PretrainEpoch]) -> None:
    from vlnverse.learning.checkpoints import save_checkpoint
    from vlnverse.learning.frames import augment_digest

    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    state = {f"rgb_encoder.trunk.{key}": value for key, value in trunk.state_dict().items()}
    depth_source = None
    if config.depth_trunk == "waypoints":
        from vlnverse.agents.waypoints.learned.predictor import SHIPPED_CHECKPOINT
        from vlnverse.learning.models.trunks import waypoint_trunk_weights
        from vlnverse.weights import load_weights

        path = config.waypoint_checkpoint or str(SHIPPED_CHECKPOINT)
        waypoints = load_weights(path, what="waypoint predictor checkpoint")
        if not isinstance(waypoints, dict) or waypoints.get("kind") != "waypoint_predictor":
            raise ConfigError(f"{path} is not a waypoint predictor checkpoint (vlnverse train waypoints)")
        state.update(waypoint_trunk_weights(waypoints, where=path))
        depth_source = {"waypoint_predictor": hashlib.sha256(Path(path).read_bytes()).hexdigest(),
                        "trained_on": waypoints.get("train_config", {}).get("dataset")}
    pretrained_on = {"frames": str(config.frames), "augment": [augment_digest(folder) for folder in config.augment]}
    payload = {"kind": "encoders", "trunks": {"rgb": "cnn", "depth": config.depth_trunk},
               "channels": list(config.channels), **sizes, "state_dict": state,
               "pretrained_on": pretrained_on, "depth_source": depth_source,
               "config": config_to_dict(config),
               "history": [dataclasses.asdict(e) for e in history]}
    save_checkpoint(payload, out / ENCODERS)
    write_json_atomic(out / "history.json", payload["history"])
    log.info("encoders written to %s", out / ENCODERS)


def describe(history: list[PretrainEpoch]) -> str:
    """One line per epoch."""
    return "\n".join(f"epoch {e.epoch}: train L1 {e.train_l1:.4f}, held-out L1 {e.val_l1:.4f} "
                     f"(constant {e.val_l1_constant:.4f}), {e.frames} frames, {e.seconds:.0f} s" for e in history)
