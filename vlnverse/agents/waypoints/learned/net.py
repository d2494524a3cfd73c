"""The waypoint predictor network, its peak picking and peak settings (torch: the ``train`` or ``hf`` extra).

A small version of Hong et al.'s (CVPR 2022) discrete-to-continuous predictor: each of the
12 depth views is pooled to ``input_size`` px and encoded by a shared CNN into one token;
two circular 1-D convolutions over the 12 tokens let each view see its neighbours (the
same weights for every view, so turning the agent only turns the output); each token
then scores its own 30° of the heatmap (10 heading bins × 12 distances). Peaks are picked
by non-maximum suppression over a heading window.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from vlnverse.agents.waypoints.learned.grid import DISTANCES, HEADING_STEP, HEADINGS
from vlnverse.errors import ConfigError
from vlnverse.weights import require_torch

VIEWS = 12
BINS_PER_VIEW = HEADINGS // VIEWS


TORCH_PURPOSE = ("the learned waypoint predictor, the LLM agents' default; "
                 "or set waypoint_predictor: depth in the agent config")
"""What a missing torch stops, in :func:`vlnverse.weights.require_torch`'s error."""


@dataclass(frozen=True)
class PeakConfig:
    """How waypoints are read from the heatmap.

    Attributes:
        threshold: Lowest cell probability of a waypoint.
        window_deg: Non-maximum suppression over ± this heading window.
        max_waypoints: Most waypoints per panorama.
    """

    threshold: float = 0.3
    window_deg: float = 15.0
    max_waypoints: int = 8


@dataclass(frozen=True)
class WaypointNetConfig:
    """Attributes:
        input_size: Side each depth view is area-pooled to (px).
        channels: Channels of the per-view CNN's stride-2 layers.
        dim: Width of a view's token.
        max_depth: Depth is clipped here and scaled to [0, 1] (m).
    """

    input_size: int = 32
    channels: tuple[int, ...] = (16, 32, 64)
    dim: int = 128
    max_depth: float = 10.0

    def __post_init__(self) -> None:
        if self.input_size % (1 << len(self.channels)):
            raise ConfigError("waypoint net: input_size must be divisible by 2 ** len(channels)")


def build_net(config: WaypointNetConfig) -> Any:
    """The :class:`torch.nn.Module`: ``(B, 12, H, W)`` metric depth → ``(B, 120, 12)`` logits."""
    torch = require_torch(TORCH_PURPOSE)
    nn = torch.nn

    class WaypointNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.config = config
            layers: list[Any] = []
            previous = 1
            for width in config.channels:
                layers += [nn.Conv2d(previous, width, 3, stride=2, padding=1), nn.GroupNorm(4, width), nn.ReLU()]
                previous = width
            side = config.input_size >> len(config.channels)
            self.encoder = nn.Sequential(*layers, nn.Flatten(), nn.Linear(previous * side * side, config.dim), nn.ReLU())
            self.context = nn.ModuleList(nn.Conv1d(config.dim, config.dim, 3, padding=1, padding_mode="circular")
                                         for _ in range(2))
            self.head = nn.Linear(config.dim, BINS_PER_VIEW * DISTANCES)

        def forward(self, depth: Any) -> Any:
            batch = depth.shape[0]
            x = depth.reshape(batch * VIEWS, 1, *depth.shape[-2:]).float()
            if x.shape[-1] != config.input_size or x.shape[-2] != config.input_size:
                x = torch.nn.functional.adaptive_avg_pool2d(x, config.input_size)
            x = (x.clamp(0.0, config.max_depth) / config.max_depth)
            tokens = self.encoder(x).reshape(batch, VIEWS, -1).transpose(1, 2)   # (B, dim, 12)
            for conv in self.context:
                tokens = tokens + torch.relu(conv(tokens))
            logits = self.head(tokens.transpose(1, 2))                            # (B, 12, 10 * 12)
            logits = logits.reshape(batch, HEADINGS, DISTANCES)                   # view i: bins 10i .. 10i+9
            return torch.roll(logits, -(BINS_PER_VIEW // 2), dims=1)               # centre them on the view's axis

    return WaypointNet()


def pick_peaks(probabilities: np.ndarray, threshold: float, window_deg: float, max_peaks: int) -> list[tuple[int, int, float]]:
    """Non-maximum suppression of a ``(120, 12)`` heatmap: the cells that are the maximum of
    every distance within ± ``window_deg`` of their heading, above ``threshold``, the best
    ``max_peaks`` as ``(heading bin, distance bin, probability)``."""
    half = max(int(round(math.radians(window_deg) / HEADING_STEP)), 0)
    column = probabilities.max(axis=1)
    neighbourhood = np.max(np.stack([np.roll(column, k) for k in range(-half, half + 1)]), axis=0)
    best_distance = probabilities.argmax(axis=1)
    peaks = [(int(h), int(best_distance[h]), float(column[h])) for h in range(HEADINGS)
             if column[h] >= threshold and column[h] >= neighbourhood[h]]
    peaks.sort(key=lambda p: -p[2])
    kept: list[tuple[int, int, float]] = []
    for peak in peaks:  # equal neighbours (a plateau) would both pass: keep the first
        if all(min(abs(peak[0] - k[0]) % HEADINGS, HEADINGS - abs(peak[0] - k[0]) % HEADINGS) > half for k in kept):
            kept.append(peak)
        if len(kept) == max_peaks:
            break
    return kept
