"""Extracting and validating JSON answers from model text.

Models wrap JSON in code fences or a sentence of prose; :func:`parse_json_answer` takes
the first fenced block, else the first complete JSON object/array in the text, and
checks its type and required keys. Reading is linear in the text's length (no regex that
backtracks), and JSON nested too deeply to parse counts as no JSON.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

from vlnverse.errors import LLMInvalidJSON, LLMSchemaError

_FENCE = "```"
_FENCE_TAGS = ("jsonc", "json", "JSON")
_DECODER = json.JSONDecoder()
MAX_JSON_STARTS = 200
"""Brackets tried as the start of the answer's JSON (prose full of brackets costs no more)."""


def _excerpt(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _fenced_blocks(text: str) -> Iterator[str]:
    """The bodies of the text's code fences, a ``json`` tag dropped."""
    start = text.find(_FENCE)
    while start != -1:
        end = text.find(_FENCE, start + len(_FENCE))
        if end == -1:
            return
        body = text[start + len(_FENCE):end].lstrip(" \t")
        tag = next((t for t in _FENCE_TAGS if body.startswith(t)), "")
        yield body[len(tag):].strip()
        start = text.find(_FENCE, end + len(_FENCE))


_NOT_JSON = object()


def _loads(text: str) -> Any:
    """``json.loads``; ``_NOT_JSON`` for text that is not JSON or is nested too deeply to parse."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return _NOT_JSON


def _first_json_value(text: str) -> Any:
    """The first complete JSON object or array in ``text`` (prose around it is ignored)."""
    for match in itertools.islice(re.finditer(r"[\[{]", text), MAX_JSON_STARTS):
        try:
            value, _ = _DECODER.raw_decode(text, match.start())
        except (json.JSONDecodeError, RecursionError):
            continue
        return value
    raise LLMInvalidJSON(f"the answer holds no JSON object or array: {_excerpt(text)!r}")


def extract_json(text: str) -> Any:
    """Parse the JSON value in a model answer, tolerating code fences and prose.

    Raises:
        LLMInvalidJSON: no JSON value can be parsed (the message quotes the answer).
    """
    if not isinstance(text, str) or not text.strip():
        raise LLMInvalidJSON("the answer is empty")
    stripped = text.strip()
    for candidate in (stripped, *_fenced_blocks(stripped)):
        value = _loads(candidate)
        if value is not _NOT_JSON:
            return value
    return _first_json_value(stripped)


def parse_json_answer(
    text: str,
    *,
    expect: type | None = dict,
    required_keys: Iterable[str] = (),
    string_keys: Iterable[str] = (),
) -> Any:
    """Parse and validate a JSON answer.

    Args:
        text: the model's answer.
        expect: required type of the top-level value (``dict``, ``list``, or None for any).
        required_keys: keys a ``dict`` answer must have.
        string_keys: keys whose values must be non-empty strings.

    Raises:
        LLMInvalidJSON: no JSON could be parsed.
        LLMSchemaError: the JSON has the wrong type, misses keys, or has empty strings.
    """
    value = extract_json(text)
    if expect is not None and not isinstance(value, expect):
        raise LLMSchemaError(
            f"expected a JSON {expect.__name__}, got {type(value).__name__}: {_excerpt(text)!r}"
        )
    required = list(required_keys)
    strings = list(string_keys)
    if required or strings:
        if not isinstance(value, dict):
            raise LLMSchemaError(f"expected a JSON object with keys {required + strings}")
        missing = [k for k in dict.fromkeys(required + strings) if k not in value]
        if missing:
            raise LLMSchemaError(
                f"the JSON answer lacks key(s) {', '.join(missing)}; it has {', '.join(sorted(value)) or 'none'}"
            )
        bad = [k for k in strings if not isinstance(value[k], str) or not value[k].strip()]
        if bad:
            raise LLMSchemaError(
                f"the JSON answer's key(s) {', '.join(bad)} must be non-empty strings"
            )
    return value
