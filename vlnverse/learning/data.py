"""Pre-rendered episodes as torch tensors: a ``Dataset`` and the padding collate function."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from vlnverse.learning.distributed import GHOST
from vlnverse.learning.frames import FrameStore
from vlnverse.learning.models.config import START_ACTION
from vlnverse.learning.torch_support import require_torch
from vlnverse.tasks.formats.vocab import build_vocab, encode

torch = require_torch()


def vocabulary(*stores: FrameStore) -> dict[str, Any]:
    """The VLN-CE-style vocabulary of the training instructions (of every store, in order)."""
    return build_vocab(e.instruction for store in stores for e in store.episodes)


def inflection_coefficient(*stores: FrameStore) -> float:
    """VLN-CE's inflection weight: steps per inflection (an action differing from the last)."""
    steps = inflections = 0
    for store in stores:
        for scene_id in store.records:
            actions = store.steps(scene_id)["actions"]
            for ep in (e for e in store.episodes if e.scene_id == scene_id):
                a = actions[ep.start:ep.start + ep.length]
                steps += len(a)
                inflections += 1 + int(np.count_nonzero(a[1:] != a[:-1]))
    return steps / inflections if inflections else 1.0


def motion(poses: np.ndarray) -> np.ndarray:
    """What each step did, ``(distance forward, heading change)`` (L, 2) float32, from the pose
    it was taken at to the next one (the last step: none)."""
    poses = np.asarray(poses, dtype=np.float64).reshape(-1, 4)
    out = np.zeros((len(poses), 2), dtype=np.float32)
    delta, yaw = poses[1:, :2] - poses[:-1, :2], poses[:-1, 3]
    out[:-1, 0] = delta[:, 0] * np.cos(yaw) + delta[:, 1] * np.sin(yaw)
    out[:-1, 1] = np.angle(np.exp(1j * (poses[1:, 3] - poses[:-1, 3])))
    return out


def route_progress(poses: np.ndarray) -> np.ndarray:
    """The share of an oracle walk's route behind each step's pose (L,) float32 in [0, 1]: the
    distance walked so far over the whole walk's length (1 everywhere for a walk that never
    moves). The oracle follows the shortest path, so this is the geodesic progress towards
    where it stops, the progress monitor's target."""
    xy = np.asarray(poses, dtype=np.float64).reshape(-1, 4)[:, :2]
    walked = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(xy, axis=0), axis=1))])
    if walked[-1] <= 0.0:
        return np.ones(len(xy), dtype=np.float32)
    return (walked / walked[-1]).astype(np.float32)


class EpisodeTensors(torch.utils.data.Dataset):
    """Episode ``i`` of a :class:`FrameStore` as tensors (frames, actions, instruction tokens,
    and the progress target: :func:`route_progress` of an ``oracle_walks`` store, NaN, no
    target, for walks the oracle did not lead, as DAgger's)."""

    def __init__(self, store: FrameStore, vocab: dict[str, Any], max_tokens: int, *, oracle_walks: bool = True) -> None:
        self.store, self.vocab, self.max_tokens, self.oracle_walks = store, vocab, max_tokens, oracle_walks

    def __len__(self) -> int:
        return len(self.store)

    def __getitem__(self, index: int) -> dict[str, Any]:
        ep = self.store.episode(index)
        progress = route_progress(ep["poses"]) if self.oracle_walks else np.full(len(ep["actions"]), np.nan, np.float32)
        return {"rgb": torch.from_numpy(np.ascontiguousarray(ep["rgb"])), "motion": torch.from_numpy(motion(ep["poses"])),
                "progress": torch.from_numpy(progress),
                "depth": torch.from_numpy(np.asarray(ep["depth"], dtype=np.float32)),
                "actions": torch.from_numpy(np.asarray(ep["actions"], dtype=np.int64)),
                "tokens": torch.tensor(encode(ep["instruction"], self.vocab, self.max_tokens), dtype=torch.int64)}


class WithGhosts(torch.utils.data.Dataset):
    """``dataset``, and at index ``GHOST + i`` its item ``i`` marked as a ghost (no weight; see
    :mod:`vlnverse.learning.distributed`)."""

    def __init__(self, dataset: Any) -> None:
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> dict[str, Any]:
        if index < GHOST:
            return self.dataset[index]
        return {**self.dataset[index - GHOST], "ghost": True}


def collate(items: Sequence[dict[str, Any]], inflection: float = 1.0) -> dict[str, Any]:
    """Pad episodes to the longest: ``mask`` marks real steps, ``weights`` carry the
    inflection weighting (none for a ghost's steps), ``prev_actions`` the teacher's previous
    action (START first)."""
    steps = max(len(item["actions"]) for item in items)
    batch = len(items)

    def pad(name: str) -> Any:
        first = items[0][name]
        out = torch.zeros((batch, steps, *first.shape[1:]), dtype=first.dtype)
        for i, item in enumerate(items):
            out[i, :len(item[name])] = item[name]
        return out

    actions = torch.zeros(batch, steps, dtype=torch.int64)
    mask = torch.zeros(batch, steps, dtype=torch.bool)
    for i, item in enumerate(items):
        actions[i, :len(item["actions"])] = item["actions"]
        mask[i, :len(item["actions"])] = True
    prev = torch.cat([torch.full((batch, 1), START_ACTION, dtype=torch.int64), actions[:, :-1]], dim=1)
    weights = torch.where(actions != prev, torch.tensor(inflection), torch.tensor(1.0)) * mask
    weights[[i for i, item in enumerate(items) if item.get("ghost")]] = 0.0
    return {"rgb": pad("rgb"), "depth": pad("depth"), "motion": pad("motion"), "progress": pad("progress"),
            "actions": actions, "prev_actions": prev, "mask": mask, "weights": weights,
            "tokens": torch.stack([item["tokens"] for item in items])}
