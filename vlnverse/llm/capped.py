"""A chat completion larger than the client reads: the model's answer, cut at the cap.

A server that sends a reply whole has answered: retrying it would bill the same answer
again. The client keeps the body's first ``max_reply_bytes`` and its last
:data:`TAIL_BYTES` (where the usage object stands) and drops the middle; from those this
module reads the first choice's text (cut at the cap), the answering model and the usage.
The response is marked cut (``finish_reason = "length"``), so traces count it among their
truncations and agents read it as any other reply (an unreadable one is repaired, then
falls back).
"""

from __future__ import annotations

import json
import re
from typing import Any

TAIL_BYTES = 4096
"""Bytes kept from the end of an oversized body (the usage object is there)."""
_CONTENT = re.compile(r'"content"\s*:\s*"')
_STRING = re.compile(r'(?:[^"\\]|\\.)*', re.DOTALL)
_MODEL = re.compile(r'"model"\s*:\s*"((?:[^"\\]|\\.){0,200})"')
_USAGE = re.compile(r'"usage"\s*:\s*(\{[^{}]*\})')
_LONGEST_ESCAPE = 12  # a surrogate pair written as two \\u escapes


def first_content(head: str) -> str:
    """The first ``"content"`` string of a body's head, as far as the head holds it."""
    found = _CONTENT.search(head)
    if found is None:
        return ""
    raw = _STRING.match(head, found.end()).group(0)
    for cut in range(min(_LONGEST_ESCAPE, len(raw)) + 1):  # drop an escape the cut broke
        try:
            text = json.loads(f'"{raw[:len(raw) - cut]}"')
        except ValueError:
            continue
        if not (text and "\ud800" <= text[-1] <= "\udbff"):  # nor a surrogate left without its pair
            return text
    return ""


def model_named(head: str) -> str | None:
    """The ``model`` field of a body's head (None when it is not there)."""
    found = _MODEL.search(head)
    if found is None:
        return None
    try:
        return json.loads(f'"{found.group(1)}"')
    except ValueError:
        return None


def usage_object(tail: str) -> dict[str, Any] | None:
    """The ``usage`` object at a body's end (None when it is not there or not JSON)."""
    found = _USAGE.findall(tail)
    if not found:
        return None
    try:
        value = json.loads(found[-1])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def cap_text(text: str, max_bytes: int) -> str:
    """``text`` cut to at most ``max_bytes`` of UTF-8 (never inside a character)."""
    data = text.encode("utf-8", errors="replace")
    return text if len(data) <= max_bytes else data[:max_bytes].decode("utf-8", errors="ignore")
