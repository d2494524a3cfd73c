"""Seq2Seq (paper Eq. 12-13): ``h_t = GRU([V_t, D_t, I], h_{t-1})``, ``a_t = argmax W_a h_t``."""

from __future__ import annotations

from typing import Any

from vlnverse.learning.models.config import NUM_ACTIONS, ModelConfig
from vlnverse.learning.models.encoders import RecurrentPolicy, finish_policy
from vlnverse.learning.torch_support import require_torch

torch = require_torch()
nn = torch.nn


class Seq2SeqPolicy(RecurrentPolicy):
    """Instruction LSTM, RGB and depth encoders, one GRU and a linear action head."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config, bidirectional=False)
        size = config.rgb_dim + config.depth_dim + self.instruction_encoder.output_size
        self.gru = nn.GRU(size, config.hidden, batch_first=True)
        self.action_head = nn.Linear(config.hidden, NUM_ACTIONS)
        finish_policy(self, config)

    def encode_instruction(self, tokens: Any) -> Any:
        """The instruction's sentence vector ``I`` (B, D), computed once per episode."""
        return self.instruction_encoder(tokens)[2]

    def initial_state(self, batch: int, device: Any = None) -> Any:
        return torch.zeros(1, batch, self.config.hidden, device=device)

    def decide(self, instruction: Any, rgb: Any, depth: Any, prev_actions: Any, state: Any,
               mask: Any = None) -> tuple[Any, Any]:
        """The GRU's features (B, T, hidden) of ``T`` steps and the next recurrent state.

        ``prev_actions`` is unused (Seq2Seq conditions on observations and the instruction only);
        ``mask``: the real steps of padded episodes (see ``encode_frames``).
        """
        _, visual, _, ranged = self.encode_frames(rgb, depth, mask)
        batch, steps = visual.shape[:2]
        text = instruction[:, None, :].expand(batch, steps, instruction.shape[-1])
        return self.gru(torch.cat([visual, ranged, text], dim=-1), state)
