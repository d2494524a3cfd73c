"""Feature negotiation by behaviour: reading a server's rejection of a request.

OpenAI-compatible servers reject a parameter they do not take in many ways: a 400 or 422
with an OpenAI-style error object, a 422 whose plain-text body is a deserializer's
message, even a 500 whose body is a validation error or says "only one completion
choice is allowed". :func:`read_rejection` reads such an answer (any status) and says
whether it rejects the request itself and, if so, which feature of the request it names.
A rejection is never retried as a server fault; the client falls back instead, in the
fixed order of :data:`FALLBACKS`, and remembers it. A 5xx whose body reads like a fault
(no sign of an invalid request) is not a rejection and keeps the retry policy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

FALLBACKS = {
    "json_schema": "json_object with the schema in the prompt, then the schema in the prompt alone",
    "json_object": "the prompt alone asks for JSON",
    "tools": "tool calling emulated by prompt",
    "n": "single requests with seeds seed, seed+1, ...",
    "images": "none: vlm perception is refused, the DVS describer is skipped",
    "max_tokens": "max_completion_tokens, then no cap",
    "max_completion_tokens": "no cap",
    "seed": "no seed",
    "temperature": "the server's default temperature",
    "top_p": "the server's default top_p",
}
"""Each negotiable feature and what replaces it when a server rejects it."""

CALLER_FEATURES = ("json_schema", "tools", "n", "images")
"""Features whose fallback changes what the caller asks (the prompt, the request count):
the client raises :class:`~vlnverse.errors.LLMUnsupportedFeature` for these; the others
it rewrites itself and resends."""

_NOT_REJECTIONS = frozenset({401, 403, 408, 409, 429})
_INVALID = re.compile(
    r"validation error|literal_error|invalid[_ ]request|invalid (?:type|value|parameter|argument)|"
    r"not supported|unsupported|not allowed|not permitted|does not support|unknown (?:field|parameter|"
    r"argument|variant|key|part)|unrecognized|input should be|must be|failed to deserialize|missing field|"
    r"not a multimodal|requires? --|only one completion choice|expected (?:one of|`|')", re.IGNORECASE)
_NAMES = {
    "images": r"image|multimodal|vision|mmproj",
    "tools": r"tool|function[_ ]call",
    "json_schema": r"response_format|json_schema|structured output",
    "json_object": r"response_format|json_object|json mode",
    "n": r"completion choice|\bn\s*(?:must|should|>|!=|=|is|can)\b|['\"`(]n['\"`,)]|\bbest_of\b",
    "max_tokens": r"\bmax_tokens\b",
    "max_completion_tokens": r"\bmax_completion_tokens\b",
    "seed": r"\bseed\b",
    "temperature": r"\btemperature\b",
    "top_p": r"\btop_p\b",
}
_ORDER = tuple(_NAMES)


@dataclass(frozen=True)
class Rejection:
    """A server's answer that rejects the request itself.

    Attributes:
        status: the HTTP status it came with.
        message: the server's message (short, one line).
        feature: the feature of the request it names (a key of :data:`FALLBACKS`), or
            None when it names none (the request is rejected as a whole).
    """

    status: int
    message: str
    feature: str | None


def sent_features(kwargs: Mapping[str, Any]) -> list[str]:
    """The negotiable features a chat-completions request body uses, in :data:`_ORDER`."""
    found = set()
    for message in kwargs.get("messages", ()):
        content = message.get("content")
        if isinstance(content, list) and any(p.get("type") == "image_url" for p in content):
            found.add("images")
    if kwargs.get("tools"):
        found.add("tools")
    kind = (kwargs.get("response_format") or {}).get("type")
    if kind in ("json_schema", "json_object"):
        found.add(kind)
    if kwargs.get("n", 1) != 1:
        found.add("n")
    found.update(k for k in ("max_tokens", "max_completion_tokens", "seed", "temperature", "top_p") if k in kwargs)
    return [f for f in _ORDER if f in found]


def _message(body: str) -> tuple[str, str | None]:
    """The error message in a body (OpenAI's ``{"error": {...}}``, vLLM's flat object, a
    string ``error``, or plain text) and the ``param`` it names, if any."""
    try:
        data = json.loads(body)
    except ValueError:
        return body, None
    error = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(error, dict):
        param = error.get("param")
        return str(error.get("message", body)), param if isinstance(param, str) else None
    return str(error), None


def read_rejection(status: int, body: str, kwargs: Mapping[str, Any]) -> Rejection | None:
    """What an error answer says about the request ``kwargs`` (the JSON body sent).

    Returns None for answers that are not about the request: authentication, rate
    limits, timeouts (401/403/408/409/429), and 5xx answers that do not read as an
    invalid request (real faults, retried). Any other 4xx is a rejection; a 5xx is one
    when its body says the request is invalid or unsupported. The feature is the one the
    error's ``param`` names, else the first sent feature the message names, else (a bare
    400/422 to a request with a JSON schema or tools) that schema or those tools.
    """
    if status in _NOT_REJECTIONS or status < 400:
        return None
    message, param = _message(body)
    text = f"{message} {body}"
    if status >= 500 and not _INVALID.search(text):
        return None
    sent = sent_features(kwargs)
    feature = None
    if param is not None:
        feature = next((f for f in sent if f == param or (param == "response_format" and f.startswith("json_"))
                        or (param == "tool_choice" and f == "tools")), None)
    if feature is None:
        feature = next((f for f in sent if re.search(_NAMES[f], text, re.IGNORECASE)), None)
    if feature is None and status in (400, 422):  # a bare 400/422 to a schema or tools request
        feature = next((f for f in sent if f in ("json_schema", "tools")), None)
    return Rejection(status, " ".join(message.split())[:300], feature)
