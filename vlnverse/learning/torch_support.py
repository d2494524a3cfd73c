"""The ``train`` extra: importing torch lazily, devices and seeding."""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from vlnverse.errors import ConfigError, DependencyNotInstalled


def require_torch() -> Any:
    """The ``torch`` module, or :class:`DependencyNotInstalled` naming the ``train`` extra."""
    try:
        import torch
    except ImportError as exc:
        raise DependencyNotInstalled("torch", extra="train", purpose="training and running learned agents") from exc
    return torch


def resolve_device(name: str) -> Any:
    """``cpu``, ``cuda``, ``cuda:N`` or ``auto`` (cuda when available) as a torch device."""
    torch = require_torch()
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"device {name!r} requested but CUDA is not available (use --device cpu)")
    try:
        return torch.device(name)
    except RuntimeError as exc:
        raise ConfigError(f"invalid device {name!r}: {exc}") from exc


def seed_everything(seed: int) -> None:
    """Seed Python, numpy and torch (CPU and CUDA)."""
    torch = require_torch()
    random.seed(seed)
    np.random.seed(seed % (1 << 32))
    torch.manual_seed(seed)


def rng_state() -> dict[str, Any]:
    """Every RNG state training depends on (stored in checkpoints)."""
    torch = require_torch()
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` saved."""
    torch = require_torch()
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
