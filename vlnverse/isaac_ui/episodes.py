"""The window's episode browser: a dataset's episodes of the open scene, and what to draw.

The window lists :class:`EpisodeRow` rows (task, instruction, length) for the scene open
in the stage and, on "Show episode", draws :func:`episode_markers` with
:func:`vlnverse.isaac_ui.markers.draw_episode`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vlnverse.errors import DatasetError
from vlnverse.eval.scoring.episode_record import MetricsConfig
from vlnverse.isaac_ui.markers import EpisodeMarkers, path_length
from vlnverse.tasks.dataset import EpisodeDataset
from vlnverse.tasks.episode import SPLITS, TASKS, Episode


@dataclass(frozen=True)
class EpisodeRow:
    """One line of the episode list.

    Attributes:
        episode_id: The episode's id.
        split: Dataset split.
        task: Task name.
        instruction: Instruction text.
        length: Reference path length (m).
        geodesic_distance: Start-to-goal geodesic distance (m).
        goals: Number of goals (sub-goals of long-horizon episodes).
    """

    episode_id: str
    split: str
    task: str
    instruction: str
    length: float
    geodesic_distance: float
    goals: int

    def label(self, width: int = 60) -> str:
        """The row as the window's list shows it (instruction shortened to ``width``)."""
        text = " ".join(self.instruction.split())
        if len(text) > width:
            text = text[: width - 1].rstrip() + "…"
        return f"[{self.task}] {self.length:.1f} m · {text}"


def _tail(path: Path, parts: int) -> tuple[str, ...]:
    return tuple(path.parts[-parts:])


class EpisodeBrowser:
    """Episodes of one dataset, filtered to the scene open in the stage.

    Args:
        dataset: Dataset folder or ``.jsonl(.gz)`` file.
        scenes_dir: Where the episodes' scene paths are relative to (default: the
            manifest's).

    Raises:
        DatasetError: the dataset cannot be opened.
    """

    def __init__(self, dataset: str | Path, scenes_dir: str | Path | None = None) -> None:
        self.dataset = EpisodeDataset.open(Path(dataset).expanduser(), scenes_dir=scenes_dir)

    def _matches(self, episode: Episode, scene_file: Path) -> bool:
        try:
            return self.dataset.scene_file(episode).resolve() == scene_file
        except DatasetError:
            # The dataset's corpus is elsewhere: match on the relative scene path instead.
            relative = Path(episode.scene_path)
            return _tail(scene_file, len(relative.parts)) == relative.parts

    def episodes_for_scene(self, scene_file: str | Path, split: str | None = None,
                           task: str | None = None) -> list[Episode]:
        """Episodes whose scene is ``scene_file`` (optionally one split / task), in dataset order.

        Raises:
            DatasetError: unknown split or task name.
        """
        if (split is not None and split not in SPLITS) or (task is not None and task not in TASKS):
            self.dataset.episodes(split, task)  # raises the DatasetError naming the valid names
        chosen = [e for e in self.dataset.all_episodes()
                  if (split is None or e.split == split) and (task is None or e.task == task)]
        target = Path(scene_file).expanduser().resolve()
        return [e for e in chosen if self._matches(e, target)]

    def rows(self, scene_file: str | Path, split: str | None = None, task: str | None = None) -> list[EpisodeRow]:
        """The list rows of :meth:`episodes_for_scene`."""
        return [episode_row(e) for e in self.episodes_for_scene(scene_file, split, task)]

    def episode(self, episode_id: str) -> Episode:
        """The episode ``episode_id``.

        Raises:
            DatasetError: no such episode.
        """
        return self.dataset.episode(episode_id)

    def tasks(self) -> list[str]:
        """Task names present in the dataset (for the window's filter)."""
        return sorted({e.task for e in self.dataset.all_episodes()})

    def splits(self) -> list[str]:
        """Split names present in the dataset (for the window's filter)."""
        return sorted({e.split for e in self.dataset.all_episodes()})


def episode_row(episode: Episode) -> EpisodeRow:
    """The list row of ``episode``."""
    return EpisodeRow(
        episode_id=episode.episode_id,
        split=episode.split,
        task=episode.task,
        instruction=episode.instruction.text,
        length=path_length(episode.reference_path),
        geodesic_distance=float(episode.geodesic_distance),
        goals=len(episode.goals),
    )


def episode_markers(episode: Episode, success_radius: float | None = None) -> EpisodeMarkers:
    """What "Show episode" draws: start pose, goals and the reference path.

    Args:
        episode: The episode.
        success_radius: Radius of the goal discs (m); default: the harness's scoring
            radius (:attr:`MetricsConfig.success_distance`), i.e. the disc an agent must
            stop inside to succeed in "Run agent".
    """
    radius = float(success_radius if success_radius is not None else MetricsConfig().success_distance)
    return EpisodeMarkers(
        start_position=tuple(float(v) for v in episode.start_position),
        start_yaw=float(episode.start_yaw),
        goals=tuple(tuple(float(v) for v in g.position) for g in episode.goals),
        success_radius=radius,
        path=tuple(tuple(float(v) for v in p) for p in episode.reference_path),
    )


def describe_episode(episode: Episode, success_radius: float | None = None) -> str:
    """The text the window shows under the drawn episode."""
    markers = episode_markers(episode, success_radius)
    x, y, _ = markers.start_position
    lines = [
        f"{episode.episode_id} ({episode.split}/{episode.task})",
        episode.instruction.text,
        f"start ({x:.2f}, {y:.2f}) yaw {markers.start_yaw:.2f} rad; "
        f"{len(markers.goals)} goal(s), success radius {markers.success_radius:.2f} m; "
        f"reference path {path_length(episode.reference_path):.2f} m, geodesic {episode.geodesic_distance:.2f} m",
    ]
    lines.extend(f"  sub-goal {i + 1}: {text}" for i, text in enumerate(episode.instruction.subgoals))
    return "\n".join(lines)
