"""An online topological map of places, built from the agent's odometry and candidates.

MapGPT's map (Chen et al., 2024) on continuous ground: a *place* is a point in the
odometry frame; the agent's positions are visited places, candidate end points are
observed places; points closer than ``merge_distance`` are the same place. An edge joins
the place where a candidate was seen and the place it leads to. Place ids are stable
integers in order of discovery.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class TopoMap:
    """Places, edges and the visiting order."""

    merge_distance: float = 0.75
    points: list[np.ndarray] = field(default_factory=list)
    visited: set[int] = field(default_factory=set)
    edges: dict[int, set[int]] = field(default_factory=dict)
    trajectory: list[int] = field(default_factory=list)

    def place_at(self, point: np.ndarray) -> int:
        """The id of the place at ``point`` (a new place when none is near)."""
        point = np.asarray(point, dtype=np.float64)[:2]
        if self.points:
            gaps = np.linalg.norm(np.asarray(self.points) - point, axis=1)
            nearest = int(np.argmin(gaps))
            if gaps[nearest] < self.merge_distance:
                return nearest
        self.points.append(point)
        self.edges[len(self.points) - 1] = set()
        return len(self.points) - 1

    def visit(self, point: np.ndarray) -> int:
        """Record the agent at ``point``; joins it to the previous visited place."""
        place = self.place_at(point)
        if self.trajectory and self.trajectory[-1] != place:
            self.connect(self.trajectory[-1], place)
        if not self.trajectory or self.trajectory[-1] != place:
            self.trajectory.append(place)
        self.visited.add(place)
        return place

    def connect(self, a: int, b: int) -> None:
        if a != b:
            self.edges[a].add(b)
            self.edges[b].add(a)

    def describe(self) -> str:
        """``Place i is connected with Places j, k`` lines (MapGPT's Map section)."""
        lines = []
        for place in sorted(self.edges):
            if self.edges[place]:
                others = ", ".join(str(p) for p in sorted(self.edges[place]))
                lines.append(f"Place {place} is connected with Places {others}")
        return "\n".join(lines)

    def unvisited(self) -> list[int]:
        return [p for p in range(len(self.points)) if p not in self.visited]
