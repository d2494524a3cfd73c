"""``map_history``: a MapGPT-style agent whose memory is a topological map and a plan.

Each prompt carries the places visited so far (the trajectory), the map of connections
between visited and observed places, which unvisited places were seen and from where,
and the model's previous plan; the model answers with a new plan and the action, and
each candidate says which place it leads to (Chen et al., MapGPT; VLNVerse §5.3–5.4).
As MapGPT: STOP is listed first and not offered before step 3, the history covers the
whole episode, and in ``vlm`` perception the views through which unvisited places were
seen go along as supplementary images (``supplementary_images``, most recent first).
``map_history_cot`` asks for an explicit ``thought`` first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from vlnverse.agents.base import EpisodeState, LLMWaypointAgent, StepView
from vlnverse.agents.config import MapHistoryConfig
from vlnverse.agents.parsing import Decision
from vlnverse.agents.prompts import Prompt, history_text
from vlnverse.agents.topomap import TopoMap
from vlnverse.eval.agent import EpisodeInfo

SYSTEM_PROMPT = """\
You are a robot navigating an indoor home by following a person's instruction.
You keep a map of places: places you have visited and places you have observed but not
visited, with the connections between them. At each step you are told the instruction,
your history, your trajectory of visited places, the map, what you perceive now, your
previous plan and the candidate places you can move to (each with a letter id, a
direction relative to where you face, a distance and the map place it leads to).
Make a new plan (which parts of the instruction are done, where to go next, when to
stop), then choose one candidate id, STOP at the place the instruction describes, or
ASK the guide a question when that option is offered."""

PLAN_FIELD = ("new_planning", "your updated plan for the rest of the route")


@dataclass
class MapState(EpisodeState):
    """Episode memory of the map agent: the map, the current place, the seen-from notes."""

    topo: TopoMap = field(default_factory=TopoMap)
    here: int = 0
    seen_from: dict[int, str] = field(default_factory=dict)
    leads_to: dict[str, int] = field(default_factory=dict)
    place_images: dict[int, np.ndarray] = field(default_factory=dict)  # latest sighting last


class MapHistoryAgent(LLMWaypointAgent):
    """MapGPT-style map-history agent (see the module docs)."""

    config_class = MapHistoryConfig
    name = "map_history"
    system_prompt = SYSTEM_PROMPT
    stop_first = True

    def new_state(self, episode: EpisodeInfo) -> MapState:
        return MapState(episode, topo=TopoMap(self.config.place_merge_distance))

    def _update_map(self, view: StepView) -> None:
        state = self.state
        state.here = state.topo.visit(view.pose[:2])
        state.leads_to = {}
        for candidate in view.candidates:
            place = state.topo.place_at(view.world(candidate))
            if place == state.here:
                continue
            state.topo.connect(state.here, place)
            state.leads_to[candidate.id] = place
            if place not in state.topo.visited:
                state.seen_from[place] = f"seen from Place {state.here} ({candidate.phrase})"
                if view.panorama.rgb is not None:
                    state.place_images.pop(place, None)
                    state.place_images[place] = view.panorama.rgb[candidate.view]

    def build_prompt(self, view: StepView) -> Prompt:
        self._update_map(view)
        state = self.state
        prompt = Prompt()
        prompt.section("Instruction", state.instruction(view.instruction))
        prompt.section("History", history_text(state.history, self.config.history_window), cut="oldest")
        prompt.section("Trajectory", "Place " + " ".join(str(p) for p in state.topo.trajectory)
                       + f" (you are at Place {state.here})", cut="shorten_start")
        prompt.section("Map", state.topo.describe() or "(nothing mapped yet)", cut="oldest")
        notes = [f"Place {p} (observed, unvisited): {state.seen_from[p]}"
                 for p in state.topo.unvisited() if p in state.seen_from]
        prompt.section("Supplementary info", "\n".join(notes), cut="oldest")
        unvisited = [p for p in reversed(state.place_images) if p not in state.topo.visited]
        for place in unvisited[:self.config.supplementary_images]:
            prompt.image(f"place {place} (observed, unvisited)", state.place_images[place])
        prompt.section("Previous planning", state.memory or "(none yet)", cut="shorten")
        self.observation_sections(prompt, view)
        return prompt

    def candidate_notes(self, view: StepView) -> Mapping[str, str]:
        state = self.state
        return {cid: f"-> Place {place} ({'visited' if place in state.topo.visited else 'unvisited'})"
                for cid, place in state.leads_to.items()}

    def reply_fields(self, view: StepView) -> Mapping[str, str]:
        return self.common_fields(view, PLAN_FIELD)

    def remember(self, view: StepView, decision: Decision | None) -> None:
        if decision is not None and decision.fields.get("new_planning", "").strip():
            self.state.memory = self.capped(decision.fields["new_planning"].strip())


class MapHistoryCoTAgent(MapHistoryAgent):
    """``map_history`` with an explicit reasoning field before the action."""

    name = "map_history_cot"
    cot = True
