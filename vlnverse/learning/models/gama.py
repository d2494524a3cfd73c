"""GAMA-lite (paper §4, A.1.2) on the small encoders: a unified action decoder with SAME routing.

- State and alignment: ``h_t = GRU([V_t, D_t, a_{t-1}])`` and ``Î_t = CrossAttn(h_t, W)`` over
  the instruction tokens (Eq. 6); the fused step feature is ``[h_t, Î_t, V_t, D_t]``.
- SAME (Eq. 8-10): the routing feature ``x_r = W_m [V_t ; W_CLS]`` (the step's pooled view and
  the instruction's sentence vector) is computed once per timestep; two independent routers
  ``softmax(W_r x_r)`` each keep their top-2 experts (weights renormalised over the two), one
  mixing the experts of the action probabilities, one those of the residual.
- Unified action decoder (§4.1): ``p(a) = Σ_k α_k δ(a − a_k)`` over the 4 primitives (STOP,
  FORWARD 0.25 m, LEFT 15°, RIGHT 15° as ``(distance, heading)``), ``α`` the softmax of the
  mixed expert scores; for continuous control a regressed residual ``Δa`` is added to the
  most likely primitive (:meth:`GamaPolicy.continuous_action`).

Training (``vlnverse train gama``) is cross-entropy on ``α`` plus the squared error of ``Δa``
against what the step really did: the motion to the next pre-rendered pose minus the taught
primitive (non-zero where a hop was cut short by a collision). Unlike the paper's GAMA
there is no frozen MLLM backbone, HNR map or lookahead here, and no expert load-balancing loss.
"""

from __future__ import annotations

import math
from typing import Any

from vlnverse.learning.models.cma import Attention
from vlnverse.learning.models.config import NUM_ACTIONS, ModelConfig
from vlnverse.learning.models.encoders import RecurrentPolicy, finish_policy
from vlnverse.learning.torch_support import require_torch

torch = require_torch()
nn = torch.nn

#: ``(distance m, heading rad)`` of STOP, FORWARD, LEFT, RIGHT (VLN-CE's discrete actions).
PRIMITIVES = ((0.0, 0.0), (0.25, 0.0), (0.0, math.radians(15.0)), (0.0, -math.radians(15.0)))
TOP_K = 2
#: Weight of the residual's squared error (m², rad²) beside the action cross-entropy.
RESIDUAL_WEIGHT = 1.0


def _expert(size: int, hidden: int, out: int) -> Any:
    return nn.Sequential(nn.Linear(size, hidden), nn.ReLU(), nn.Linear(hidden, out))


class StateAdaptiveMoE(nn.Module):
    """``experts`` MLPs mixed by the top-2 of a router over the routing feature (Eq. 9-10)."""

    def __init__(self, route_dim: int, size: int, hidden: int, out: int, experts: int) -> None:
        super().__init__()
        self.router = nn.Linear(route_dim, experts)
        self.experts = nn.ModuleList([_expert(size, hidden, out) for _ in range(experts)])

    def forward(self, route: Any, features: Any) -> tuple[Any, Any]:
        """Mixed outputs (B, T, out) and the router's probabilities (B, T, E)."""
        probabilities = self.router(route).softmax(dim=-1)
        top, chosen = probabilities.topk(TOP_K, dim=-1)
        weights = top / top.sum(dim=-1, keepdim=True)
        outputs = torch.stack([expert(features) for expert in self.experts], dim=-2)  # (B, T, E, out)
        picked = outputs.gather(-2, chosen.unsqueeze(-1).expand(*chosen.shape, outputs.shape[-1]))
        return (weights.unsqueeze(-1) * picked).sum(dim=-2), probabilities


class GamaPolicy(RecurrentPolicy):
    """See the module docs; ``forward`` gives the action logits ``log α`` like the other policies."""

    regresses_residual = True

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config, bidirectional=True)
        hidden, text = config.hidden, self.instruction_encoder.output_size
        self.prev_action = nn.Embedding(NUM_ACTIONS + 1, config.action_embedding)
        self.state_gru = nn.GRU(config.rgb_dim + config.depth_dim + config.action_embedding, hidden, batch_first=True)
        self.text_attention = Attention(hidden, text, config.attention_dim)
        self.route = nn.Linear(config.rgb_dim + text, config.attention_dim)
        fused = hidden + text + config.rgb_dim + config.depth_dim
        self.action_moe = StateAdaptiveMoE(config.attention_dim, fused, hidden, NUM_ACTIONS, config.experts)
        self.residual_moe = StateAdaptiveMoE(config.attention_dim, fused, hidden, 2, config.experts)
        self.register_buffer("primitives", torch.tensor(PRIMITIVES), persistent=False)
        finish_policy(self, config)

    def encode_instruction(self, tokens: Any) -> tuple[Any, Any, Any]:
        """Token features, their mask and the sentence vector, once per episode."""
        return self.instruction_encoder(tokens)

    def initial_state(self, batch: int, device: Any = None) -> Any:
        return torch.zeros(1, batch, self.config.hidden, device=device)

    def decode(self, instruction: tuple[Any, Any, Any], rgb: Any, depth: Any, prev_actions: Any,
               state: Any, mask: Any = None) -> tuple[Any, Any, Any]:
        """Action logits (B, T, 4), residuals (B, T, 2) and the next state (``mask``: see ``encode_frames``)."""
        _, visual, _, ranged = self.encode_frames(rgb, depth, mask)
        tokens, mask, sentence = instruction
        h, state = self.state_gru(torch.cat([visual, ranged, self.prev_action(prev_actions)], dim=-1), state)
        aligned = self.text_attention(h, tokens, mask)
        route = self.route(torch.cat([visual, sentence[:, None, :].expand(-1, visual.shape[1], -1)], dim=-1))
        fused = torch.cat([h, aligned, visual, ranged], dim=-1)
        logits = self.action_moe(route, fused)[0]
        return logits, self.residual_moe(route, fused)[0], state

    def forward(self, instruction: tuple[Any, Any, Any], rgb: Any, depth: Any, prev_actions: Any,
                state: Any) -> tuple[Any, Any]:
        logits, _, state = self.decode(instruction, rgb, depth, prev_actions, state)
        return logits, state

    def continuous_action(self, logits: Any, residual: Any) -> Any:
        """``(distance, heading)`` (…, 2): the most likely primitive plus the residual."""
        return self.primitives[logits.argmax(dim=-1)] + residual



def residual_targets(actions: Any, motion: Any) -> Any:
    """What the residual regresses: the step's real motion (B, T, 2) minus the taught primitive."""
    return motion - torch.tensor(PRIMITIVES, dtype=motion.dtype, device=motion.device)[actions]
