"""Structured answers and tool calls on any client, native where the server has them.

- :func:`complete_structured`: a JSON answer that follows a JSON schema. A client whose
  server takes the schema (``supports_json_schema``: OpenAI structured outputs, vLLM's
  guided decoding behind the same API) gets it as ``response_format``; any other (or one
  whose server rejects it) gets the schema in the prompt and JSON mode, and where JSON
  mode is rejected too, the prompt alone (the client drops ``response_format``). Either way the answer is validated, and a
  failing one gets a bounded number of repair turns (the reply and what is wrong with
  it, then the request again).
- :func:`complete_tools`: OpenAI-style tool calling. Clients with ``supports_tools`` send
  ``tools``; the others get a prompt that lists the tools and asks for
  ``{"tool": NAME, "arguments": {...}}``, parsed back into the same
  :class:`~vlnverse.llm.types.ToolCall` values, so an agent (ARNA) is written once.
  Arguments are validated against each tool's ``parameters`` schema, with the same
  bounded repair. A server that rejects ``tools`` (or answers ``tool_choice: required``
  with no call: it ignores them) gets the emulation from then on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from vlnverse.errors import LLMAnswerError, LLMSchemaError, LLMUnsupportedFeature
from vlnverse.llm.context import REPAIR_ECHO_TOKENS, clip, repair_echo
from vlnverse.llm.jsonanswer import extract_json
from vlnverse.llm.schema import check_schema, schema_errors
from vlnverse.llm.types import ChatMessage, LLMRequest, LLMResponse, ToolCall

DEFAULT_REPAIRS = 1


def schema_instruction(schema: Mapping[str, Any]) -> str:
    """The prompt text that asks for a JSON answer following ``schema``."""
    return ("Reply with one JSON object only (no prose, no code fence) that follows this JSON "
            f"schema:\n{json.dumps(schema, sort_keys=True)}")


def tool_instruction(tools: Sequence[Mapping[str, Any]], choice: str) -> str:
    """The prompt text that emulates tool calling for ``tools``."""
    lines = ["You can call these tools:"]
    for tool in tools:
        parameters = json.dumps(tool.get("parameters", {"type": "object"}), sort_keys=True)
        lines.append(f"- {tool['name']}: {tool.get('description', '')} Arguments (JSON schema): {parameters}")
    call = 'reply with only a JSON object {"tool": "<name>", "arguments": {...}}'
    lines.append(f"To call a tool, {call}." + ("" if choice == "required" else
                                               " To answer without a tool, reply in plain text."))
    if choice == "required":
        lines.append("You must call one of the tools.")
    return "\n".join(lines)


def _with_instruction(messages: Sequence[ChatMessage], text: str) -> list[ChatMessage]:
    """``messages`` with ``text`` added to the system message (one is made if none)."""
    out = list(messages)
    if out and out[0].role == "system":
        out[0] = ChatMessage.system(f"{out[0].text}\n\n{text}")
        return out
    return [ChatMessage.system(text), *out]


def _repair(messages: list[ChatMessage], reply: str, problem: str) -> list[ChatMessage]:
    """``messages`` plus the unusable reply and a turn saying what is wrong with it."""
    return [*messages, ChatMessage.assistant(repair_echo(reply)),
            ChatMessage.user(f"Your reply could not be used: {clip(problem, REPAIR_ECHO_TOKENS)}. Reply again, following the "
                             "required format exactly.")]


def _messages(client: Any, messages: Any) -> list[ChatMessage]:
    return list(LLMRequest.build(client.model, messages).messages)


def complete_structured(client: Any, messages: Any, schema: Mapping[str, Any], *,
                        repairs: int = DEFAULT_REPAIRS, **params: Any) -> tuple[Any, LLMResponse]:
    """A JSON answer following ``schema``; returns ``(value, last response)``.

    Raises:
        LLMSchemaError: still no valid answer after ``repairs`` repair turns (the message
            says what was wrong with the last one).
    """
    check_schema(schema)
    base = _messages(client, messages)

    def emulated(extra: list[ChatMessage]) -> LLMResponse:
        convo = [*_with_instruction(base, schema_instruction(schema)), *extra]
        response = client.complete(convo, **{**params, "response_format": "json"})
        json_mode = getattr(client, "supports_json_object", None) is not False
        client.note_feature("structured", "json_object+schema_in_prompt" if json_mode else "schema_in_prompt")
        return response

    def native(extra: list[ChatMessage]) -> LLMResponse:
        try:
            response = client.complete([*base, *extra], **{**params, "json_schema": dict(schema)})
        except LLMUnsupportedFeature as exc:
            if exc.feature not in ("json_schema", ""):
                raise  # images or another feature: not this fallback's business
            return emulated(extra)
        client.note_feature("structured", "json_schema")
        return response

    ask = native if getattr(client, "supports_json_schema", False) else emulated
    extra: list[ChatMessage] = []
    for attempt in range(repairs + 1):
        response = ask(extra)
        try:
            value = extract_json(response.text)
            problems = schema_errors(value, schema)
        except LLMAnswerError as exc:
            problems = [str(exc)]
        if not problems:
            return value, response
        if attempt == repairs:
            raise LLMSchemaError(f"no answer following the schema after {repairs} repair(s): "
                                 + "; ".join(problems))
        extra = _repair(extra, response.text, "; ".join(problems))
    raise AssertionError("unreachable")


def parse_emulated_call(text: str, tools: Sequence[Mapping[str, Any]]) -> ToolCall | None:
    """The tool call in an emulated reply, or None when the reply is plain text.

    Raises:
        LLMAnswerError: the reply is a ``{"tool": ...}`` object naming no known tool.
    """
    try:
        value = extract_json(text)
    except LLMAnswerError:
        return None
    if not isinstance(value, dict) or "tool" not in value:
        return None
    names = [t["name"] for t in tools]
    if value["tool"] not in names:
        raise LLMSchemaError(f"unknown tool {value['tool']!r}; the tools are {', '.join(names)}")
    arguments = value.get("arguments", {})
    if not isinstance(arguments, dict):
        raise LLMSchemaError(f"the arguments of {value['tool']} must be a JSON object")
    return ToolCall(value["tool"], arguments, "emulated_0")


def _call_problems(response: LLMResponse, tools: Sequence[Mapping[str, Any]], choice: str) -> list[str]:
    by_name = {t["name"]: t for t in tools}
    problems = []
    for call in response.tool_calls:
        if call.name not in by_name:
            problems.append(f"unknown tool {call.name!r}")
            continue
        schema = by_name[call.name].get("parameters")
        if schema:
            problems += [f"{call.name} {p}" for p in schema_errors(dict(call.arguments), schema)]
    if choice == "required" and not response.tool_calls:
        problems.append("a tool call is required")
    return problems


def complete_tools(client: Any, messages: Any, tools: Sequence[Mapping[str, Any]], *,
                   tool_choice: str = "auto", repairs: int = DEFAULT_REPAIRS,
                   **params: Any) -> LLMResponse:
    """An answer that may call ``tools`` (its ``tool_calls``; ``text`` holds any prose).

    Raises:
        LLMSchemaError: the calls are still invalid after ``repairs`` repair turns.
    """
    for tool in tools:
        check_schema(tool.get("parameters", {}), f"tool {tool.get('name')} parameters")
    base = _messages(client, messages)

    def emulated(extra: list[ChatMessage]) -> LLMResponse:
        convo = [*_with_instruction(base, tool_instruction(tools, tool_choice)), *extra]
        response = client.complete(convo, **params)
        client.note_feature("tools", "emulated")
        call = parse_emulated_call(response.text, tools)
        return _replace_calls(response, (call,) if call else ())

    def native(extra: list[ChatMessage]) -> LLMResponse:
        try:
            response = client.complete([*base, *extra], **params, tools=tuple(tools), tool_choice=tool_choice)
        except LLMUnsupportedFeature as exc:
            if exc.feature not in ("tools", ""):
                raise
            return emulated(extra)
        if tool_choice == "required" and not response.tool_calls:
            client.supports_tools = False  # a server that ignores tools: "required" got no call
            return emulated(extra)
        client.note_feature("tools", "native")
        return response

    ask = native if getattr(client, "supports_tools", False) else emulated
    extra: list[ChatMessage] = []
    for attempt in range(repairs + 1):
        response = None
        try:
            response = ask(extra)
            problems = _call_problems(response, tools, tool_choice)
        except LLMAnswerError as exc:
            problems = [str(exc)]
        if not problems:
            return response
        if attempt == repairs:
            raise LLMSchemaError(f"no valid tool call after {repairs} repair(s): " + "; ".join(problems))
        shown = "" if response is None else (
            response.text or json.dumps([c.to_dict() for c in response.tool_calls]))
        extra = _repair(extra, shown, "; ".join(problems))
    raise AssertionError("unreachable")


def _replace_calls(response: LLMResponse, calls: tuple[ToolCall, ...]) -> LLMResponse:
    import dataclasses

    return dataclasses.replace(response, tool_calls=calls)
