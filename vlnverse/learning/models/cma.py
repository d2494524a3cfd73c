"""Cross-Modal Attention (paper Eq. 14-18): a state GRU, attention, a decision GRU.

``h¹_t = GRU([V_t, D_t, a_{t-1}])``; ``h¹_t`` queries the instruction tokens and the RGB and
depth feature cells by scaled dot-product attention; ``h²_t = GRU([Î_t, V̂_t, D̂_t,
a_{t-1}, h¹_t])`` gives the action.
"""

from __future__ import annotations

import math
from typing import Any

from vlnverse.learning.models.config import NUM_ACTIONS, ModelConfig
from vlnverse.learning.models.encoders import RecurrentPolicy, finish_policy
from vlnverse.learning.torch_support import require_torch

torch = require_torch()
nn = torch.nn


class Attention(nn.Module):
    """Scaled dot-product attention of a query over a set of keys (values = the keys)."""

    def __init__(self, query_dim: int, key_dim: int, attention_dim: int) -> None:
        super().__init__()
        self.query = nn.Linear(query_dim, attention_dim)
        self.key = nn.Linear(key_dim, attention_dim)
        self.scale = 1.0 / math.sqrt(attention_dim)

    def forward(self, query: Any, keys: Any, mask: Any = None) -> Any:
        """``query`` (B, T, Q) over ``keys`` (B, K, D) shared by every step, or (B, T, K, D)."""
        q, k = self.query(query), self.key(keys)
        if keys.dim() == 3:
            scores = torch.einsum("btd,bkd->btk", q, k) * self.scale
            if mask is not None:
                scores = scores.masked_fill(~mask[:, None, :], float("-inf"))
            return torch.einsum("btk,bkd->btd", scores.softmax(dim=-1), keys)
        scores = torch.einsum("btd,btkd->btk", q, k) * self.scale
        return torch.einsum("btk,btkd->btd", scores.softmax(dim=-1), keys)


class CMAPolicy(RecurrentPolicy):
    """BiLSTM instruction encoder, RGB/depth encoders, two GRUs with cross-modal attention."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config, bidirectional=True)
        self.prev_action = nn.Embedding(NUM_ACTIONS + 1, config.action_embedding)
        hidden, text = config.hidden, self.instruction_encoder.output_size
        self.state_gru = nn.GRU(config.rgb_dim + config.depth_dim + config.action_embedding, hidden, batch_first=True)
        self.text_attention = Attention(hidden, text, config.attention_dim)
        self.rgb_attention = Attention(hidden, self.rgb_encoder.channels, config.attention_dim)
        self.depth_attention = Attention(hidden, self.depth_encoder.channels, config.attention_dim)
        size = text + self.rgb_encoder.channels + self.depth_encoder.channels + config.action_embedding + hidden
        self.decision_gru = nn.GRU(size, hidden, batch_first=True)
        self.action_head = nn.Linear(hidden, NUM_ACTIONS)
        finish_policy(self, config)

    def encode_instruction(self, tokens: Any) -> tuple[Any, Any]:
        """The instruction's token features and mask, computed once per episode."""
        features, mask, _ = self.instruction_encoder(tokens)
        return features, mask

    def initial_state(self, batch: int, device: Any = None) -> Any:
        return torch.zeros(2, batch, self.config.hidden, device=device)

    def decide(self, instruction: tuple[Any, Any], rgb: Any, depth: Any, prev_actions: Any,
               state: Any, mask: Any = None) -> tuple[Any, Any]:
        """The decision GRU's features (B, T, hidden) of ``T`` steps and the next state (both GRUs'
        states stacked); ``mask``: the real steps of padded episodes (see ``encode_frames``)."""
        rgb_cells, visual, depth_cells, ranged = self.encode_frames(rgb, depth, mask)
        action = self.prev_action(prev_actions)
        h1, state1 = self.state_gru(torch.cat([visual, ranged, action], dim=-1), state[:1].contiguous())
        tokens, mask = instruction
        attended = [self.text_attention(h1, tokens, mask), self.rgb_attention(h1, rgb_cells),
                    self.depth_attention(h1, depth_cells)]
        h2, state2 = self.decision_gru(torch.cat([*attended, action, h1], dim=-1), state[1:].contiguous())
        return h2, torch.cat([state1, state2], dim=0)
