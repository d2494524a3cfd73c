"""The window's "Scene graph" button: a readable summary of the open scene."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from vlnverse.scene import load_scene
from vlnverse.scene.occupancy import build_occupancy
from vlnverse.scene.scene_graph import build_scene_graph, scene_graph_summary


@dataclass(frozen=True)
class SceneSummary:
    """Counts and the per-room text of a scene's graph.

    Attributes:
        scene_id: The scene's id.
        rooms: Number of rooms.
        objects: Number of labelled objects.
        doors: Number of doors and doorways.
        categories: Objects per category, most frequent first.
        text: One line per room (objects, supports, neighbouring rooms).
    """

    scene_id: str
    rooms: int
    objects: int
    doors: int
    categories: tuple[tuple[str, int], ...]
    text: str

    def render(self, top: int = 8) -> str:
        """The summary as the window shows it."""
        head = f"{self.scene_id}: {self.rooms} rooms, {self.objects} objects, {self.doors} doors"
        common = ", ".join(f"{name} ×{count}" for name, count in self.categories[:top])
        return "\n".join(filter(None, [head, f"most common: {common}" if common else "", self.text]))


def summarize_scene(path: str | Path, agent_radius: float = 0.30) -> SceneSummary:
    """Load the USD scene at ``path`` and summarize its scene graph."""
    scene = load_scene(path)
    occupancy = build_occupancy(scene, agent_radius=agent_radius)
    graph = build_scene_graph(scene, occupancy)
    counts = Counter(obj.category for obj in scene.objects)
    return SceneSummary(
        scene_id=scene.scene_id,
        rooms=len(scene.rooms),
        objects=len(scene.objects),
        doors=len(scene.doors),
        categories=tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))),
        text=scene_graph_summary(graph),
    )
