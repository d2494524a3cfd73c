"""Training presets: ``smoke`` (a CPU check in minutes) and ``paper`` (the paper's settings).

A preset is a mapping of :class:`~vlnverse.learning.imitation.ImitationConfig` fields
(``model`` a mapping of :class:`~vlnverse.learning.models.ModelConfig` fields); options
given on the command line override it.
"""

from __future__ import annotations

from typing import Any

from vlnverse.errors import ConfigError

PRESETS: dict[str, dict[str, Any]] = {
    # 64 px frames, small encoders, lr 1e-3: a handful of CPU epochs must move the policy,
    # which lr 1e-4 does not do in that budget.
    "smoke": {"rgb_size": 64, "depth_size": 64, "batch_size": 4, "epochs": 8, "lr": 1e-3, "val_episodes": 10,
              "max_steps": 200,
              "model": {"hidden": 128, "rgb_dim": 64, "depth_dim": 32, "instruction_hidden": 64,
                        "attention_dim": 64, "channels": (16, 32, 32)}},
    # §5.2 / A.2.4: batch 2, AdamW 1e-4, 200-step cap, RGB 224 / depth 256; VLN-CE's 512-d state
    # and its 45 imitation epochs.
    "paper": {"rgb_size": 224, "depth_size": 256, "batch_size": 2, "epochs": 45, "lr": 1e-4, "max_steps": 200,
              "model": {}},
}


def preset(name: str) -> dict[str, Any]:
    """A copy of preset ``name``."""
    if name not in PRESETS:
        raise ConfigError(f"unknown preset {name!r}; valid: {', '.join(PRESETS)}")
    data = dict(PRESETS[name])
    data["model"] = dict(data["model"])
    return data
