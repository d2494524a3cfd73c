"""Encoder trunks by name: the waypoint predictor's depth CNN as a policy's depth encoder, and
checkpoints that name a trunk never import anything."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from vlnverse.agents.waypoints.learned.predictor import (  # noqa: E402
    SHIPPED_CHECKPOINT,
    load_predictor_checkpoint,
)
from vlnverse.errors import ConfigError  # noqa: E402
from vlnverse.learning.models import ModelConfig, build_model  # noqa: E402
from vlnverse.learning.models.trunks import TRUNKS, register_trunk, small_cnn  # noqa: E402

SMALL = {"vocab_size": 20, "embedding_dim": 8, "instruction_hidden": 8, "rgb_dim": 16, "depth_dim": 8, "hidden": 32,
         "action_embedding": 8, "attention_dim": 16, "rgb_size": 32, "depth_size": 64, "channels": (4, 8, 8)}


def test_waypoint_depth_trunk_computes_what_the_predictor_computes():
    model = build_model(ModelConfig(kind="cma", **SMALL, depth_encoder="waypoints",
                                    encoder_checkpoint=str(SHIPPED_CHECKPOINT), freeze_encoders=True)).eval()
    net, _ = load_predictor_checkpoint(SHIPPED_CHECKPOINT)
    depth = torch.rand(3, 64, 64, 1, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        ours = model.depth_encoder.trunk(depth.permute(0, 3, 1, 2))
        layers = len(net.encoder) - 3  # the predictor's own head: flatten, linear, ReLU
        theirs = net.encoder[:layers](torch.nn.functional.adaptive_avg_pool2d(depth.permute(0, 3, 1, 2), 32))
    assert ours.shape == (3, 64, 4, 4)
    torch.testing.assert_close(ours, theirs)
    assert not any(p.requires_grad for p in model.depth_encoder.parameters())


def test_waypoint_checkpoint_is_refused_for_another_depth_trunk():
    with pytest.raises(ConfigError, match="fit depth_encoder 'waypoints'"):
        build_model(ModelConfig(kind="cma", **SMALL, encoder_checkpoint=str(SHIPPED_CHECKPOINT)))


def test_waypoints_trunk_reads_depth_only():
    with pytest.raises(ConfigError, match="depth"):
        build_model(ModelConfig(kind="cma", **SMALL, rgb_encoder="waypoints"))


def test_a_checkpoint_naming_an_unregistered_trunk_imports_nothing(tmp_path, monkeypatch):
    """A model config from a file names trunks; 'module:attr' is not imported."""
    import sys

    from vlnverse.learning.agent import load_policy

    source = build_model(ModelConfig(kind="cma", **SMALL))
    path = tmp_path / "evil.pt"
    config = {**{k: getattr(source.config, k) for k in ModelConfig.__dataclass_fields__}, "rgb_encoder": "antigravity:fly"}
    torch.save({"kind": "cma", "model_config": config, "model": source.state_dict()}, path)
    monkeypatch.delitem(sys.modules, "antigravity", raising=False)
    with pytest.raises(ConfigError, match="unknown encoder trunk 'antigravity:fly'"):
        load_policy(str(path))
    assert "antigravity" not in sys.modules


def test_registered_trunk_builds_and_builtins_stay(monkeypatch):
    monkeypatch.setitem(TRUNKS, "wide", lambda config, channels: small_cnn(channels, (8, 8, 12)))
    model = build_model(ModelConfig(kind="seq2seq", **SMALL, rgb_encoder="wide"))
    assert model.rgb_encoder.channels == 12
    with pytest.raises(ConfigError, match="built in"):
        register_trunk("cnn", lambda config, channels: None)
