"""A reply's token usage: checked, or estimated when the server sent none.

Budgets and costs are only as good as the usage servers report, so a reply's ``usage`` is
checked before anything is billed: a count that is negative, not finite or not a number
makes the reply a bad one (the client retries it, then fails the call), never a charge.

A server that omits ``usage`` (or one of its two counts) still spends tokens; those are
estimated by one stated rule, and the :class:`~vlnverse.llm.types.Usage` is flagged
``estimated`` (the records, the summary and the budget ledger count such calls):

- text: one token per :data:`BYTES_PER_TOKEN` bytes of UTF-8, rounded up, over the request's
  text parts (prompt) and every choice's text and tool-call arguments (completion);
- images: :func:`image_tokens` — OpenAI's published high-detail rule on the image as sent,
  85 tokens plus 170 per started 512 × 512 tile (85 for ``detail="low"``).
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Sequence
from typing import Any

from vlnverse.llm.images import ImagePart
from vlnverse.llm.types import LLMRequest, ToolCall, Usage

BYTES_PER_TOKEN = 4
IMAGE_BASE_TOKENS = 85
IMAGE_TILE_TOKENS = 170
IMAGE_TILE = 512


def text_tokens(text: str) -> int:
    """Estimated tokens of ``text``: its UTF-8 bytes / :data:`BYTES_PER_TOKEN`, rounded up."""
    return math.ceil(len(text.encode("utf-8")) / BYTES_PER_TOKEN)


def image_tokens(image: ImagePart) -> int:
    """Estimated tokens of one image (see the module docs)."""
    if image.detail == "low":
        return IMAGE_BASE_TOKENS
    from PIL import Image

    with Image.open(io.BytesIO(image.data)) as decoded:
        width, height = decoded.size
    tiles = math.ceil(width / IMAGE_TILE) * math.ceil(height / IMAGE_TILE)
    return IMAGE_BASE_TOKENS + IMAGE_TILE_TOKENS * tiles


def prompt_tokens(request: LLMRequest) -> int:
    """Estimated prompt tokens of ``request`` (every message's text and images)."""
    return sum(text_tokens(part) if isinstance(part, str) else image_tokens(part)
               for message in request.messages for part in message.parts)


def completion_tokens(texts: Sequence[str], tool_calls: Sequence[ToolCall] = ()) -> int:
    """Estimated completion tokens of a reply's choices and tool calls."""
    return sum(text_tokens(t) for t in texts) + sum(
        text_tokens(call.name + json.dumps(dict(call.arguments), sort_keys=True)) for call in tool_calls)


def _count(value: Any, name: str) -> int | None:
    """A reported count as an int (None: not reported).

    Raises:
        ValueError: the count is not a finite, non-negative whole number.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"usage.{name} is not a number ({value!r:.40})")
    if not math.isfinite(value) or value < 0 or value != int(value):
        raise ValueError(f"usage.{name} is not a non-negative whole number ({value!r})")
    return int(value)


def reply_usage(reported: Any, request: LLMRequest, texts: Sequence[str],
                tool_calls: Sequence[ToolCall] = ()) -> Usage:
    """The usage of a reply whose ``usage`` object is ``reported`` (None when absent).

    Raises:
        ValueError: a reported count is negative, not finite or not a number (a bad reply).
    """
    prompt = _count(getattr(reported, "prompt_tokens", None), "prompt_tokens")
    completion = _count(getattr(reported, "completion_tokens", None), "completion_tokens")
    estimated = prompt is None or completion is None
    if prompt is None:
        prompt = prompt_tokens(request)
    if completion is None:
        completion = completion_tokens(texts, tool_calls)
    return Usage(prompt, completion, estimated)
