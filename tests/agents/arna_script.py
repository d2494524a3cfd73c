"""A scripted stand-in model for ARNA's tests: it answers each kind of request ARNA makes
(structured outputs by their schema title, tool calls by the tools offered, free text)
from a table of handlers, and records what it was asked."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from vlnverse.llm.base import LLMClient
from vlnverse.llm.types import LLMRequest, LLMResponse, ToolCall, Usage

LOOP_PLAN = {"main": [
    {"while": {"not": {"found": "target"}}, "max_iterations": 3, "body": [
        {"step": "explore", "goal": "explore toward unseen space"},
        {"tool": "ObjectInterface", "args": {"information_action": "get_object_IDs_list",
                                             "object_action": "no_such_thing"}, "as": "target"}]},
    {"answer": "report what was found"}]}


def memory_reply() -> dict[str, str]:
    return {"describe_the_findings_from_the_new_observation": "new space", "spatial_analysis": "open",
            "list_of_spaces": "start area", "list_of_entrances": "none", "list_of_critical_findings": "none yet",
            "list_of_important_image_ids": "0", "prior_trajectory": "moved", "updated_description": "a house"}


DEFAULTS: dict[str, Callable[[LLMRequest], Any]] = {
    "text": lambda r: "- The goal is seen by the robot.",
    "HeuristicSelection": lambda r: {"rationale": "explore", "heuristic": 1},
    "AdaptHeuristic": lambda r: {"rationale": "fits", "adapted_heuristic": "explore frontiers until found"},
    "PseudocodeHeuristic": lambda r: {"rationale": "simple", "implementation": ["explore", "check", "answer"]},
    "FunctionCallImplementation": lambda r: {"rationale": "loop", "plan": LOOP_PLAN},
    "NextStep": lambda r: {"rationale": "keep going", "terminal": False, "answer": None},
    "ConditionCheck": lambda r: {"rationale": "not seen yet", "holds": False},
    "InformationSelection": lambda r: {"done": True, "items": []},
    "MemoryUpdate": lambda r: memory_reply(),
    "Perception": lambda r: {"room": "hallway", "objects": []},
    "PerceptionTargets": lambda r: {"objects": ["chair", "sofa"]},
    "tools": lambda r: ("ExploreInterface", {"rationale": "unseen", "strategy": "goto_frontier", "frontier": "A"}),
}


class ARNAScript(LLMClient):
    """Answers natively (structured outputs and tool calls) from ``handlers`` (merged over
    :data:`DEFAULTS`); ``kinds`` counts the requests by kind."""

    supports_json_schema = True
    supports_tools = True

    def __init__(self, handlers: Mapping[str, Callable[[LLMRequest], Any]] | None = None, *,
                 cost: float = 0.001) -> None:
        super().__init__("arna-script")
        self.handlers = {**DEFAULTS, **(handlers or {})}
        self.kinds: Counter = Counter()
        self.requests: list[LLMRequest] = []
        self.cost = cost

    @staticmethod
    def kind(request: LLMRequest) -> str:
        if request.params.tools:
            return "tools"
        if request.params.json_schema is not None:
            return str(request.params.json_schema.get("title"))
        return "text"

    def send(self, request: LLMRequest) -> LLMResponse:
        kind = self.kind(request)
        self.kinds[kind] += 1
        self.requests.append(request)
        answer = self.handlers[kind](request)
        usage = Usage(sum(len(m.text) for m in request.messages) // 4, 20)
        if kind == "tools":
            name, arguments = answer
            return LLMResponse(text="", model=self.model, usage=usage, cost_usd=self.cost, key=request.key,
                               tool_calls=(ToolCall(name, arguments, "call_0"),))
        text = answer if isinstance(answer, str) else json.dumps(answer)
        return LLMResponse(text=text, model=self.model, usage=usage, cost_usd=self.cost, key=request.key)
