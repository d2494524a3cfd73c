"""ARNA's memory updates (paper Algorithm 1's MEMORYUPDATE, Appendix D.4).

After each plan step the model rewrites the memory (:mod:`~vlnverse.agents.arna.memory`)
from the step's result; after a navigation, it first selects the relevant new observations
from the observation buffer (information selection), and the memory is rewritten from
those. The fields the model writes are capped (``answer_tokens``) when kept.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vlnverse.agents.arna import prompts as P
from vlnverse.agents.arna.state import Navigation, Part
from vlnverse.agents.arna.tools import ToolResult
from vlnverse.agents.prompts import Prompt


class MemoryWriter(Part):
    """Has the model rewrite the episode's memory."""

    def update(self, line: str, result: ToolResult, selected: str = "") -> None:
        """MEMORYUPDATE after the plan step ``line`` gave ``result`` (``selected``: the
        observations chosen from the buffer, for a navigation)."""
        if not self.config.memory_updates:
            return
        prompt = Prompt()
        prompt.section("Task", self.agent.briefing.task_text())
        prompt.section("Current memory", self.state.memory.render(), cut="shorten")
        prompt.section("Step just executed", line, cut="shorten")
        prompt.section("New information", (selected + "\n" + result.text).strip(), cut="shorten")
        if self.config.perception == "vlm":
            for label, image in result.images[:4]:
                prompt.image(label, image)
        answer = self.agent.calls.structured("memory_update", P.MEMORY_SYSTEM, prompt, P.MemoryUpdate)
        if answer is None:
            self.state.trace.fallbacks += 1
            return
        self.state.memory.update({key: self.agent.capped(value) for key, value in answer.model_dump().items()})

    def after_navigation(self, nav: Navigation) -> None:
        """MEMORYUPDATE from the observation buffer of a navigation that saw something new:
        the model selects the relevant observations first."""
        graph = self.state.graph
        listing = [graph.images[i].description for i in nav.new_images[-24:]]
        listing += [graph.objects[n].describe() for n in nav.new_objects]
        prompt = Prompt()
        prompt.section("Task", self.agent.briefing.task_text())
        prompt.section("New observations while moving", "\n".join(listing), cut="oldest")
        picked = self.agent.calls.structured("information_selection", P.SELECT_INFO_SYSTEM, prompt,
                                             P.InformationSelection)
        if picked is not None and not picked.done and picked.items:
            details = self._details(picked.items)
            self.update(f"navigation to {nav.goal.label}", ToolResult(True, nav.done or "", details[1]), details[0])

    def _details(self, items: Sequence[str]) -> tuple[str, list[tuple[str, np.ndarray]]]:
        """The selected items (``image N``, an object, a room) as text and pictures."""
        graph, lines, images = self.state.graph, [], []
        for item in items[:6]:
            key = item.strip().lower()
            digits = "".join(ch for ch in key if ch.isdigit())
            if key.startswith("image") and digits and int(digits) < len(graph.images):
                record = graph.images[int(digits)]
                lines.append(record.description)
                if record.rgb is not None:
                    images.append((f"image {record.image_id}", record.rgb))
            elif (nodes := graph.matching(key)):
                lines.append(nodes[0].describe())
            elif (room := graph.room(key)) is not None:
                lines.append(f"{room.name}: objects {', '.join(n.name for n in graph.objects.values() if graph.room_of(n.position) is room)}")
        return "\n".join(lines), images
