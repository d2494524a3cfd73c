"""ARNA's perception (Algorithm 1's UPDATEPERCEPTION): every step's observations into the
agent's own scene graph (:mod:`~vlnverse.agents.arna.worldmodel`), and the visual analysis
tool's model calls.

Depth fills the occupancy grid; objects and the room come from the semantic sensor
(``perception: gt``, which also reads the room label; recorded as privileged) or from the
model's labels of the new RGB views (``perception: vlm``, looking for the workflow's
targets). A view that showed new floor or a new object is stored as an image record; only
the newest ``max_images`` keep their pixels. The env's scene graph is never read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vlnverse.agents.arna import prompts as P
from vlnverse.agents.arna.state import Part
from vlnverse.agents.arna.tools import ToolLibrary
from vlnverse.agents.arna.worldmodel import OccupancyGrid, SceneMemoryGraph
from vlnverse.agents.panorama import Panorama
from vlnverse.agents.prompts import Prompt


class Perception(Part):
    """Builds the episode's scene graph (and its toolset) from the robot's sensors."""

    def perceive(self, observation: Mapping[str, Any], pose: np.ndarray) -> None:
        """UPDATEPERCEPTION with one step's observation; the new images and objects also go
        to the observation buffer of the navigation in progress."""
        state, cfg = self.state, self.config
        panorama = Panorama.from_observation(observation, cfg.panorama)
        if state.graph is None:
            state.graph = SceneMemoryGraph(OccupancyGrid(pose[:2], cfg.grid_extent, cfg.grid_resolution))
            state.tools = ToolLibrary(state.graph, lambda: self.state.pose, np.random.default_rng(state.episode.seed),
                                      self.analyse, lambda: self.state.memory.render(), cfg.panorama.hfov_deg)
        state.pose = pose
        graph, wp = state.graph, cfg.waypoints
        seen: dict[int, list[str]] = {}
        new_cells = {v: graph.grid.integrate(pose, panorama, wp.step_height, wp.body_height, view=v)
                     for v in range(cfg.panorama.views)}
        known = set(graph.objects)
        if cfg.perception == "gt":
            room_label = state.room_type or "unknown"
            for v in range(cfg.panorama.views):
                seen[v] = graph.add_semantic(pose, panorama, state.categories, v)
        else:
            room_label, seen = self._label_views(pose, panorama, [v for v, n in new_cells.items()
                                                                 if n >= cfg.min_new_cells])
        room = graph.add_place(pose[:2], room_label)
        stored = []
        for v in range(cfg.panorama.views):
            if new_cells[v] >= cfg.min_new_cells or set(seen.get(v, ())) - known:
                rgb = panorama.rgb[v] if panorama.rgb is not None else None
                record = graph.add_image(state.step, pose, float(pose[3] + panorama.yaws[v]), rgb, seen.get(v, ()), room)
                stored.append(record.image_id)
        self._forget_old_pixels()
        if state.nav is not None:
            state.nav.new_images += stored
            state.nav.new_objects += [n for n in graph.objects if n not in known]
        self.record["perception"] = {"room": room.name, "stored_images": stored,
                                     "new_objects": [n for n in graph.objects if n not in known]}

    def _label_views(self, pose: np.ndarray, panorama: Panorama, views: Sequence[int]) -> tuple[str, dict[int, list[str]]]:
        """``vlm`` perception: the model names the objects in the new views and the room."""
        state = self.state
        if not views or panorama.rgb is None:
            return (state.graph.rooms[-1].label if state.graph.rooms else "unknown"), {}
        prompt = Prompt()
        targets = state.workflow.get("targets", "")
        prompt.section("Objects of interest", targets or "any notable object")
        for v in views:
            prompt.image(str(v), panorama.rgb[v])
        answer = self.agent.calls.structured("perception", P.PERCEPTION_SYSTEM, prompt, P.Perception,
                                             on_failure=self.agent.budgets.perception_failure)
        if answer is None:
            return "unknown", {}
        state.perception_failures.succeed()
        seen: dict[int, list[str]] = {}
        for det in answer.objects:
            if det.view in views and det.label.strip():
                name = state.graph.add_labelled(pose, panorama, det.view, det.label, det.column)
                if name is not None:
                    seen.setdefault(det.view, []).append(name)
        return answer.room, seen

    def _forget_old_pixels(self) -> None:
        images = self.state.graph.images
        for record in images[:max(0, len(images) - self.config.max_images)]:
            record.rgb = None

    def analyse(self, rationale: str, records: list[Any], joint: bool) -> str:
        """The visual analysis tool's model call(s): the images one by one, or together when
        ``joint`` (at most six calls)."""
        groups = [records] if joint else [[r] for r in records]
        findings = []
        for group in groups[:6]:
            prompt = Prompt()
            prompt.section("Question", rationale, cut="shorten")
            for r in group:
                prompt.section(f"Image {r.image_id}", r.description)
                if self.config.perception == "vlm" and r.rgb is not None:
                    prompt.image(str(r.image_id), r.rgb)
            text = self.agent.calls.text("visual_analysis", P.ANALYSIS_SYSTEM, prompt)
            findings.append(f"[{', '.join(str(r.image_id) for r in group)}] {self.agent.capped(text)}")
        return "\n".join(findings)
