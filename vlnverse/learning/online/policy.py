"""A small VLN-BERT-style waypoint policy (Hong et al. 2021, recurrent VLN-BERT).

A state token, the instruction tokens and one token per candidate (its panorama view's
features plus its heading and distance) and a STOP token go through a cross-modal
transformer; each candidate's (and STOP's) score is read off its output token against
the state's, and the state token's output is the next step's state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vlnverse.errors import ConfigError
from vlnverse.learning.models.trunks import small_cnn
from vlnverse.learning.torch_support import require_torch

torch = require_torch()
nn = torch.nn


@dataclass(frozen=True)
class WaypointBertConfig:
    """Attributes:
        vocab_size: Instruction vocabulary size.
        dim: Token width.
        layers: Cross-modal transformer layers.
        heads: Attention heads.
        text_layers: Instruction encoder layers.
        image_size: Panorama view resolution.
        channels: The view CNN's channels.
        max_tokens: Instruction length.
    """

    vocab_size: int = 2
    dim: int = 64
    layers: int = 2
    heads: int = 4
    text_layers: int = 1
    image_size: int = 32
    channels: tuple[int, int, int] = (16, 32, 32)
    max_tokens: int = 80

    def __post_init__(self) -> None:
        if self.dim % self.heads:
            raise ConfigError(f"waypoint_bert dim {self.dim} must be a multiple of heads {self.heads}")
        object.__setattr__(self, "channels", tuple(self.channels))


def _encoder(dim: int, heads: int, layers: int) -> Any:
    layer = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=2 * dim, dropout=0.0, batch_first=True)
    return nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)


class WaypointBert(nn.Module):
    """See the module docs; ``forward`` scores one step of a batch."""

    def __init__(self, config: WaypointBertConfig) -> None:
        super().__init__()
        self.config = config
        d = config.dim
        self.words = nn.Embedding(config.vocab_size, d, padding_idx=0)
        self.positions = nn.Parameter(torch.zeros(config.max_tokens, d))
        self.text = _encoder(d, config.heads, config.text_layers)
        self.views = nn.Sequential(small_cnn(4, config.channels), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                   nn.Linear(config.channels[-1], d))
        self.geometry = nn.Linear(3, d)
        self.stop = nn.Parameter(torch.zeros(d))
        self.kinds = nn.Embedding(3, d)  # state, text, action tokens
        self.cross = _encoder(d, config.heads, config.layers)
        self.score = nn.Linear(d, d)

    def encode_instruction(self, tokens: Any) -> tuple[Any, Any]:
        """Token features (B, L, d) and their padding mask (True = padding)."""
        padding = tokens == 0
        padding[:, 0] = False  # an empty instruction still has one token
        features = self.text(self.words(tokens) + self.positions[: tokens.shape[1]], src_key_padding_mask=padding)
        return features, padding

    def initial_state(self, instruction: tuple[Any, Any]) -> Any:
        features, padding = instruction
        keep = (~padding).unsqueeze(-1).float()
        return (features * keep).sum(1) / keep.sum(1)

    def forward(self, instruction: tuple[Any, Any], inputs: dict[str, Any], state: Any) -> tuple[Any, Any]:
        """Logits (B, K+1) over the candidates and STOP (invalid ones ``-inf``) and the next state."""
        features, padding = instruction
        batch, views = inputs["rgb"].shape[:2]
        images = torch.cat([inputs["rgb"].float() / 255.0, inputs["depth"].float()], dim=-1)
        view_features = self.views(images.flatten(0, 1).permute(0, 3, 1, 2)).view(batch, views, -1)
        chosen = torch.gather(view_features, 1, inputs["candidate_views"].unsqueeze(-1).expand(-1, -1, view_features.shape[-1]))
        candidates = chosen + self.geometry(inputs["candidates"].float())
        actions = torch.cat([candidates, self.stop.expand(batch, 1, -1)], dim=1) + self.kinds.weight[2]
        tokens = torch.cat([(state + self.kinds.weight[0]).unsqueeze(1), features + self.kinds.weight[1], actions], dim=1)
        valid = inputs["candidate_mask"].bool()
        mask = torch.cat([torch.zeros(batch, 1, dtype=torch.bool, device=valid.device), padding, ~valid], dim=1)
        out = self.cross(tokens, src_key_padding_mask=mask)
        new_state = torch.tanh(out[:, 0])
        scores = torch.einsum("bkd,bd->bk", self.score(out[:, -actions.shape[1]:]), out[:, 0]) / actions.shape[-1] ** 0.5
        return scores.masked_fill(~valid, float("-inf")), new_state
