"""A checkpoint is read as data: a file whose unpickling would call a function is refused
before anything runs, the shipped weights load as they are, and ``latest.pt`` files (old and
new) still resume."""

from __future__ import annotations

import builtins
import random

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tests.bundled import REPO  # noqa: E402
from vlnverse.errors import UnsafeCheckpoint  # noqa: E402
from vlnverse.learning.agent import CMAAgent, LearnedAgentConfig  # noqa: E402
from vlnverse.learning.checkpoints import resume, save_checkpoint, training_state  # noqa: E402
from vlnverse.weights import load_weights  # noqa: E402

SHIPPED = sorted([*REPO.glob("assets/agents/*/*.pt"), *REPO.glob("vlnverse/data/waypoints/*.pt")])


class WritesAFile:
    """Unpickled, it opens (so creates) ``path``: any call a pickle may make would do."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return builtins.open, (self.path, "w")


def booby_trapped(tmp_path, base):
    """A copy of the checkpoint ``base`` that also holds a :class:`WritesAFile`."""
    marker = tmp_path / "code_ran"
    state = torch.load(base, map_location="cpu", weights_only=True)
    path = tmp_path / "trapped.pt"
    torch.save({**state, "note": WritesAFile(marker)}, path)
    return path, marker


def test_a_checkpoint_that_would_run_code_is_refused_by_every_loader(tmp_path):
    from vlnverse.agents.waypoints.learned.predictor import load_predictor_checkpoint
    from vlnverse.learning.online.agent import WaypointBertAgent

    path, marker = booby_trapped(tmp_path, REPO / "assets" / "agents" / "cma" / "cma.pt")
    model = torch.nn.Linear(2, 2)
    loaders = {
        "cma agent": lambda: CMAAgent(LearnedAgentConfig(checkpoint=str(path))),
        "waypoint_bert agent": lambda: WaypointBertAgent(LearnedAgentConfig(checkpoint=str(path))),
        "waypoint predictor": lambda: load_predictor_checkpoint(path),
        "resume": lambda: resume(path, model, torch.optim.AdamW(model.parameters())),
    }
    for name, load in loaders.items():
        with pytest.raises(UnsafeCheckpoint, match=r"holds more than tensors and plain data \(it needs (io|builtins)\.open\)"):
            load()
        assert not marker.exists(), f"the {name} ran the checkpoint's code"


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_the_shipped_checkpoints_are_plain_data(path):
    state = load_weights(path)
    assert state["kind"] in ("seq2seq", "cma", "gama", "waypoint_predictor") and state["model"]


def test_a_new_latest_pt_is_plain_data_and_an_old_one_still_resumes(tmp_path):
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.AdamW(model.parameters())
    model(torch.randn(4, 3)).sum().backward()
    optimizer.step()
    history = [{"epoch": 1, "loss": np.float32(0.5), "val_sr": np.float64(0.25)}]
    new = tmp_path / "latest.pt"
    save_checkpoint({"model": model.state_dict(), **training_state(optimizer, history)}, new)
    state = torch.load(new, weights_only=True)  # no allow-list needed
    assert state["history"] == [{"epoch": 1, "loss": 0.5, "val_sr": 0.25}]

    np.random.seed(7)
    old = tmp_path / "old_latest.pt"  # as training_state wrote it before: numpy's RNG tuple and scalars
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "history": history,
                "rng": {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}},
               old)
    expected = np.random.rand(3)
    np.random.seed(99)
    fresh = torch.nn.Linear(3, 2)
    assert resume(old, fresh, torch.optim.AdamW(fresh.parameters())) == history
    assert np.array_equal(np.random.rand(3), expected)  # numpy's RNG continues where the file left it
    assert torch.equal(fresh.weight, model.weight)
