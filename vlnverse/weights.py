"""Torch on demand, and reading a weights file as data: a checkpoint never runs code.

:func:`require_torch` is the one place the package imports torch (an optional dependency, the
``train`` extra); its error names the extra and what needed torch.

Every checkpoint the package reads (a learned agent's, a waypoint predictor's, an encoder's,
a training run's ``latest.pt``) goes through :func:`load_weights`, which unpickles with
``torch.load(..., weights_only=True)``: tensors, numbers, strings and containers of them, and
nothing else. A file that needs more (a pickled object whose loading could call any function)
is refused with :class:`~vlnverse.errors.UnsafeCheckpoint`, whoever made it.
"""

from __future__ import annotations

import pickle
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from vlnverse.errors import ConfigError, DependencyNotInstalled, UnsafeCheckpoint


def require_torch(purpose: str = "training and running learned agents") -> Any:
    """The ``torch`` module, or :class:`DependencyNotInstalled` naming the ``train`` extra and ``purpose``."""
    try:
        import torch
    except ImportError as exc:
        raise DependencyNotInstalled("torch", extra="train", purpose=purpose) from exc
    return torch


def legacy_rng_globals() -> list[Any]:
    """The numpy types a ``latest.pt`` written before RNG states were stored as plain data holds
    (``np.random.get_state()``'s uint32 key array, numpy float scalars in its history rows)."""
    import numpy as np

    multiarray = np._core.multiarray if hasattr(np, "_core") else np.core.multiarray
    return [multiarray._reconstruct, multiarray.scalar, np.ndarray, np.dtype,
            *(type(np.dtype(kind)) for kind in (np.uint32, np.float64, np.float32, np.int64))]


def load_weights(path: str | Path, *, map_location: Any = "cpu", what: str = "checkpoint",
                 allow: Iterable[Any] = ()) -> Any:
    """The contents of the weights file ``path``, unpickled as data only.

    Args:
        path: A ``torch.save`` file.
        map_location: Where its tensors go.
        what: How messages name the file (``"checkpoint"``, ``"encoder checkpoint"``, ...).
        allow: Further types the file may hold (exactly these; see :func:`legacy_rng_globals`).

    Raises:
        UnsafeCheckpoint: the file holds objects other than tensors and plain data.
        ConfigError: the file is missing or is not a ``torch.save`` file.
    """
    torch = require_torch(f"reading the {what} {path}")
    try:
        with torch.serialization.safe_globals(list(allow)):
            return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as exc:
        needed = re.search(r"GLOBAL (\S+)|but got <class '([^']+)'>", str(exc))
        if needed is None:
            raise ConfigError(f"cannot load {what} {path}: not a torch.save file ({str(exc)[:120]})") from None
        name = needed.group(1) or needed.group(2)
        raise UnsafeCheckpoint(f"{what} {path} holds more than tensors and plain data (it needs {name}), so "
                               "loading it could run code; refused") from None
    except (OSError, RuntimeError, EOFError, ValueError) as exc:
        raise ConfigError(f"cannot load {what} {path}: {exc}") from exc
