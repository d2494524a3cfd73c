"""Model hyper-parameters (VLN-CE's defaults where the paper is silent)."""

from __future__ import annotations

from dataclasses import dataclass

from vlnverse.errors import ConfigError

NUM_ACTIONS = 4  # STOP, FORWARD, LEFT, RIGHT (VLN-CE's discrete set)
START_ACTION = NUM_ACTIONS  # the "previous action" of an episode's first step


@dataclass(frozen=True)
class ModelConfig:
    """A Seq2Seq or CMA policy.

    Attributes:
        kind: ``seq2seq``, ``cma`` or ``gama`` (GAMA-lite).
        vocab_size: Instruction vocabulary size (``<pad>`` = 0, ``<unk>`` = 1).
        embedding_dim: Word embedding size (GloVe 6B-50d in VLN-CE).
        instruction_hidden: Instruction LSTM size (CMA: per direction of a BiLSTM).
        rgb_dim, depth_dim: Size of the pooled RGB / depth features.
        hidden: Recurrent state size (VLN-CE: 512).
        action_embedding: Previous-action embedding size (paper: 32).
        attention_dim: CMA's attention key/query size.
        rgb_size, depth_size: Input resolutions (square).
        channels: Channels of the from-scratch CNN encoders' three conv layers.
        rgb_encoder, depth_encoder: A trunk registered in
            :mod:`vlnverse.learning.models.trunks`: ``cnn`` (small CNN from scratch),
            ``waypoints`` (depth only: the waypoint predictor's CNN), or one of your own
            (``register_trunk``, e.g. a torchvision ResNet trunk).
        encoder_checkpoint: A ``.pt`` state dict loaded into ``rgb_encoder.*`` /
            ``depth_encoder.*`` before training (pretrained weights: ``vlnverse train
            encoders``' ``encoders.pt``, or a waypoint predictor checkpoint for a ``waypoints``
            depth trunk).
        freeze_encoders: Keep the visual encoders fixed (as VLN-CE does with pretrained ones).
        word_embeddings: A ``.npy`` ``(vocab_size, embedding_dim)`` matrix (e.g. GloVe rows in
            vocabulary order) to start the word embeddings from.
        max_instruction_tokens: Instructions are cut to this many tokens.
        experts: GAMA's experts per SAME layer (top-2 of them act at each step).
        progress_monitor: A progress head beside the action head (Seq2Seq and CMA): from the
            decision state it estimates how much of the route is behind the agent (VLN-CE's
            progress monitor, after the self-monitoring agent of Ma et al. 2019); trained as an
            auxiliary target (``ImitationConfig.progress_weight`` sets it), unused when acting.
    """

    kind: str = "seq2seq"
    vocab_size: int = 2
    embedding_dim: int = 50
    instruction_hidden: int = 128
    rgb_dim: int = 256
    depth_dim: int = 128
    hidden: int = 512
    action_embedding: int = 32
    attention_dim: int = 128
    rgb_size: int = 224
    depth_size: int = 256
    channels: tuple[int, int, int] = (32, 64, 64)
    rgb_encoder: str = "cnn"
    depth_encoder: str = "cnn"
    encoder_checkpoint: str | None = None
    freeze_encoders: bool = False
    word_embeddings: str | None = None
    max_instruction_tokens: int = 200
    experts: int = 4
    progress_monitor: bool = False

    def __post_init__(self) -> None:
        if self.kind not in ("seq2seq", "cma", "gama"):
            raise ConfigError(f"unknown model {self.kind!r}; valid: seq2seq, cma, gama")
        if not isinstance(self.experts, int) or self.experts < 2:
            raise ConfigError(f"model experts must be an integer >= 2 (top-2 routing), got {self.experts!r}")
        if self.progress_monitor and self.kind == "gama":
            raise ConfigError("the progress monitor is for seq2seq and cma, not gama")
        for name in ("vocab_size", "embedding_dim", "instruction_hidden", "rgb_dim", "depth_dim", "hidden",
                     "action_embedding", "attention_dim", "rgb_size", "depth_size", "max_instruction_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"model {name} must be a positive integer, got {value!r}")
        channels = tuple(self.channels)
        if len(channels) != 3 or any(not isinstance(c, int) or c < 1 for c in channels):
            raise ConfigError(f"model channels must be three positive integers, got {self.channels!r}")
        object.__setattr__(self, "channels", channels)
