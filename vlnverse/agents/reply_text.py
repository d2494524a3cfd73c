"""What a model's reply holds before its action is read: the answer after any reasoning
block, and the object it writes in JSON or in the near-JSON small models write.

Reasoning models (DeepSeek-R1 and its distillations, QwQ, Qwen3 in thinking mode) put
their chain of thought in ``<think>…</think>`` before the answer; some servers drop the
opening tag. The answer is what follows the last closing tag; a reply that opens a
reasoning block and never closes it holds no answer. Small models often write an object
with Python quoting (``{'action': 'B'}``) or a trailing comma; :func:`reply_object` reads
those too, without evaluating anything (``ast.literal_eval`` of a bounded text).
"""

from __future__ import annotations

import ast
import re
from typing import Any

from vlnverse.errors import LLMAnswerError
from vlnverse.llm.jsonanswer import extract_json

REASONING_TAGS = ("think", "thinking", "reasoning")
MAX_LOOSE_OBJECT = 20_000
"""The longest text read as a Python-quoted object (longer ones are not tried)."""
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def answer_part(text: str) -> str | None:
    """The reply after its reasoning block (the whole reply when it has none); None when
    a reasoning block opens and never closes (the reply holds only reasoning)."""
    lowered = text.lower()
    for tag in REASONING_TAGS:
        close = lowered.rfind(f"</{tag}>")
        if close != -1:
            return text[close + len(tag) + 3:]
    stripped = lowered.lstrip()
    if any(stripped.startswith(f"<{tag}>") for tag in REASONING_TAGS):
        return None
    return text


def reply_object(text: str) -> dict[str, Any] | None:
    """The object the reply writes: JSON (fenced or in prose), else the first ``{…}``
    span read with a trailing comma dropped or as a Python literal; None when there is none."""
    try:
        value = extract_json(text)
    except LLMAnswerError:
        value = None
    if isinstance(value, dict):
        return value
    start, end = text.find("{"), text.rfind("}")
    if start == -1 or end <= start or end - start > MAX_LOOSE_OBJECT:
        return None
    span = text[start:end + 1]
    for candidate in (_TRAILING_COMMA.sub(r"\1", span), span):
        try:
            value = ast.literal_eval(candidate)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    try:
        value = extract_json(_TRAILING_COMMA.sub(r"\1", span))
    except LLMAnswerError:
        return None
    return value if isinstance(value, dict) else None
