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


def training_state(optimizer: Any, history: list[dict[str, Any]]) -> dict[str, Any]:
    """What ``latest.pt`` adds to the model: optimizer, RNG states and the history so far."""
    return {"optimizer": optimizer.state_dict(), "rng": rng_state(), "history": history}


def resume(latest: Path, model: Any, optimizer: Any, device: Any) -> list[dict[str, Any]]:
    """Restore model, optimizer and RNG states from ``latest`` (if it exists); its history rows."""
    if not latest.is_file():
        return []
    torch = require_torch()
    state = torch.load(latest, map_location=device, weights_only=False)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    set_rng_state(state["rng"])
    return list(state["history"])
