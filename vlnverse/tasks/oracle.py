"""Dialogue oracles (paper §3.3.1 task 5, §3.5): answers to the agent's questions.

An oracle has privileged access — the scene graph, the goal and the shortest path from
the agent's current pose — and answers in plain language. :class:`TemplateOracle` needs
no model: it gives the next turns and rooms along the shortest path and where the target
is relative to landmarks. :class:`LLMOracle` puts the same facts in the ``oracle`` prompt
and asks a chat model (falling back to the template answer if the model fails).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

from vlnverse.errors import LLMError
from vlnverse.llm import LLMClient
from vlnverse.scene.scene_graph import relative_direction, scene_graph_summary
from vlnverse.tasks.context import SceneContext
from vlnverse.tasks.episode import Episode
from vlnverse.tasks.grounding import is_refusal
from vlnverse.tasks.pathdesc import describe_path
from vlnverse.tasks.promptset import PromptSet
from vlnverse.tasks.targets import describe_target

log = logging.getLogger(__name__)

MAX_STEPS = 2  # route steps in a template answer
ARRIVED = 1.0  # metres: "you are there"


@dataclass(frozen=True)
class OracleFacts:
    """What the oracle knows when asked: route steps from the pose and the goal's description."""

    route: list[str]
    goal: str
    distance: float
    direction: str


class TemplateOracle:
    """Rule-based oracle over the scene graph and the shortest path.

    Args:
        context: The episode's scene.
        episode: The episode (its current goal is ``episode.goals[goal_index]``).
    """

    def __init__(self, context: SceneContext, episode: Episode) -> None:
        self.context = context
        self.episode = episode

    def facts(self, pose: tuple[float, float, float, float], goal_index: int = 0) -> OracleFacts:
        """Route and goal facts for an agent at ``pose`` = (x, y, z, yaw)."""
        ctx = self.context
        goal = self.episode.goals[min(goal_index, len(self.episode.goals) - 1)]
        x, y, z, yaw = pose
        path = ctx.navigator.shortest_path((x, y, z), goal.position)
        route: list[str] = []
        if path.reachable and path.length > ARRIVED:
            facts = describe_path(ctx, path.points, yaw)
            for leg in facts.legs:
                step = {"straight": "go straight", "around": "turn around"}.get(leg.turn, f"turn {leg.turn}")
                step += f" and walk about {max(1, round(leg.length))} m"
                if leg.rooms_entered:
                    step += " into the " + ", then the ".join(ctx.room_label(r) for r in leg.rooms_entered)
                if leg.landmark:
                    step += f", passing the {ctx.objects[leg.landmark[0]].phrase} on your {leg.landmark[1]}"
                route.append(step)
        target = goal.object_id if goal.object_id in ctx.objects else None
        if target is not None:
            description = describe_target(ctx, target)
            room = ctx.room_label(ctx.objects[target].room_id)
            text = f"the {ctx.objects[target].phrase}" + (description.relation_text if description else "")
            goal_text = f"{text} in the {room}"
            point = ctx.objects[target].center
        else:
            goal_text = f"a spot in the {ctx.room_label(goal.room_id)}"
            point = np.asarray(goal.position)
        distance = path.length if path.reachable else math.inf
        direction = relative_direction((x, y, yaw), point)
        return OracleFacts(route=route, goal=goal_text, distance=distance, direction=direction)

    def answer(self, question: str, pose: tuple[float, float, float, float], goal_index: int = 0) -> str:
        """The template answer to ``question`` (the route and the goal, whatever was asked)."""
        facts = self.facts(pose, goal_index)
        return self._render(facts)

    @staticmethod
    def _render(facts: OracleFacts) -> str:
        if not math.isfinite(facts.distance):
            return f"I cannot see a way from here. You are looking for {facts.goal}."
        where = {"ahead": "ahead of you", "behind": "behind you", "left": "to your left",
                 "right": "to your right"}[facts.direction]
        if not facts.route:
            return f"You are there: {facts.goal} is {where}."
        steps = "; then ".join(facts.route[:MAX_STEPS])
        return f"{steps[:1].upper()}{steps[1:]}. You are looking for {facts.goal}, {where}, about {round(facts.distance)} m away."


class LLMOracle(TemplateOracle):
    """An oracle that phrases its privileged facts through a chat model.

    Args:
        context, episode: As for :class:`TemplateOracle`.
        llm: The chat model.
        prompts: Prompt set holding the ``oracle`` template.
    """

    def __init__(self, context: SceneContext, episode: Episode, llm: LLMClient, prompts: PromptSet | None = None,
                 *, max_tokens: int = 120) -> None:
        super().__init__(context, episode)
        self.llm = llm
        self.prompts = prompts or PromptSet.load()
        self.max_tokens = max_tokens
        self.fallbacks = 0
        self._summary = scene_graph_summary(context.graph)

    def answer(self, question: str, pose: tuple[float, float, float, float], goal_index: int = 0) -> str:
        facts = self.facts(pose, goal_index)
        route = "\n".join(f"{i + 1}. {s}" for i, s in enumerate(facts.route)) or "You are at the goal."
        prompt = self.prompts.render("oracle", scene_summary=self._summary, instruction=self.episode.instruction.text,
                                     goal=facts.goal, route=route, question=question.strip() or "Where should I go?")
        try:
            text = self.llm.complete(prompt, temperature=0.0, max_tokens=self.max_tokens, seed=0).text.strip()
        except LLMError as exc:
            log.warning("oracle model failed (%s); answering from the template", exc)
            text = ""
        if not text or is_refusal(text):
            self.fallbacks += 1
            return self._render(facts)
        return text
