"""The paper's Table 2 and how a build's counts compare with it.

Table 2 lists episodes (and scenes) per task and split over 263 scenes (177 train, 33
val-unseen, 53 test; val-seen episodes come from train scenes). A scaled build has fewer
scenes per split and may generate fewer trajectories per scene, so its expected count of a
cell is the paper's count times (scenes in the split / the paper's) times (trajectories
per scene / 75).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from vlnverse.scene.procgen.corpus import PAPER_SPLIT

TABLE2: dict[str, dict[str, int]] = {
    "fine": {"train": 3963, "val_seen": 423, "val_unseen": 825, "test": 1325},
    "coarse": {"train": 11895, "val_seen": 1269, "val_unseen": 2505, "test": 3975},
    "visual_reference": {"train": 11895, "val_seen": 1269, "val_unseen": 2505, "test": 3975},
    "long_horizon": {"train": 11946, "val_seen": 1329, "val_unseen": 2475, "test": 3975},
    "dialogue": {"train": 11895, "val_seen": 1269, "val_unseen": 2505, "test": 3975},
}
"""Episodes per task and split in the paper's Table 2."""
PAPER_PER_SCENE = 75
"""Coarse trajectories per scene behind Table 2 (``datagen/paper_splits.yaml``)."""
TOLERANCE = 0.03
"""A full-scale cell agrees with Table 2 when within this relative difference."""
SPLITS = ("train", "val_seen", "val_unseen", "test")


@dataclass(frozen=True)
class Cell:
    """One task × split cell: the build's count beside the paper's.

    Attributes:
        task, split: The cell.
        episodes: Episodes in the build.
        paper: Table 2's count (None for tasks the paper does not list).
        expected: Table 2 scaled to this build's scenes and trajectories per scene.
    """

    task: str
    split: str
    episodes: int
    paper: int | None
    expected: float | None

    @property
    def deviation(self) -> float | None:
        """Relative difference from ``expected`` (None without a reference)."""
        if not self.expected:
            return None
        return self.episodes / self.expected - 1.0

    @property
    def within(self) -> bool | None:
        """Whether the cell is within :data:`TOLERANCE` of ``expected``."""
        deviation = self.deviation
        return None if deviation is None else abs(deviation) <= TOLERANCE + 1e-12


def compare(splits: Mapping[str, Mapping[str, Mapping[str, int]]], scene_counts: Mapping[str, int],
            per_scene: int, tasks: tuple[str, ...]) -> list[Cell]:
    """Every task × split cell of a build.

    Args:
        splits: The dataset manifest's ``splits`` (``{split: {task: {"episodes": n}}}``).
        scene_counts: Scenes per scene split of the build (``train``, ``val_unseen``, ``test``).
        per_scene: Coarse trajectories per scene of the build.
        tasks: The build's tasks, in order.
    """
    factor = per_scene / PAPER_PER_SCENE
    cells = []
    for task in tasks:
        for split in SPLITS:
            episodes = int(splits.get(split, {}).get(task, {}).get("episodes", 0))
            paper = TABLE2.get(task, {}).get(split)
            scene_split = "train" if split == "val_seen" else split
            expected = (None if paper is None else
                        paper * scene_counts.get(scene_split, 0) / PAPER_SPLIT[scene_split] * factor)
            cells.append(Cell(task, split, episodes, paper, expected))
    return cells
