"""ARNA's model calls: structured outputs, free text and tool calls, each metered.

Every call (repairs included) goes through :class:`Meter`: the budgets are checked before
it (:mod:`~vlnverse.agents.arna.budgets`), its tokens are counted into the trace under the
agent's current role and its list price into the episode's cost. A request is fitted to the
model's context window first (:meth:`~vlnverse.agents.base.LLMWaypointAgent.fitted`),
keeping room for its repair turn and, where the server takes no schema or tools natively,
for their text; one that does not fit even so is counted (``too_long``) and its answer is
missing. Every call is kept in the step's record under ``consultations``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from vlnverse.agents.arna import prompts as P
from vlnverse.agents.arna.state import Part
from vlnverse.agents.base import refuse_vlm
from vlnverse.agents.fitting import REPAIR_RESERVE
from vlnverse.agents.prompts import Prompt, describe_messages
from vlnverse.agents.trace import TOO_LONG
from vlnverse.errors import ConfigError, LLMAnswerError, LLMContextExceeded, LLMUnsupportedFeature
from vlnverse.llm.base import WrapperClient
from vlnverse.llm.context import text_bound
from vlnverse.llm.structured import schema_instruction, tool_instruction
from vlnverse.llm.types import ChatMessage, ToolCall


class Meter(WrapperClient):
    """Counts every call (repairs included) of the agent's model into its trace and list cost."""

    def __init__(self, agent: Any) -> None:
        super().__init__(agent.llm)
        self.agent = agent

    def send(self, request: Any) -> Any:
        self.agent.budgets.check()
        try:
            response = self.inner.send(request)
        except LLMUnsupportedFeature as exc:
            if exc.feature == "images":
                raise refuse_vlm(self.agent.name, exc) from None
            raise
        state = self.agent.state
        state.trace.count_call(response, state.role)
        if response.cost_usd is None and not self.agent.config.max_tokens_per_episode:
            raise ConfigError(f"arna: model {response.model!r} has no price, so max_cost_usd cannot hold: give "
                              "its price (VLNVERSE_LLM_PRICES) or set max_tokens_per_episode")
        state.list_cost_usd += float(response.cost_usd or 0.0)
        return response


class ModelCalls(Part):
    """The agent's model, asked for a structured answer, free text or a tool call."""

    def _params(self) -> dict[str, Any]:
        return {"temperature": self.config.temperature, "max_tokens": self.config.max_reply_tokens}

    def _record(self, role: str, messages: Sequence[ChatMessage], reply: Any) -> None:
        self.record.setdefault("consultations", []).append(
            {"purpose": role, "messages": describe_messages(messages), "reply": reply})

    def structured(self, role: str, system: str, prompt: Prompt, model: type[BaseModel], *,
                   on_failure: Callable[[str], None] | None = None) -> Any | None:
        """A structured answer (a validated ``model``), or None after its repair failed
        (counted as a parse failure, then reported to ``on_failure``: by default a
        function-call error)."""
        agent = self.agent
        self.state.role = role
        schema = P.schema(model)
        reserve = REPAIR_RESERVE + (0 if agent.llm.supports_json_schema else text_bound(schema_instruction(schema)))
        messages = agent.fitted(prompt, system, role, reserve=reserve).messages
        try:
            value, _ = Meter(agent).complete_structured(messages, schema, **self._params())
            parsed = model.model_validate(value)
        except LLMContextExceeded as exc:
            self._too_long(role, messages, exc)
            return None
        except (LLMAnswerError, ValidationError) as exc:
            self.state.trace.failures["schema"] += 1
            self._record(role, messages, {"error": str(exc)[:300]})
            (on_failure or agent.budgets.function_call_error)(f"{role}: no answer in its structure ({str(exc)[:200]})")
            return None
        self._record(role, messages, value)
        return parsed

    def text(self, role: str, system: str, prompt: Prompt) -> str:
        """A free-text answer ("" when the request does not fit the context window)."""
        self.state.role = role
        messages = self.agent.fitted(prompt, system, role).messages
        try:
            response = Meter(self.agent).complete(messages, **self._params())
        except LLMContextExceeded as exc:
            self._too_long(role, messages, exc)
            return ""
        self._record(role, messages, response.text)
        return response.text.strip()

    def tool_call(self, role: str, system: str, prompt: Prompt, specs: Sequence[Mapping[str, Any]]) -> ToolCall | None:
        """One call of one of the tools ``specs`` (required), or None when the request does
        not fit the context window or no valid call came after its repair (a function-call
        error)."""
        self.state.role = role
        reserve = REPAIR_RESERVE + text_bound(tool_instruction(specs, "required"))  # the tools are prompt text too
        messages = self.agent.fitted(prompt, system, role, reserve=reserve).messages
        try:
            response = Meter(self.agent).complete_tools(messages, specs, tool_choice="required", **self._params())
        except LLMContextExceeded as exc:
            self._too_long(role, messages, exc)
            return None
        except LLMAnswerError as exc:
            self._record(role, messages, {"error": str(exc)[:300]})
            self.agent.budgets.function_call_error(str(exc))
            return None
        call = response.tool_calls[0]
        self._record(role, messages, call.to_dict())
        return call

    def _too_long(self, role: str, messages: Sequence[ChatMessage], exc: LLMContextExceeded) -> None:
        """A request that does not fit the context window: counted, its answer missing."""
        self.state.trace.failures[TOO_LONG] += 1
        self._record(role, messages, {"error": f"{TOO_LONG}: {str(exc)[:300]}"})
