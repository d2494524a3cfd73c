"""What ARNA's prompts tell the model: the task, the termination conditions and, before a
plan step, the robot's situation (Appendix D.3's context).

The task is stated per task kind (EQA's question and lettered options, an object goal, a
long-horizon instruction's legs, a visual-reference goal picture, an instruction). The
context of a plan step adds the plan, the memory (§4.4), the scene graph's statistics, the
robot's pose and remaining steps, the frontiers, the known nodes and the occupancy grid
around the robot (a picture for a ``vlm`` model, ASCII otherwise).
"""

from __future__ import annotations

import math

from vlnverse.agents.arna.state import Part
from vlnverse.agents.prompts import Prompt

OPTION_LETTERS = "ABCD"  # the EQA options' labels (A..D), as the env shows them


class Briefing(Part):
    """The task and context sections of the agent's prompts."""

    def task_text(self) -> str:
        """The task as the prompts state it."""
        state = self.state
        episode = state.episode
        category = episode.extra.get("object_category")
        if "options" in episode.extra:
            options = " ".join(f"{OPTION_LETTERS[k]}) {o}" for k, o in enumerate(episode.extra["options"]))
            return (f"Explore to answer this multiple-choice question from what you observe: "
                    f"{episode.extra['question']} Options: {options}. When terminating, answer with the option letter.")
        if category:
            return f"Find a {category} and stop close to it, with it in view."
        if state.long_horizon:
            return "Follow these navigation instructions and stop at each goal in order:\n" + \
                state.instruction(episode.instruction)
        if state.reference is not None:
            return (f"Go to the place shown in the goal picture and stop there: {episode.instruction}"
                    if episode.instruction else "Go to the place shown in the goal picture and stop there.")
        return f"Follow this navigation instruction and stop at its goal: {episode.instruction}"

    def task_prompt(self) -> Prompt:
        """The task, the goal picture where there is one, and the termination conditions."""
        state = self.state
        prompt = Prompt()
        prompt.section("Task", self.task_text())
        if state.reference is not None:
            if self.config.perception == "vlm":
                prompt.image("goal", state.reference)
            else:
                prompt.section("Goal picture", "(a picture of the goal exists, but this text-only robot cannot see it)")
        if state.workflow.get("termination"):
            prompt.section("Termination conditions", state.workflow["termination"], cut="shorten")
        return prompt

    def step_prompt(self, upcoming: str) -> Prompt:
        """The task prompt with the context of the plan step ``upcoming``."""
        state = self.state
        prompt = self.task_prompt()
        if state.program is not None:
            prompt.section("Plan", state.program.listing(), cut="shorten")
        prompt.section("Next plan step", upcoming, cut="shorten")
        prompt.section("Memory", state.memory.render(), cut="shorten")
        prompt.section("Scene graph statistics", state.graph.statistics(), cut="shorten")
        pose = state.pose
        prompt.section("Robot state", f"step {state.step}, at ({pose[0]:.1f}, {pose[1]:.1f}) facing "
                       f"{math.degrees(pose[3]) % 360:.0f} deg; {state.episode.max_steps - state.step} environment "
                       "steps left")
        tools = state.tools
        prompt.section("Frontiers", tools.frontier_listing(), cut="shorten")
        known = [*state.graph.objects, *(r.name for r in state.graph.rooms),
                 *(f"Point_{i}" for i in tools.points)]
        prompt.section("Known nodes", ", ".join(known) or "none yet", cut="shorten_start")
        picture, ascii_map = tools.overlay_grid(pose[:2], 6.0, [], [])
        if self.config.perception == "vlm":
            prompt.image("occupancy grid", picture)
        else:
            prompt.section("Occupancy grid around you", ascii_map)
        return prompt
