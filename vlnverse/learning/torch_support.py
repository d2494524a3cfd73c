"""The ``train`` extra: importing torch lazily, devices, mixed precision and seeding."""

from __future__ import annotations

import contextlib
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


def data_parallel(module: Any, device: Any) -> Any:
    """``module`` (on ``device``) in ``DataParallel`` over every visible GPU, ``device``'s first:
    ``DataParallel`` needs the module on its first GPU and gathers the outputs there, so with
    ``--device cuda:1`` the default order (GPU 0 first) fails."""
    torch = require_torch()
    first = torch.cuda.current_device() if device.index is None else device.index
    ids = [first] + [i for i in range(torch.cuda.device_count()) if i != first]
    return torch.nn.DataParallel(module, device_ids=ids, output_device=first)


class MixedPrecision:
    """Autocast and loss scaling of a training step on ``device`` (``enabled=False``: full precision).

    bfloat16 autocast where the device computes in it (CPUs, ROCm, CUDA compute capability 8
    and up); on older GPUs (V100, T4), which at best emulate bfloat16, float16 with a
    ``GradScaler``, which a float16 backward needs against underflowing gradients.
    """

    def __init__(self, device: Any, enabled: bool) -> None:
        torch = require_torch()
        self.device_type = device.type
        self.dtype = None
        if enabled:
            old_gpu = device.type == "cuda" and not torch.version.hip and torch.cuda.get_device_capability(device)[0] < 8
            self.dtype = torch.float16 if old_gpu else torch.bfloat16
        self.scaler = torch.amp.GradScaler(device.type, enabled=self.dtype == torch.float16)

    def autocast(self) -> Any:
        if self.dtype is None:
            return contextlib.nullcontext()
        return require_torch().autocast(self.device_type, dtype=self.dtype)

    def step(self, loss: Any, optimizer: Any) -> None:
        """Backward and optimizer step (gradients scaled, and a step with infinite ones skipped, in float16)."""
        optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.step(optimizer)
        self.scaler.update()


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
