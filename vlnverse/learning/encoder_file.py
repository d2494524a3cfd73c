"""What an encoder file given to ``vlnverse train --encoders`` sets: ``encoders.pt`` of
``vlnverse train encoders`` (:mod:`vlnverse.learning.pretrain`) or a waypoint predictor checkpoint."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from vlnverse.errors import ConfigError


def encoder_settings(path: str | Path) -> dict[str, Any]:
    """The model config fields an ``encoders.pt`` (or a waypoint predictor checkpoint) sets,
    and what its weights saw (``training_data["encoders"]`` of the runs that use it).

    Raises:
        ConfigError: the file is neither.
    """
    from vlnverse.weights import load_weights

    state = load_weights(path, what="encoder checkpoint")
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    if isinstance(state, dict) and state.get("kind") == "waypoint_predictor":
        return {"model": {"depth_encoder": "waypoints", "encoder_checkpoint": str(path)},
                "data": {"sha256": digest, "kind": "waypoint_predictor", "augment": [],
                         "trained_on": state.get("train_config", {}).get("dataset")}}
    if not isinstance(state, dict) or state.get("kind") != "encoders":
        raise ConfigError(f"{path} is not an encoders checkpoint (vlnverse train encoders) "
                          "nor a waypoint predictor checkpoint")
    return {"model": {"rgb_encoder": state["trunks"]["rgb"], "depth_encoder": state["trunks"]["depth"],
                      "channels": tuple(state["channels"]), "encoder_checkpoint": str(path)},
            "frames": {key: state[key] for key in ("rgb_size", "depth_size")},
            "data": {"sha256": digest, "kind": "encoders", "augment": list(state["pretrained_on"]["augment"]),
                     "depth_source": state.get("depth_source")}}
