"""The ``train`` extra: importing torch lazily, devices, mixed precision and seeding."""

from __future__ import annotations

import contextlib
import copy
import random
from typing import Any

import numpy as np

from vlnverse.errors import ConfigError
from vlnverse.weights import require_torch


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


def _probe_inputs(layer: Any) -> tuple[Any, ...] | None:
    """A tiny input batch for ``layer``, or ``None`` for layers without their own CPU kernels
    (containers, activations, embeddings) or of kinds our models do not use."""
    torch = require_torch()
    nn = torch.nn
    if isinstance(layer, nn.RNNBase):
        shape = (2, 3, layer.input_size) if layer.batch_first else (3, 2, layer.input_size)
        return (torch.randn(*shape),)
    if isinstance(layer, nn.Conv2d):
        extent = [d * (k - 1) + 1 for k, d in zip(layer.kernel_size, layer.dilation, strict=True)]
        return (torch.randn(1, layer.in_channels, *extent),)
    if isinstance(layer, nn.Linear):
        return (torch.randn(2, layer.in_features),)
    if isinstance(layer, nn.MultiheadAttention):
        query = torch.randn(2, 3, layer.embed_dim) if layer.batch_first else torch.randn(3, 2, layer.embed_dim)
        return (query, query, query)
    return None


def bfloat16_failure(model: Any) -> str | None:
    """Why ``model``'s layers cannot train under CPU bfloat16 autocast on this CPU, else ``None``.

    Runs a forward and backward pass of a copy of each distinct layer on a tiny input: whether
    oneDNN has a bfloat16 kernel for a layer depends on the CPU's instruction set (LSTMs have
    none below AVX-512 on some builds), and torch offers no query for it.
    """
    torch = require_torch()
    probed = set()
    for layer in model.modules():
        inputs = _probe_inputs(layer)
        if inputs is None or repr(layer) in probed:
            continue
        probed.add(repr(layer))
        try:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                out = copy.deepcopy(layer)(*inputs)
            (out[0] if isinstance(out, tuple) else out).float().sum().backward()
        except RuntimeError as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            return f"{type(layer).__name__} ({reason})"
    return None


def require_autocast_support(model: Any, device: Any) -> None:
    """Refuse ``--amp`` where ``model`` cannot run under the autocast it would get on ``device``.

    Only the CPU is probed (GPUs get bfloat16 or float16 by compute capability). A refusal is
    one :class:`ConfigError` line, raised before anything is written or pre-rendered.
    """
    if device.type != "cpu":
        return
    failure = bfloat16_failure(model)
    if failure:
        raise ConfigError(f"--amp: this CPU cannot train the model in bfloat16: {failure}; "
                          "train without --amp (float32)")


def seed_everything(seed: int) -> None:
    """Seed Python, numpy and torch (CPU and CUDA)."""
    torch = require_torch()
    random.seed(seed)
    np.random.seed(seed % (1 << 32))
    torch.manual_seed(seed)


def rng_state() -> dict[str, Any]:
    """Every RNG state training depends on (stored in checkpoints), as tensors and plain data
    (a checkpoint is read with ``weights_only=True``)."""
    torch = require_torch()
    numpy_state = np.random.get_state(legacy=False)
    numpy_state["state"] = {**numpy_state["state"], "key": numpy_state["state"]["key"].tolist()}
    state = {"python": random.getstate(), "numpy": numpy_state, "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` saved (or, from an older checkpoint, numpy's legacy tuple)."""
    torch = require_torch()
    random.setstate(state["python"])
    numpy_state = state["numpy"]
    if isinstance(numpy_state, dict):
        numpy_state = {**numpy_state, "state": {**numpy_state["state"],
                                                "key": np.asarray(numpy_state["state"]["key"], dtype=np.uint32)}}
    np.random.set_state(numpy_state)
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
