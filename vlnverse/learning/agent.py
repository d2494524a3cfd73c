"""Learned policies as evaluation agents (``vlnverse eval --agent seq2seq|cma|gama``).

The agent config names a checkpoint written by ``vlnverse train`` (``OUT/agent.yaml`` holds
the best one). The agent observes with the sensors the model was trained on (resolution
included), encodes the instruction once per episode and acts greedily, carrying the
recurrent state and its previous action from step to step.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from vlnverse.errors import ConfigError
from vlnverse.eval.agent import Agent, EpisodeInfo
from vlnverse.learning.models.config import START_ACTION
from vlnverse.shared_settings import torch_threads


@dataclass(frozen=True)
class LearnedAgentConfig:
    """Attributes:
        checkpoint: A ``.pt`` checkpoint of ``vlnverse train``.
        device: Torch device to run on.
        threads: Torch CPU threads while the agent acts (``None``: the caller's setting; it
            is back after each step). One step of a small policy
            runs fastest on one thread (measured: 15 ms vs 370 ms on 2 busy cores), and eval
            workers already run in parallel.
    """

    checkpoint: str
    device: str = "cpu"
    threads: int | None = 1


def load_policy(path: str, device: str = "cpu") -> tuple[Any, dict[str, Any]]:
    """The model of a checkpoint (in eval mode) and the checkpoint's metadata."""
    from vlnverse.config import config_from_mapping
    from vlnverse.learning.models import ModelConfig, build_model
    from vlnverse.learning.torch_support import resolve_device
    from vlnverse.weights import load_weights

    state = load_weights(path, map_location=resolve_device(device))
    config = config_from_mapping(ModelConfig, {**state["model_config"], "encoder_checkpoint": None,
                                               "word_embeddings": None}, where=f"checkpoint {path}")
    model = build_model(config).to(resolve_device(device))
    model.load_state_dict(state["model"])
    model.eval()
    return model, state


class LearnedAgent(Agent):
    """A Seq2Seq or CMA checkpoint acting greedily, one step at a time."""

    config_class = LearnedAgentConfig
    kind: str | None = None

    def __init__(self, config: LearnedAgentConfig) -> None:
        from vlnverse.learning.torch_support import require_torch

        self.torch = require_torch()
        self.threads = config.threads
        with torch_threads(self.threads):
            self.model, state = load_policy(config.checkpoint, config.device)
        if self.kind is not None and state["kind"] != self.kind:
            raise ConfigError(f"checkpoint {config.checkpoint} holds a {state['kind']} model, not {self.kind}")
        self.sensors = dict(state["sensors"])
        self.vocab = {"stoi": {w: i for i, w in enumerate(state["vocab"])}}
        self.device = next(self.model.parameters()).device
        self.depth_dtype = state.get("depth_dtype", "float32")  # frames were stored at this precision
        self.training_data = state.get("training_data")  # None: a checkpoint from before it was recorded
        self._instruction_text: str | None = None

    def reset(self, episode: EpisodeInfo) -> None:
        self._state = self.model.initial_state(1, self.device)
        self._prev = self.torch.full((1, 1), START_ACTION, dtype=self.torch.int64, device=self.device)
        self._instruction_text = None

    def _instruction(self, text: str) -> Any:
        from vlnverse.tasks.formats.vocab import encode

        if text != self._instruction_text:  # long-horizon episodes change it at each sub-goal
            tokens = self.torch.tensor([encode(text, self.vocab, self.model.config.max_instruction_tokens)],
                                       dtype=self.torch.int64, device=self.device)
            self._encoded = self.model.encode_instruction(tokens)
            self._instruction_text = text
        return self._encoded

    def act(self, observation: Mapping[str, Any]) -> int:
        torch = self.torch
        with torch_threads(self.threads), torch.inference_mode():
            instruction = self._instruction(str(observation["instruction"]))
            rgb = torch.from_numpy(np.array(observation["rgb"], dtype=np.uint8))[None, None].to(self.device)
            depth = torch.from_numpy(np.asarray(observation["depth"], dtype=self.depth_dtype).astype(np.float32))[None, None].to(self.device)
            logits, self._state = self.model(instruction, rgb, depth, self._prev, self._state)
            action = int(logits[0, -1].argmax())
        self._prev = torch.full((1, 1), action, dtype=torch.int64, device=self.device)
        return action

    def set_previous_action(self, action: int) -> None:
        """Condition the next step on ``action`` (when another policy chose what was executed)."""
        self._prev = self.torch.full((1, 1), int(action), dtype=self.torch.int64, device=self.device)


class Seq2SeqAgent(LearnedAgent):
    """``--agent seq2seq``."""

    kind = "seq2seq"


class CMAAgent(LearnedAgent):
    """``--agent cma``."""

    kind = "cma"


class GamaAgent(LearnedAgent):
    """``--agent gama`` (GAMA-lite; discrete actions: the most likely primitive)."""

    kind = "gama"
