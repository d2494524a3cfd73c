"""Files shared by the trainers: the run's claim on its folder, atomic checkpoint saves and
resuming from ``latest.pt``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vlnverse.config import config_to_dict
from vlnverse.errors import ConfigError
from vlnverse.fileio import atomic_open, write_json_atomic
from vlnverse.learning.torch_support import require_torch, rng_state, set_rng_state


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
    (float16 training) the loss scaler's state."""
    state = {"optimizer": optimizer.state_dict(), "rng": rng_state(), "history": history}
    if scaler is not None and scaler.is_enabled():
        state["scaler"] = scaler.state_dict()
    return state


def resume(latest: Path, model: Any, optimizer: Any, scaler: Any = None) -> list[dict[str, Any]]:
    """Restore model, optimizer, RNG (and loss scaler) states from ``latest`` (if it exists); its history rows.

    The checkpoint is read onto the CPU: the RNG states must stay CPU byte tensors, and the
    model's and optimizer's ``load_state_dict`` copy the rest onto the parameters' device."""
    if not latest.is_file():
        return []
    torch = require_torch()
    state = torch.load(latest, map_location="cpu", weights_only=False)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    set_rng_state(state["rng"])
    if scaler is not None and scaler.is_enabled() and state.get("scaler"):
        scaler.load_state_dict(state["scaler"])
    return list(state["history"])
