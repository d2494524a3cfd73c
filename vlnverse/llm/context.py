"""The model's context window: estimating a request's size and reading a server's
context-length error.

**Estimate.** Requests are sized without a tokenizer (none is downloaded), by a rule
meant to count *at least* as many tokens as a real tokenizer does, so that a prompt built
within the estimate fits:

- text: one token per :data:`BYTES_PER_TOKEN` (3) bytes of UTF-8, rounded up. BPE
  tokenizers of current chat models average about 4 bytes a token on English prose and
  JSON, so this over-counts by about a third (the usage estimate of
  :mod:`vlnverse.llm.usage`, which must not be biased, uses 4);
- each message adds :data:`MESSAGE_TOKENS` for its chat-template markers, and the reply's
  header as many again;
- images: OpenAI's published rule (:func:`vlnverse.llm.usage.image_tokens`: 85 tokens at
  ``low`` detail). Local vision models encode images in their own number of tokens; where
  that is more, the server's context error teaches the window (below).

**Context errors** are read by behaviour, not by server name: an error status (400, 413 or
422, or a 5xx whose body says so) whose message speaks of the context length or size, as
vLLM (``This model's maximum context length is N tokens. However, you requested M
tokens``), llama.cpp's server (``exceed_context_size_error`` with ``n_ctx`` and
``n_prompt_tokens``, or ``request (M tokens) exceeds the available context size (N
tokens)``), OpenAI (``context_length_exceeded``), TGI (``must be <= N``) and LM Studio
(``context length of only N tokens``) answer. The window is read from the body where it
gives one; else the rejected request's estimated size bounds it from above.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from vlnverse.errors import ConfigError
from vlnverse.llm.images import ImagePart
from vlnverse.llm.types import ChatMessage, LLMRequest
from vlnverse.llm.usage import IMAGE_BASE_TOKENS, image_tokens

BYTES_PER_TOKEN = 3
MESSAGE_TOKENS = 8
CUT_MARK = " [...]"
REPAIR_ECHO_TOKENS = 200
"""The most of an unusable reply a repair turn quotes back to the model."""

_CONTEXT = re.compile(
    r"context[_ ](?:length|size|window)|maximum context|exceed_context_size|context_length_exceeded|"
    r"prompt is too long|too many (?:input )?tokens|inputs?` tokens \+ `max_new_tokens`", re.IGNORECASE)
_WINDOW = (
    re.compile(r"maximum context length is (\d+)", re.IGNORECASE),
    re.compile(r"available context size \((\d+) tokens?\)", re.IGNORECASE),
    re.compile(r"context length of only (\d+)", re.IGNORECASE),
    re.compile(r"must be <= (\d+)", re.IGNORECASE),
    re.compile(r"context (?:length|size|window) (?:is |of )?(\d+)", re.IGNORECASE),
)
_REQUESTED = (
    re.compile(r"you requested (\d+) tokens", re.IGNORECASE),
    re.compile(r"request \((\d+) tokens?\)", re.IGNORECASE),
    re.compile(r"resulted in (\d+) tokens", re.IGNORECASE),
)


def check_context(context: int | None) -> int | None:
    """A spec's ``context=`` value: a positive number of tokens, or None.

    Raises:
        ConfigError: anything else.
    """
    if context is not None and (isinstance(context, bool) or not isinstance(context, int) or context < 1):
        raise ConfigError(f"context must be a positive number of tokens, got {context!r}")
    return context


def text_bound(text: str) -> int:
    """Tokens ``text`` takes at most, by the module's rule."""
    return math.ceil(len(text.encode("utf-8")) / BYTES_PER_TOKEN)


def clip(text: str, tokens: int) -> str:
    """``text`` cut to at most ``tokens`` by the module's rule (at a word boundary where
    one is near, ending in :data:`CUT_MARK`); unchanged when it fits."""
    if text_bound(text) <= tokens:
        return text
    room = max(0, tokens * BYTES_PER_TOKEN - len(CUT_MARK.encode()))
    head = text.encode("utf-8")[:room].decode("utf-8", errors="ignore")
    space = head.rfind(" ")
    if space > len(head) * 3 // 4:
        head = head[:space]
    return head.rstrip() + CUT_MARK


def repair_echo(reply: str) -> str:
    """What a repair turn quotes of an unusable reply (at most :data:`REPAIR_ECHO_TOKENS`)."""
    return clip(reply, REPAIR_ECHO_TOKENS) if reply else "(empty reply)"


def _image_bound(image: ImagePart) -> int:
    """An image's tokens by OpenAI's rule (its base alone when it cannot be decoded: the
    server will refuse it for that, not for its size)."""
    try:
        return image_tokens(image)
    except (OSError, ValueError):
        return IMAGE_BASE_TOKENS


def message_bound(message: ChatMessage) -> int:
    """Tokens one chat message takes at most (text, images and template markers)."""
    return MESSAGE_TOKENS + sum(part_bound(p) for p in message.parts)


def messages_bound(messages: Iterable[ChatMessage]) -> int:
    """Prompt tokens of ``messages`` at most, the reply's header included."""
    return MESSAGE_TOKENS + sum(message_bound(m) for m in messages)


def request_bound(request: LLMRequest) -> int:
    """Tokens ``request`` needs at most: its prompt plus its completion cap (0 without one)."""
    return messages_bound(request.messages) + (request.params.max_tokens or 0)


def part_bound(part: str | ImagePart) -> int:
    """Tokens of one message part (text or image)."""
    return text_bound(part) if isinstance(part, str) else _image_bound(part)


@dataclass(frozen=True)
class ContextError:
    """A server's context-length error.

    Attributes:
        message: the server's message (one line, short).
        window: the context size it states (None: it states none).
        requested: the request's size as the server counted it (None: not stated).
    """

    message: str
    window: int | None
    requested: int | None


def _first(patterns: Iterable[re.Pattern], text: str) -> int | None:
    for pattern in patterns:
        if (match := pattern.search(text)) is not None:
            return int(match.group(1))
    return None


def read_context_error(status: int, body: str) -> ContextError | None:
    """The context-length error an error answer carries (None: it is not one; see the
    module docs)."""
    if status < 400 or status in (401, 403, 404, 408, 409, 429):
        return None
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    error = data.get("error", data) if isinstance(data, dict) else None
    fields = error if isinstance(error, dict) else {}
    message = str(fields.get("message") or error or body)
    text = f"{message} {fields.get('type', '')} {fields.get('code', '')}"
    if not _CONTEXT.search(text):
        return None
    window = fields.get("n_ctx") if isinstance(fields.get("n_ctx"), int) else _first(_WINDOW, message)
    requested = fields.get("n_prompt_tokens") if isinstance(fields.get("n_prompt_tokens"), int) \
        else _first(_REQUESTED, message)
    return ContextError(" ".join(message.split())[:300], window if window and window > 0 else None, requested)
