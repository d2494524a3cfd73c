"""The trained waypoint predictor as the LLM agents' candidate source (``waypoint_predictor: learned``).

:class:`LearnedWaypoints` runs a checkpoint of ``vlnverse train waypoints`` (by default the
one shipped in the package, ``vlnverse/data/waypoints/``) on the panorama's depth and turns
the heatmap's peaks into :class:`~vlnverse.agents.waypoints.candidate.Candidate` objects. Ids keep the
depth predictor's convention (the letter of the ``spacing_deg`` heading slot, ``A`` straight ahead, then
counter-clockwise); of two peaks in one slot the stronger is kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import string
from pathlib import Path
from typing import Any

import numpy as np

from vlnverse.agents.config import WaypointConfig
from vlnverse.agents.panorama import Panorama
from vlnverse.agents.waypoints.candidate import Candidate
from vlnverse.agents.waypoints.learned.grid import distance_of, heading_of
from vlnverse.agents.waypoints.learned.net import (
    TORCH_PURPOSE,
    PeakConfig,
    WaypointNetConfig,
    build_net,
    pick_peaks,
)
from vlnverse.data import data_path
from vlnverse.errors import ConfigError
from vlnverse.shared_settings import TORCH_THREADS
from vlnverse.weights import load_weights, require_torch

#: The checkpoint shipped with the repository (README: how it was trained and validated).
SHIPPED_CHECKPOINT = data_path("waypoints", "waypoint_predictor.pt")


def load_predictor_checkpoint(path: str | Path) -> tuple[Any, dict[str, Any]]:
    """The network (eval mode, CPU) and the checkpoint of ``path``.

    Raises:
        DependencyNotInstalled: torch is missing (it comes with the ``train`` and ``hf`` extras).
        ConfigError: the file is missing or is not a waypoint predictor checkpoint.
    """
    from vlnverse.config import config_from_mapping

    require_torch(TORCH_PURPOSE)

    with one_thread():  # no OpenMP pool in a process that eval workers are forked from
        state = load_weights(path, what="waypoint predictor checkpoint")
        if not isinstance(state, dict) or state.get("kind") != "waypoint_predictor":
            raise ConfigError(f"{path} is not a waypoint predictor checkpoint (vlnverse train waypoints)")
        net = build_net(config_from_mapping(WaypointNetConfig, state["net_config"], where=f"checkpoint {path}"))
        net.load_state_dict(state["model"])
    net.eval()
    return net, state


def one_thread() -> contextlib.AbstractContextManager:
    """Torch on one CPU thread inside the block (the caller's setting back after, even when
    several threads predict at once). Run this way, the predictor never starts torch's
    OpenMP thread pool, which a forked child (an eval worker) would inherit broken and wait
    on for ever."""
    return TORCH_THREADS.held(1)


class LearnedWaypoints:
    """Candidates at the peaks of the trained predictor's heatmap.

    Args:
        config: ``max_candidates`` caps the count, ``spacing_deg`` gives the id slots and
            ``min_distance`` / ``max_distance`` bound the distances; the depth-only settings
            (safety margin, body size) do not apply.
        checkpoint: A ``vlnverse train waypoints`` checkpoint (None: the shipped one).

    It predicts on one torch thread (see :func:`one_thread`).
    """

    def __init__(self, config: WaypointConfig | None = None, checkpoint: str | Path | None = None) -> None:
        from vlnverse.config import config_from_mapping

        self.config = config or WaypointConfig()
        self.checkpoint = Path(checkpoint) if checkpoint else SHIPPED_CHECKPOINT
        self.net, state = load_predictor_checkpoint(self.checkpoint)
        self.peaks = config_from_mapping(PeakConfig, state["peaks"], where=f"checkpoint {self.checkpoint}")
        self.slots = round(360.0 / self.config.spacing_deg)
        self.ids = string.ascii_uppercase[:self.slots]
        self.digest = hashlib.sha256(self.checkpoint.read_bytes()).hexdigest()[:16]

    def describe(self) -> dict[str, Any]:
        """What ``run.json`` records of the predictor that ran."""
        shipped = self.checkpoint.resolve() == SHIPPED_CHECKPOINT
        return {"name": "learned", "checkpoint": "shipped" if shipped else str(self.checkpoint),
                "sha256": self.digest}

    def heatmap(self, panorama: Panorama) -> np.ndarray:
        """``(120, 12)`` waypoint probabilities of the panorama."""
        import torch

        if panorama.config.views != 12:
            raise ConfigError(f"the learned waypoint predictor reads 12 views, the panorama has {panorama.config.views}")
        depth = torch.from_numpy(np.stack([np.asarray(d, dtype=np.float32) for d in panorama.depth])[None])
        with one_thread(), torch.inference_mode():
            return torch.sigmoid(self.net(depth))[0].numpy()

    def predict(self, panorama: Panorama) -> list[Candidate]:
        cfg = self.config
        peaks = pick_peaks(self.heatmap(panorama), self.peaks.threshold, self.peaks.window_deg, 120)
        taken: dict[int, Candidate] = {}
        for h, d, _ in peaks:  # strongest first
            heading = float(heading_of(h))
            slot = round(math.degrees(heading) / cfg.spacing_deg) % self.slots
            distance = float(min(distance_of(d), cfg.max_distance))
            if slot in taken or distance < cfg.min_distance:
                continue
            taken[slot] = Candidate(self.ids[slot], heading, round(distance, 2), panorama.view_toward(heading))
            if len(taken) == cfg.max_candidates:
                break
        return [taken[s] for s in sorted(taken)]
