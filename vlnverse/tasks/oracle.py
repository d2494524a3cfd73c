"""Dialogue oracles (paper §3.3.1 task 5, §3.5): answers to the agent's questions.

An oracle has privileged access — the scene graph, the goal and the shortest path from
the agent's current pose — and answers in plain language. :class:`TemplateOracle` needs
no model and answers the question asked (:func:`question_kind`):

* ``where`` — "where is the X?": the nearest X by geodesic distance (an object category,
  a synonym, or a room type), its room, relation, direction and distance;
* ``close`` — "am I close?", "how far?": the geodesic distance to the goal, "you are
  there" within :data:`ARRIVED`;
* ``room`` — "which room am I in?": the agent's room and the goal's;
* ``route`` — "which way?", anything else: the next turns, rooms and landmarks of the
  shortest path, and where the goal is.

:class:`LLMOracle` puts the same facts in the ``oracle`` prompt and asks a chat model,
with the agent's current view attached when the model takes images (the paper's oracle
is an MLLM); it falls back to a text-only prompt when the model refuses images and to
the template answer when it fails.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass

import numpy as np

from vlnverse.errors import LLMError
from vlnverse.llm import LLMClient
from vlnverse.scene.scene_graph import relative_direction, scene_graph_summary
from vlnverse.tasks.context import SceneContext
from vlnverse.tasks.episode import Episode
from vlnverse.tasks.grounding import SYNONYMS, is_refusal
from vlnverse.tasks.pathdesc import describe_path
from vlnverse.tasks.promptset import PromptSet
from vlnverse.tasks.targets import describe_target

log = logging.getLogger(__name__)

MAX_STEPS = 2  # route steps in a template answer
ARRIVED = 1.0  # metres: "you are there"
CLOSE = 3.0  # metres: "yes, you are close" (the success distance)
_WHERE = re.compile(r"\bwhere\s+(?:is|are|'s|can\s+i\s+find|do\s+i\s+find)\b|\bwhere's\b|\bfind\s+the\b")
_CLOSE = re.compile(r"\b(close|closer|near|nearby|far|distance|there yet|am i there|arrived|how long)\b")
_ROOM = re.compile(r"\b(which|what)\s+room\b|\bwhere\s+am\s+i\b")


def question_kind(question: str) -> str:
    """``where``, ``room``, ``close`` or ``route`` (see the module docs)."""
    text = (question or "").lower()
    if _ROOM.search(text):
        return "room"
    if _WHERE.search(text):
        return "where"
    if _CLOSE.search(text):
        return "close"
    return "route"


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

    takes_images = False

    def answer(self, question: str, pose: tuple[float, float, float, float], goal_index: int = 0,
               view: np.ndarray | None = None) -> str:
        """The template answer to ``question`` (``view`` is not used)."""
        kind = question_kind(question)
        if kind == "where":
            located = self._locate(question, pose)
            if located is not None:
                return located
        facts = self.facts(pose, goal_index)
        if kind == "room":
            here = self.context.room_at(pose[:3])
            where = f"in the {self.context.room_label(here)}" if here else "between rooms"
            return f"You are {where}. You are looking for {facts.goal}."
        if kind == "close":
            return self._closeness(facts)
        return self._render(facts)

    def _closeness(self, facts: OracleFacts) -> str:
        if not math.isfinite(facts.distance):
            return f"I cannot see a way from here to {facts.goal}."
        where = _WHERE_WORDS[facts.direction]
        if facts.distance <= ARRIVED:
            return f"You are there: {facts.goal} is {where}."
        if facts.distance < CLOSE:
            return f"Yes, you are close: {facts.goal} is {where}, about {_metres(facts.distance)} away."
        return f"Not yet: {facts.goal} is about {_metres(facts.distance)} away along the way, {where}."

    def _locate(self, question: str, pose: tuple[float, float, float, float]) -> str | None:
        """Where the thing the question names is (None when it names nothing known)."""
        ctx = self.context
        words = re.findall(r"[a-z]+", question.lower())
        text = " ".join(SYNONYMS.get(w, w) for w in words)
        x, y, z, yaw = pose
        field = None

        def distance_to(point) -> float:
            nonlocal field
            field = field or ctx.navigator.distance_field([np.asarray((x, y, z))])
            return float(field.distance_at(np.asarray(point)[:2]))

        names = sorted({o.category for o in ctx.objects.values()}, key=len, reverse=True)
        category = next((c for c in names if re.search(rf"\b{re.escape(c.replace('_', ' '))}\b", text)), None)
        if category is not None:
            candidates = [o for o in ctx.objects.values() if o.category == category]
            best = min(candidates, key=lambda o: (distance_to(ctx.navigator.occupancy.nearest_navigable(o.center)),
                                                   o.object_id))
            description = describe_target(ctx, best.object_id)
            relation = description.relation_text if description else ""
            room = f" in the {ctx.room_label(best.room_id)}" if best.room_id else ""
            d = distance_to(ctx.navigator.occupancy.nearest_navigable(best.center))
            where = _WHERE_WORDS[relative_direction((x, y, yaw), best.center)]
            return _cap(f"the {best.phrase}{relation} is{room}, {where}, about {_metres(d)} away.")
        for room_id in ctx.room_ids:
            label = ctx.room_label(room_id)
            if label != "room" and re.search(rf"\b{re.escape(label)}\b", text):
                cells = ctx.room_cells.get(ctx.room_ids.index(room_id))
                if cells is None or not len(cells):
                    continue
                centre = ctx.navigator.occupancy.cell_to_world(cells[len(cells) // 2])
                if ctx.room_at(pose[:3]) == room_id:
                    return f"You are in the {label}."
                where = _WHERE_WORDS[relative_direction((x, y, yaw), centre)]
                return f"The {label} is {where}, about {_metres(distance_to(centre))} away."
        return None

    @staticmethod
    def _render(facts: OracleFacts) -> str:
        if not math.isfinite(facts.distance):
            return f"I cannot see a way from here. You are looking for {facts.goal}."
        where = _WHERE_WORDS[facts.direction]
        if not facts.route:
            return f"You are there: {facts.goal} is {where}."
        steps = "; then ".join(facts.route[:MAX_STEPS])
        return f"{_cap(steps)}. You are looking for {facts.goal}, {where}, about {_metres(facts.distance)} away."


_WHERE_WORDS = {"ahead": "ahead of you", "behind": "behind you", "left": "to your left", "right": "to your right"}


def _metres(distance: float) -> str:
    return f"{max(1, round(distance))} m"


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


class LLMOracle(TemplateOracle):
    """An oracle that phrases its privileged facts through a chat model.

    Args:
        context, episode: As for :class:`TemplateOracle`.
        llm: The chat model.
        prompts: Prompt set holding the ``oracle`` template.
    """

    def __init__(self, context: SceneContext, episode: Episode, llm: LLMClient, prompts: PromptSet | None = None,
                 *, max_tokens: int = 120, vision: bool = True) -> None:
        super().__init__(context, episode)
        self.llm = llm
        self.prompts = prompts or PromptSet.load()
        self.max_tokens = max_tokens
        self.vision = vision
        self.fallbacks = 0
        self._summary = scene_graph_summary(context.graph)

    @property
    def takes_images(self) -> bool:
        """Whether the agent's current view is sent with the question."""
        return self.vision

    def answer(self, question: str, pose: tuple[float, float, float, float], goal_index: int = 0,
               view: np.ndarray | None = None) -> str:
        facts = self.facts(pose, goal_index)
        route = "\n".join(f"{i + 1}. {s}" for i, s in enumerate(facts.route)) or "You are at the goal."
        prompt = self.prompts.render("oracle", scene_summary=self._summary, instruction=self.episode.instruction.text,
                                     goal=facts.goal, route=route, question=question.strip() or "Where should I go?")
        text = ""
        images = [view] if view is not None and self.vision else []
        try:
            text = self._complete(prompt, images)
        except LLMError as exc:
            if images:  # a text-only model: ask without the view, and stop sending it
                log.warning("oracle model refused the view (%s); asking without images from now on", exc)
                self.vision = False
                try:
                    text = self._complete(prompt, [])
                except LLMError as again:
                    log.warning("oracle model failed (%s); answering from the template", again)
            else:
                log.warning("oracle model failed (%s); answering from the template", exc)
        if not text or is_refusal(text):
            self.fallbacks += 1
            return TemplateOracle.answer(self, question, pose, goal_index)
        return text

    def _complete(self, prompt: str, images: list[np.ndarray]) -> str:
        messages = [{"role": "user", "content": prompt, "images": images}]
        return self.llm.complete(messages, temperature=0.0, max_tokens=self.max_tokens, seed=0).text.strip()
