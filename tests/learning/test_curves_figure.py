"""A training run's curves picture: titled with the run's name, DAgger rounds marked where they start."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from vlnverse.learning.imitation import EpochStats, curves_figure  # noqa: E402


def test_curves_are_titled_with_the_run_and_mark_each_dagger_round():
    history = [EpochStats(epoch=e, loss=1.0 / e, accuracy=0.5, samples=10, seconds=1.0, val_sr=0.1, val_spl=0.1)
               for e in range(1, 13)]
    figure = curves_figure(history, title="RUN/cma_dagger: cma imitation + 2 DAgger rounds", dagger_starts=[4, 8, 12])
    assert figure._suptitle.get_text() == "RUN/cma_dagger: cma imitation + 2 DAgger rounds"
    marks = [[line.get_xdata()[0] for line in ax.get_lines() if line.get_linestyle() == "--"] for ax in figure.axes]
    assert marks == [[4.5, 8.5], [4.5, 8.5]]   # a round that would start after the last epoch is not drawn
    assert [t.get_text() for t in figure.axes[1].texts] == ["DAgger 1", "DAgger 2"]
