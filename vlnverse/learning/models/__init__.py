"""VLN-CE's discrete-action policies (paper A.2.1): Seq2Seq and Cross-Modal Attention, and
GAMA-lite (paper §4: unified action decoder with SAME routing, :mod:`.gama`).

Both read a batch of ``[B, T]`` steps (teacher forcing runs whole episodes at once,
an agent runs ``T = 1`` steps with the recurrent state carried over), so training and
evaluation share one code path. Build one with :func:`build_model`.
"""

from __future__ import annotations

from typing import Any

from vlnverse.errors import ConfigError
from vlnverse.learning.models.config import ModelConfig

MODEL_KINDS = ("seq2seq", "cma", "gama")


def build_model(config: ModelConfig) -> Any:
    """The ``torch.nn.Module`` of ``config.kind``."""
    if config.kind == "seq2seq":
        from vlnverse.learning.models.seq2seq import Seq2SeqPolicy

        return Seq2SeqPolicy(config)
    if config.kind == "cma":
        from vlnverse.learning.models.cma import CMAPolicy

        return CMAPolicy(config)
    if config.kind == "gama":
        from vlnverse.learning.models.gama import GamaPolicy

        return GamaPolicy(config)
    raise ConfigError(f"unknown model {config.kind!r}; valid: {', '.join(MODEL_KINDS)}")


__all__ = ["MODEL_KINDS", "ModelConfig", "build_model"]
