"""Fixtures of the learning tests: a few fine-grained episodes on the bundled scenes and
their pre-rendered frames (small frames, small chunks so episodes cross chunk borders)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bundled import bundled_dataset


@pytest.fixture(scope="session")
def fine_dataset(tmp_path_factory) -> Path:
    """Two fine-grained episodes per bundled scene (train, val_unseen and test splits)."""
    return bundled_dataset(tmp_path_factory.mktemp("fine"), tasks=("fine",), per_scene=6)


@pytest.fixture(scope="session")
def train_frames(fine_dataset, tmp_path_factory):
    """The train split pre-rendered at 32 px in 16-frame compressed chunks."""
    from vlnverse.learning.prerender import PrerenderConfig, prerender

    config = PrerenderConfig(dataset=str(fine_dataset), out=str(tmp_path_factory.mktemp("frames")), split="train",
                             rgb_size=32, depth_size=32, chunk_frames=16, semantic=True, compress=True)
    return config, prerender(config)


@pytest.fixture(scope="session")
def augmentation(tmp_path_factory):
    """One augmentation home with frames stored as the ``train_frames`` fixture's (32 px)."""
    from vlnverse.release.augment import AugmentConfig, build_augmentation

    out = tmp_path_factory.mktemp("augment") / "AUG"
    summary = build_augmentation(AugmentConfig(track="mini", out=str(out), homes=1, per_home=2, rgb_size=32,
                                               depth_size=32))
    return out, summary.facts


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    """Tiny models run fastest on one thread, above all on a shared, loaded machine."""
    try:
        import torch
    except ImportError:
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
