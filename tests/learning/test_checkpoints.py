"""Resuming restores a checkpoint into a model that lives on another device than the CPU."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from vlnverse.learning.checkpoints import resume, save_checkpoint, training_state  # noqa: E402


@pytest.mark.filterwarnings("ignore:for .*copying from a non-meta parameter:UserWarning")
def test_resume_into_a_model_on_another_device_restores_rng_and_optimizer(tmp_path):
    """The ``meta`` device stands in for a GPU (none here): a checkpoint read onto the
    model's device would hand ``torch.set_rng_state`` a non-CPU tensor and fail."""
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.AdamW(model.parameters())
    model(torch.randn(4, 3)).sum().backward()
    optimizer.step()
    latest = tmp_path / "latest.pt"
    save_checkpoint({"model": model.state_dict(), **training_state(optimizer, [{"epoch": 1}])}, latest)
    expected = torch.rand(5)

    elsewhere = torch.nn.Linear(3, 2).to("meta")
    moved = torch.optim.AdamW(elsewhere.parameters())
    assert resume(latest, elsewhere, moved) == [{"epoch": 1}]
    assert torch.equal(torch.rand(5), expected)  # the RNG continues where the checkpoint left it
    assert moved.state_dict()["state"][0]["exp_avg"].device.type == "meta"
