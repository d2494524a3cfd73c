"""The encoders both policies share: instruction LSTM, RGB and depth CNNs.

VLN-CE uses GloVe embeddings, an ImageNet ResNet-50 for RGB and the DD-PPO point-goal
ResNet-50 for depth. Those weights cannot be fetched here, so the visual encoders default
to small CNNs trained from scratch; ``rgb_encoder``/``depth_encoder`` name another trunk
(:mod:`.trunks`) and ``encoder_checkpoint`` loads pretrained weights (see :class:`ModelConfig`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from vlnverse.errors import ConfigError
from vlnverse.learning.models.config import ModelConfig
from vlnverse.learning.models.trunks import build_trunk, waypoint_trunk_weights
from vlnverse.learning.torch_support import require_torch
from vlnverse.weights import load_weights

torch = require_torch()
nn = torch.nn

#: The spatial grid the visual features are pooled to (CMA attends over its cells).
GRID = 4


class InstructionEncoder(nn.Module):
    """Word embeddings and an LSTM: per-token features and one sentence vector.

    ``bidirectional`` gives CMA's BiLSTM (features of size ``2 * hidden``).
    """

    def __init__(self, config: ModelConfig, *, bidirectional: bool) -> None:
        super().__init__()
        self.embedding = nn.Embedding(config.vocab_size, config.embedding_dim, padding_idx=0)
        if config.word_embeddings:
            import numpy as np

            weights = torch.as_tensor(np.load(config.word_embeddings), dtype=torch.float32)
            self.embedding.weight.data.copy_(weights)
        self.lstm = nn.LSTM(config.embedding_dim, config.instruction_hidden, batch_first=True,
                            bidirectional=bidirectional)
        self.output_size = config.instruction_hidden * (2 if bidirectional else 1)

    def forward(self, tokens: Any) -> tuple[Any, Any, Any]:
        """``tokens`` (B, L) → features (B, L', D), mask (B, L') and the final state (B, D)."""
        lengths = (tokens != 0).sum(dim=1).clamp(min=1)
        width = int(lengths.max())
        tokens = tokens[:, :width]
        packed = nn.utils.rnn.pack_padded_sequence(self.embedding(tokens), lengths.cpu(), batch_first=True,
                                                   enforce_sorted=False)
        output, (h_n, _) = self.lstm(packed)
        features, _ = nn.utils.rnn.pad_packed_sequence(output, batch_first=True, total_length=width)
        final = torch.cat([h_n[-2], h_n[-1]], dim=1) if self.lstm.bidirectional else h_n[-1]
        mask = torch.arange(width, device=tokens.device)[None, :] < lengths[:, None]
        return features, mask, final



class VisualEncoder(nn.Module):
    """A CNN trunk, pooled to a ``GRID × GRID`` map: its cells (for attention) and a vector.

    Args:
        config: The model config.
        modality: ``rgb`` (uint8 HWC in) or ``depth`` (float [0, 1] HW1 in).
        out_dim: Size of the pooled vector.
    """

    def __init__(self, config: ModelConfig, modality: str, out_dim: int) -> None:
        super().__init__()
        self.modality = modality
        in_channels = 3 if modality == "rgb" else 1
        spec = config.rgb_encoder if modality == "rgb" else config.depth_encoder
        self.trunk = build_trunk(spec, config, in_channels)
        size = config.rgb_size if modality == "rgb" else config.depth_size
        with torch.no_grad():
            channels = self.trunk(torch.zeros(1, in_channels, size, size)).shape[1]
        self.pool = nn.AdaptiveAvgPool2d(GRID)
        self.channels = int(channels)
        self.project = nn.Sequential(nn.Flatten(), nn.Linear(self.channels * GRID * GRID, out_dim), nn.ReLU(inplace=True))
        #: Whether a frame's features depend on that frame alone (no batch statistics), so
        #: padding frames can be left out of a batch without changing the others.
        self.per_frame = not any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in self.trunk.modules())

    def forward(self, frames: Any) -> tuple[Any, Any]:
        """``frames`` (N, H, W, C) → cells (N, GRID², channels) and the vector (N, out_dim)."""
        x = frames.permute(0, 3, 1, 2).float()
        if self.modality == "rgb":
            x = x.div_(255.0) if frames.dtype == torch.uint8 else x / 255.0  # in place: a fresh copy
        grid = self.pool(self.trunk(x))
        return grid.flatten(2).transpose(1, 2), self.project(grid)


class RecurrentPolicy(nn.Module):
    """What the policies share: the three encoders and per-step visual features; for a policy
    with ``decide`` (features of each step) and an ``action_head``, the action logits and, with
    ``config.progress_monitor``, the progress estimate."""

    def __init__(self, config: ModelConfig, *, bidirectional: bool) -> None:
        super().__init__()
        self.config = config
        self.instruction_encoder = InstructionEncoder(config, bidirectional=bidirectional)
        self.rgb_encoder = VisualEncoder(config, "rgb", config.rgb_dim)
        self.depth_encoder = VisualEncoder(config, "depth", config.depth_dim)

    def forward(self, instruction: Any, rgb: Any, depth: Any, prev_actions: Any, state: Any,
                mask: Any = None) -> tuple[Any, Any]:
        """Action logits (B, T, 4) of ``T`` steps and the next state (``mask``: see ``encode_frames``)."""
        features, state = self.decide(instruction, rgb, depth, prev_actions, state, mask)
        return self.action_head(features), state

    def estimate_progress(self, features: Any) -> Any:
        """The progress head's estimate (B, T) in (-1, 1) from ``decide``'s features (VLN-CE: tanh)."""
        return torch.tanh(self.progress_head(features)).squeeze(-1)

    def encode_frames(self, rgb: Any, depth: Any, mask: Any = None) -> tuple[Any, Any, Any, Any]:
        """(B, T, H, W, C) frames → RGB cells (B, T, K, C), RGB vector (B, T, D), and the same for depth.

        ``mask`` (B, T) marks the real steps of padded episodes: only those frames are encoded
        and padding steps get zero features (the recurrent policies are causal and padding
        steps carry no loss, so nothing else changes); ignored for an encoder with batch statistics.
        """
        batch, steps = rgb.shape[:2]
        encoders = (self.rgb_encoder, self.depth_encoder)
        keep = None if mask is None or not all(e.per_frame for e in encoders) else mask.flatten()
        features = []
        for encoder, frames in zip(encoders, (rgb.flatten(0, 1), depth.flatten(0, 1)), strict=True):
            for value in encoder(frames if keep is None else frames[keep]):
                if keep is not None:
                    value = value.new_zeros((batch * steps, *value.shape[1:])).index_put((keep,), value)
                features.append(value.unflatten(0, (batch, steps)))
        return tuple(features)


class Decoded(NamedTuple):
    """Whole padded episodes through a policy: action logits (B, T, 4), GAMA's residuals
    (B, T, 2) and the progress monitor's estimates (B, T), each ``None`` where the policy has none."""

    logits: Any
    residual: Any = None
    progress: Any = None


class TeacherForced(nn.Module):
    """Whole padded episodes through a policy in one ``forward`` (the module that
    ``DataParallel`` splits along the batch)."""

    def __init__(self, policy: Any) -> None:
        super().__init__()
        self.policy = policy

    def forward(self, tokens: Any, rgb: Any, depth: Any, prev_actions: Any, mask: Any = None) -> Decoded:
        """The policy's outputs for every step (``mask`` (B, T): the real steps; padding frames are not encoded)."""
        instruction = self.policy.encode_instruction(tokens)
        state = self.policy.initial_state(tokens.shape[0], tokens.device)
        if getattr(self.policy, "regresses_residual", False):
            return Decoded(*self.policy.decode(instruction, rgb, depth, prev_actions, state, mask)[:2])
        features, _ = self.policy.decide(instruction, rgb, depth, prev_actions, state, mask)
        progress = self.policy.estimate_progress(features) if self.policy.config.progress_monitor else None
        return Decoded(self.policy.action_head(features), progress=progress)


def load_encoder_weights(model: Any, path: str) -> None:
    """Load ``rgb_encoder.*`` / ``depth_encoder.*`` entries of a state dict into ``model``;
    a waypoint predictor checkpoint gives the depth encoder of a ``waypoints`` trunk."""
    state = load_weights(path, what="encoder checkpoint")
    if isinstance(state, dict) and state.get("kind") == "waypoint_predictor":
        if model.config.depth_encoder != "waypoints":
            raise ConfigError(f"{path} is a waypoint predictor checkpoint: its weights fit depth_encoder "
                              f"'waypoints', not {model.config.depth_encoder!r}")
        state = waypoint_trunk_weights(state, where=f"encoder checkpoint {path}")
    state = state.get("state_dict", state)
    wanted = {k: v for k, v in state.items() if k.startswith(("rgb_encoder.", "depth_encoder."))}
    missing = model.load_state_dict(wanted, strict=False)
    if not wanted:
        raise ConfigError(f"encoder checkpoint {path} holds no rgb_encoder.* / depth_encoder.* weights")
    if missing.unexpected_keys:
        raise ConfigError(f"encoder checkpoint {path}: unexpected keys {missing.unexpected_keys[:3]}")


def finish_policy(model: Any, config: ModelConfig) -> None:
    """What a policy's constructor does last: add the progress head (``progress_monitor``; last, so
    every other weight starts as it would without it), apply ``encoder_checkpoint`` and ``freeze_encoders``."""
    if config.progress_monitor:
        model.progress_head = nn.Linear(config.hidden, 1)
    if config.encoder_checkpoint:
        load_encoder_weights(model, config.encoder_checkpoint)
    if config.freeze_encoders:
        for module in (model.rgb_encoder, model.depth_encoder):
            module.requires_grad_(False)
