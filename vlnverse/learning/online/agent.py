"""The fine-tuned waypoint policy as an eval agent (``vlnverse eval --agent waypoint_bert``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from vlnverse.eval.agent import Agent, EpisodeInfo
from vlnverse.learning.agent import LearnedAgentConfig
from vlnverse.shared_settings import torch_threads


class WaypointBertAgent(Agent):
    """Greedy choice among the candidates of its own depth panorama (or STOP)."""

    config_class = LearnedAgentConfig
    action_space = "waypoint"

    def __init__(self, config: LearnedAgentConfig) -> None:
        from vlnverse.agents.config import PanoramaConfig, WaypointConfig
        from vlnverse.config import config_from_mapping
        from vlnverse.learning.online.inputs import InputBuilder, InputSpec
        from vlnverse.learning.online.policy import WaypointBert, WaypointBertConfig
        from vlnverse.learning.torch_support import require_torch, resolve_device
        from vlnverse.weights import load_weights

        self.torch = require_torch()
        self.threads = config.threads
        self.device = resolve_device(config.device)
        state = load_weights(config.checkpoint, map_location=self.device)
        self.model = WaypointBert(config_from_mapping(WaypointBertConfig, state["model_config"])).to(self.device)
        self.model.load_state_dict(state["model"])
        self.model.eval()
        spec = state["spec"]
        self.spec = InputSpec(config_from_mapping(PanoramaConfig, spec["panorama"]),
                              config_from_mapping(WaypointConfig, spec["waypoints"]), spec["max_tokens"],
                              spec.get("predictor", "depth"))  # checkpoints from before the learned predictor
        self.inputs = InputBuilder(self.spec, {w: i for i, w in enumerate(state["vocab"])})
        self.sensors = self.spec.sensors()

    def reset(self, episode: EpisodeInfo) -> None:
        self._text: str | None = None

    def act(self, observation: Mapping[str, Any]) -> np.ndarray:
        torch = self.torch
        step = self.inputs(observation)
        batch = {k: torch.as_tensor(v[None]).to(self.device) for k, v in step.arrays.items()}
        with torch_threads(self.threads), torch.inference_mode():
            if observation["instruction"] != self._text:
                self._instruction = self.model.encode_instruction(batch["tokens"])
                self._state = self.model.initial_state(self._instruction)
                self._text = str(observation["instruction"])
            logits, self._state = self.model(self._instruction, batch, self._state)
        return step.action(int(logits[0].argmax()))
