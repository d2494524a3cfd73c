"""Value types of the LLM client: messages, generation parameters, requests, responses.

A request is identified by a stable hash of (model, messages, parameters); images enter
the hash through their SHA-256, so transcripts and cache keys never hold image bytes.
"""

from __future__ import annotations

import hashlib
import json
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from vlnverse.errors import ConfigError
from vlnverse.llm.images import ImagePart

ROLES = ("system", "user", "assistant")
RESPONSE_FORMATS = ("text", "json")
TOOL_CHOICES = ("auto", "required", "none")
_OPTIONAL_DEFAULTS: dict[str, Any] = {"json_schema": None, "tools": [], "tool_choice": "auto"}


def _plain_json(value: Any, what: str) -> Any:
    """``value`` as plain JSON data (a deep copy), or a ConfigError naming ``what``."""
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{what} must be JSON data: {exc}") from None

Part = str | ImagePart
ImageLike = ImagePart | np.ndarray | bytes


def hash_described(described: Mapping[str, Any]) -> str:
    """SHA-256 of a request's JSON form (canonical: sorted keys, no spaces, UTF-8)."""
    canonical = json.dumps(described, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ChatMessage:
    """One chat turn: a role and an ordered sequence of text and image parts.

    Attributes:
        role: ``system``, ``user`` or ``assistant``.
        parts: text strings and :class:`ImagePart` images, in order.
    """

    role: str
    parts: tuple[Part, ...]

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ConfigError(f"ChatMessage.role must be one of {ROLES}, got {self.role!r}")
        parts = (self.parts,) if isinstance(self.parts, str | ImagePart) else tuple(self.parts)
        for part in parts:
            if not isinstance(part, str | ImagePart):
                raise ConfigError(
                    f"ChatMessage parts must be str or ImagePart, got {type(part).__name__}"
                )
        if self.role != "user" and any(isinstance(p, ImagePart) for p in parts):
            raise ConfigError(f"only user messages may carry images (got a {self.role} message)")
        object.__setattr__(self, "parts", parts)

    @classmethod
    def system(cls, text: str) -> ChatMessage:
        return cls("system", (text,))

    @classmethod
    def user(cls, text: str, images: Iterable[ImageLike] = ()) -> ChatMessage:
        """A user turn: ``text`` followed by ``images`` (arrays, PNG/JPEG bytes or parts)."""
        return cls("user", (text, *(ImagePart.coerce(image) for image in images)))

    @classmethod
    def assistant(cls, text: str) -> ChatMessage:
        return cls("assistant", (text,))

    @classmethod
    def coerce(cls, message: ChatMessage | Mapping[str, Any]) -> ChatMessage:
        """Accept a :class:`ChatMessage` or ``{"role", "content", "images"?}`` mapping."""
        if isinstance(message, ChatMessage):
            return message
        if not isinstance(message, Mapping):
            raise ConfigError(
                f"a message must be a ChatMessage or a mapping, got {type(message).__name__}"
            )
        unknown = sorted(set(message) - {"role", "content", "images"})
        if unknown or "role" not in message or "content" not in message:
            raise ConfigError(
                "a message mapping needs 'role' and 'content' (optional 'images'); "
                f"got keys {sorted(message)}"
            )
        content = message["content"]
        parts = [content] if isinstance(content, str) else list(content)
        parts += [ImagePart.coerce(image) for image in message.get("images", ())]
        return cls(
            message["role"], tuple(p if isinstance(p, str) else ImagePart.coerce(p) for p in parts)
        )

    @property
    def text(self) -> str:
        """The message's text parts joined by newlines."""
        return "\n".join(p for p in self.parts if isinstance(p, str))

    @property
    def images(self) -> tuple[ImagePart, ...]:
        return tuple(p for p in self.parts if isinstance(p, ImagePart))

    def describe(self) -> dict[str, Any]:
        """JSON form for hashes and transcripts (images as digests)."""
        content = [
            {"type": "text", "text": p} if isinstance(p, str) else p.describe() for p in self.parts
        ]
        return {"role": self.role, "content": content}


@dataclass(frozen=True)
class GenerationParams:
    """Sampling parameters of one completion.

    Attributes:
        temperature: sampling temperature; 0 asks for greedy decoding.
        max_tokens: cap on generated tokens (None: the backend's default).
        seed: sampling seed, where the backend honours one.
        response_format: ``text`` or ``json`` (ask the backend for a JSON object).
        top_p: nucleus sampling mass (None: backend default).
        n: number of alternative completions (``LLMResponse.choices``).
        stop: stop sequences.
        json_schema: a JSON schema the answer must follow (sent as the API's structured
            output; see :mod:`vlnverse.llm.structured` for servers without it).
        tools: tools the model may call, ``{"name", "description", "parameters"}``
            mappings (``parameters`` is a JSON schema); the answer's ``tool_calls``.
        tool_choice: ``auto`` (the model decides), ``required`` or ``none``.
    """

    temperature: float = 0.0
    max_tokens: int | None = None
    seed: int | None = None
    response_format: str = "text"
    top_p: float | None = None
    n: int = 1
    stop: tuple[str, ...] = ()
    json_schema: Mapping[str, Any] | None = None
    tools: tuple[Mapping[str, Any], ...] = ()
    tool_choice: str = "auto"

    def __post_init__(self) -> None:
        if not 0.0 <= float(self.temperature) <= 2.0:
            raise ConfigError(f"temperature must be in [0, 2], got {self.temperature}")
        object.__setattr__(self, "temperature", float(self.temperature))
        if self.max_tokens is not None and (
            not isinstance(self.max_tokens, int) or self.max_tokens < 1
        ):
            raise ConfigError(f"max_tokens must be a positive int or None, got {self.max_tokens!r}")
        if self.seed is not None and not isinstance(self.seed, int):
            raise ConfigError(f"seed must be an int or None, got {self.seed!r}")
        if self.response_format not in RESPONSE_FORMATS:
            raise ConfigError(
                f"response_format must be one of {RESPONSE_FORMATS}, got {self.response_format!r}"
            )
        if self.top_p is not None and not 0.0 < float(self.top_p) <= 1.0:
            raise ConfigError(f"top_p must be in (0, 1], got {self.top_p}")
        if not isinstance(self.n, int) or self.n < 1:
            raise ConfigError(f"n must be a positive int, got {self.n!r}")
        stop = (self.stop,) if isinstance(self.stop, str) else tuple(self.stop)
        object.__setattr__(self, "stop", stop)
        if self.json_schema is not None:
            if not isinstance(self.json_schema, Mapping):
                raise ConfigError(f"json_schema must be a mapping, got {type(self.json_schema).__name__}")
            object.__setattr__(self, "json_schema", _plain_json(self.json_schema, "json_schema"))
        tools = tuple(_plain_json(t, "a tool") for t in self.tools)
        for tool in tools:
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str) or not tool["name"]:
                raise ConfigError(f"a tool needs a non-empty 'name', got {tool!r:.120}")
            unknown = sorted(set(tool) - {"name", "description", "parameters"})
            if unknown:
                raise ConfigError(f"tool {tool['name']!r}: unknown key(s) {', '.join(unknown)}")
        if len({t["name"] for t in tools}) != len(tools):
            raise ConfigError("tool names must be unique")
        object.__setattr__(self, "tools", tools)
        if self.tool_choice not in TOOL_CHOICES:
            raise ConfigError(f"tool_choice must be one of {TOOL_CHOICES}, got {self.tool_choice!r}")

    @classmethod
    def from_kwargs(cls, **params: Any) -> GenerationParams:
        """Build from keyword arguments, naming any unknown one."""
        valid = {f.name for f in fields(cls)}
        unknown = sorted(set(params) - valid)
        if unknown:
            raise ConfigError(
                f"unknown generation parameter(s) {', '.join(unknown)}; valid: {', '.join(sorted(valid))}"
            )
        return cls(**params)

    def describe(self) -> dict[str, Any]:
        """JSON form (every field, so a hash changes when any parameter does; the
        structured-output and tool fields only when set, so older hashes stay valid)."""
        out = {
            f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v)
            for f in fields(self)
        }
        for name, default in _OPTIONAL_DEFAULTS.items():
            if out[name] == default:
                del out[name]
        return out


@dataclass(frozen=True)
class LLMRequest:
    """A complete request: model, messages and parameters; ``key`` is its stable hash."""

    model: str
    messages: tuple[ChatMessage, ...]
    params: GenerationParams = GenerationParams()
    key: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        if not self.model:
            raise ConfigError("LLMRequest.model must be a non-empty string")
        messages = tuple(ChatMessage.coerce(m) for m in self.messages)
        if not messages:
            raise ConfigError("an LLM request needs at least one message")
        object.__setattr__(self, "messages", messages)
        object.__setattr__(self, "key", hash_described(self.describe()))

    @classmethod
    def build(
        cls,
        model: str,
        messages: str | ChatMessage | Sequence[ChatMessage | Mapping[str, Any]],
        **params: Any,
    ) -> LLMRequest:
        """Build from a prompt string, one message or a message list, plus parameters."""
        if isinstance(messages, str):
            messages = [ChatMessage.user(messages)]
        elif isinstance(messages, ChatMessage | Mapping):
            messages = [messages]
        return cls(model, tuple(messages), GenerationParams.from_kwargs(**params))

    def describe(self) -> dict[str, Any]:
        """JSON form: what the hash covers and what transcripts store."""
        return {
            "model": self.model,
            "messages": [m.describe() for m in self.messages],
            "params": self.params.describe(),
        }


@dataclass(frozen=True)
class Usage:
    """Token counts of one completion (all choices): non-negative integers.

    ``estimated`` is True when the server reported none and they were estimated
    (:mod:`vlnverse.llm.usage`).
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False

    def __post_init__(self) -> None:
        for name in ("prompt_tokens", "completion_tokens"):
            value = getattr(self, name)
            try:
                count = operator.index(value) if not isinstance(value, bool) else -1
            except TypeError:
                count = -1
            if count < 0:
                raise ConfigError(f"Usage.{name} must be a non-negative integer, got {value!r}")
            object.__setattr__(self, name, int(count))
        object.__setattr__(self, "estimated", bool(self.estimated))

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class ToolCall:
    """One tool call of an answer: the tool's name and its arguments (a JSON object)."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    id: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "arguments": dict(self.arguments), "id": self.id}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCall:
        if not isinstance(data, Mapping) or not isinstance(data.get("name"), str):
            raise ConfigError(f"a stored tool call needs a string 'name', got {data!r:.200}")
        return cls(data["name"], dict(data.get("arguments") or {}), str(data.get("id", "")))


@dataclass(frozen=True)
class LLMResponse:
    """The answer to one request.

    Attributes:
        text: the first choice's text.
        model: the model that answered (as the backend names it).
        usage: token counts.
        cost_usd: price of the call from the price table; None when the model is not in it.
        cached: True when served from the on-disk cache rather than the backend.
        choices: every choice's text (``choices[0] == text``).
        finish_reason: why the first choice stopped (``stop``, ``length``, ...).
        key: hash of the request that produced it.
        tool_calls: the first choice's tool calls (native or emulated).
    """

    text: str
    model: str
    usage: Usage = Usage()
    cost_usd: float | None = None
    cached: bool = False
    choices: tuple[str, ...] = ()
    finish_reason: str | None = None
    key: str = ""
    tool_calls: tuple[ToolCall, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "choices", tuple(self.choices) or (self.text,))
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        if self.choices[0] != self.text:
            raise ConfigError("LLMResponse.text must equal choices[0]")

    def to_dict(self) -> dict[str, Any]:
        """JSON form for transcripts and the cache."""
        out = {
            "text": self.text,
            "model": self.model,
            "usage": {
                "prompt_tokens": self.usage.prompt_tokens,
                "completion_tokens": self.usage.completion_tokens,
                **({"estimated": True} if self.usage.estimated else {}),
            },
            "cost_usd": self.cost_usd,
            "choices": list(self.choices),
            "finish_reason": self.finish_reason,
            "key": self.key,
        }
        if self.tool_calls:
            out["tool_calls"] = [call.to_dict() for call in self.tool_calls]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, cached: bool = False) -> LLMResponse:
        """Inverse of :meth:`to_dict`; only ``text`` is required (hand-written transcripts)."""
        if not isinstance(data, Mapping) or not isinstance(data.get("text"), str):
            raise ConfigError(f"a stored response needs a string 'text', got {data!r:.200}")
        usage = data.get("usage") or {}
        return cls(
            text=data["text"],
            model=str(data.get("model", "")),
            usage=Usage(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0),
                        bool(usage.get("estimated", False))),
            cost_usd=data.get("cost_usd"),
            cached=cached,
            choices=tuple(data.get("choices") or (data["text"],)),
            finish_reason=data.get("finish_reason"),
            key=str(data.get("key", "")),
            tool_calls=tuple(ToolCall.from_dict(c) for c in data.get("tool_calls") or ()),
        )
