"""Files shared by the trainers: the run's claim on its folder, atomic checkpoint saves and
resuming from ``latest.pt``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from vlnverse.config import config_to_dict
from vlnverse.errors import ConfigError
from vlnverse.fileio import atomic_open, write_json_atomic
from vlnverse.learning.torch_support import require_torch, rng_state, set_rng_state
from vlnverse.weights import legacy_rng_globals, load_weights


def claim_run(out: Path, fingerprint: str, config: Any) -> None:
    """Record the run's fingerprint in ``OUT/train.json``; refuse a folder of another config
    (a resumed run must continue the same training)."""
    path = out / "train.json"
    if path.is_file():
        previous = json.loads(path.read_text(encoding="utf-8"))
        if previous.get("fingerprint") != fingerprint:
            raise ConfigError(f"{out} holds a training run of another configuration; use another --out")
    write_json_atomic(path, {"fingerprint": fingerprint, "config": config_to_dict(config)})


def save_checkpoint(payload: dict[str, Any], path: Path) -> None:
    """``torch.save`` written atomically (a killed run never leaves half a checkpoint)."""
    torch = require_torch()
    with atomic_open(path, "wb") as handle:
        torch.save(payload, handle)


def training_state(optimizer: Any, history: list[dict[str, Any]], scaler: Any = None) -> dict[str, Any]:
    """What ``latest.pt`` adds to the model: optimizer, RNG states, the history so far and
    (float16 training) the loss scaler's state, all tensors and plain data."""
    state = {"optimizer": optimizer.state_dict(), "rng": rng_state(), "history": _plain(history)}
    if scaler is not None and scaler.is_enabled():
        state["scaler"] = scaler.state_dict()
    return state


def resume(latest: Path, model: Any, optimizer: Any, scaler: Any = None) -> list[dict[str, Any]]:
    """Restore model, optimizer, RNG (and loss scaler) states from ``latest`` (if it exists); its history rows.

    The checkpoint is read onto the CPU: the RNG states must stay CPU byte tensors, and the
    model's and optimizer's ``load_state_dict`` copy the rest onto the parameters' device. It is
    read as data (:func:`~vlnverse.weights.load_weights`); a ``latest.pt`` written before
    RNG states were plain data may also hold numpy's RNG key array and scalars."""
    if not latest.is_file():
        return []
    state = load_weights(latest, what="training checkpoint", allow=legacy_rng_globals())
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    set_rng_state(state["rng"])
    if scaler is not None and scaler.is_enabled() and state.get("scaler"):
        scaler.load_state_dict(state["scaler"])
    return list(state["history"])


def _plain(value: Any) -> Any:
    """``value`` with numpy scalars as Python numbers (a checkpoint holds plain data only)."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(item) for item in value)
    return value.item() if isinstance(value, np.generic) else value
