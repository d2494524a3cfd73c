"""Seq2Seq, CMA and GAMA-lite: output shapes, step-by-step equals whole-sequence, one-batch overfit."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from vlnverse.learning.models import ModelConfig, build_model  # noqa: E402
from vlnverse.learning.models.config import START_ACTION  # noqa: E402

TINY = {"vocab_size": 20, "embedding_dim": 8, "instruction_hidden": 8, "rgb_dim": 16, "depth_dim": 8, "hidden": 32,
        "action_embedding": 8, "attention_dim": 16, "rgb_size": 32, "depth_size": 24, "channels": (4, 8, 8)}


def batch(b: int = 2, t: int = 5, seed: int = 0) -> dict:
    g = torch.Generator().manual_seed(seed)
    actions = torch.randint(0, 4, (b, t), generator=g)
    tokens = torch.randint(2, 20, (b, 7), generator=g)
    tokens[1, 4:] = 0  # a shorter instruction
    return {"rgb": torch.randint(0, 256, (b, t, 32, 32, 3), generator=g, dtype=torch.uint8),
            "depth": torch.rand((b, t, 24, 24, 1), generator=g), "tokens": tokens, "actions": actions,
            "prev_actions": torch.cat([torch.full((b, 1), START_ACTION), actions[:, :-1]], dim=1)}


def run(model, data, steps=None):
    instruction = model.encode_instruction(data["tokens"])
    state = model.initial_state(data["tokens"].shape[0])
    if steps is None:
        return model(instruction, data["rgb"], data["depth"], data["prev_actions"], state)[0]
    outputs = []
    for t in range(steps):
        logits, state = model(instruction, data["rgb"][:, t:t + 1], data["depth"][:, t:t + 1],
                              data["prev_actions"][:, t:t + 1], state)
        outputs.append(logits)
    return torch.cat(outputs, dim=1)


@pytest.mark.parametrize("kind", ["seq2seq", "cma", "gama"])
def test_shapes_and_stepwise_equals_sequence(kind):
    torch.manual_seed(0)
    model = build_model(ModelConfig(kind=kind, **TINY)).eval()
    data = batch()
    with torch.no_grad():
        whole = run(model, data)
        stepwise = run(model, data, steps=5)
    assert whole.shape == (2, 5, 4)
    torch.testing.assert_close(whole, stepwise, rtol=1e-4, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["seq2seq", "cma"])  # GAMA: test_gama_routes_top2_and_fits_actions_and_residuals
def test_one_batch_overfit(kind):
    torch.manual_seed(0)
    model = build_model(ModelConfig(kind=kind, **TINY))
    data = batch(b=2, t=6, seed=1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(150):
        loss = torch.nn.functional.cross_entropy(run(model, data).flatten(0, 1), data["actions"].flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.05
    assert torch.equal(run(model, data).argmax(-1), data["actions"])


def test_encoder_checkpoint_loads_pretrained_weights(tmp_path):
    source = build_model(ModelConfig(kind="cma", **TINY))
    path = tmp_path / "encoders.pt"
    torch.save({k: v for k, v in source.state_dict().items() if k.startswith(("rgb_encoder.", "depth_encoder."))}, path)
    model = build_model(ModelConfig(kind="seq2seq", **TINY, encoder_checkpoint=str(path), freeze_encoders=True))
    for name, value in model.rgb_encoder.state_dict().items():
        assert torch.equal(value, source.rgb_encoder.state_dict()[name])
    assert not any(p.requires_grad for p in model.depth_encoder.parameters())


@pytest.mark.slow
def test_gama_routes_top2_and_fits_actions_and_residuals():
    from vlnverse.learning.models.encoders import TeacherForced
    from vlnverse.learning.models.gama import PRIMITIVES, residual_targets

    torch.manual_seed(0)
    model = build_model(ModelConfig(kind="gama", experts=4, **TINY))
    data = batch(b=2, t=6, seed=2)
    # SAME: each step mixes its router's two most probable experts, weights renormalised
    moe = model.action_moe
    route, features = torch.randn(2, 6, TINY["attention_dim"]), torch.randn(2, 6, moe.experts[0][0].in_features)
    with torch.no_grad():
        mixed, probabilities = moe(route, features)
        for b in range(2):
            for t in range(6):
                top = probabilities[b, t].topk(2)
                expected = sum(p * moe.experts[int(k)](features[b, t]) for p, k in zip(top.values, top.indices, strict=True))
                torch.testing.assert_close(mixed[b, t], expected / top.values.sum())
    # the real motion: the primitive, except one forward step cut short by a collision
    motion = torch.tensor(PRIMITIVES)[data["actions"]].clone()
    motion[0, 2] = torch.tensor([0.1, 0.0])
    targets = residual_targets(data["actions"], motion)
    runner = TeacherForced(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(150):
        logits, residual, _ = runner(data["tokens"], data["rgb"], data["depth"], data["prev_actions"])
        loss = (torch.nn.functional.cross_entropy(logits.flatten(0, 1), data["actions"].flatten())
                + (residual - targets).pow(2).sum(-1).mean())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert residual.shape == (2, 6, 2) and loss.item() < 0.05
    assert torch.equal(logits.argmax(-1), data["actions"])
    # the unified decoder: primitive of the most likely action plus the residual = the real motion
    torch.testing.assert_close(model.continuous_action(logits, residual), motion, atol=0.05, rtol=0)
