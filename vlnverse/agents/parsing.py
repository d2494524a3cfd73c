"""Reading an action out of a model reply.

A reply is a JSON object (``{"action": "B", ...}``, in code fences or prose too) or
``Key: value`` lines (NavGPT/MapGPT string mode, ``Action: B``). The action must be one
of the offered options: a candidate id, ``STOP``, or ``ASK`` (with a ``question``).
Anything else raises :class:`ReplyError` with a ``kind``: ``empty`` (no text),
``malformed`` (no action field / unreadable) or ``unknown_id`` (an action that is not
among the options). Agents count these; they never turn into a silent STOP.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from vlnverse.agents.prompts import ASK, STOP
from vlnverse.errors import LLMAnswerError
from vlnverse.llm.jsonanswer import extract_json

REPLY_ERRORS = ("empty", "malformed", "unknown_id")
_LINE = re.compile(r"[*#-]*\s*([A-Za-z][A-Za-z _]{0,30}?)\s*(?:\*+\s*)?:\s*(.*)")  # on stripped lines: no backtracking
_ACTION = re.compile(
    r"^\W*(?:(?:candidate|option|waypoint|place|action|go to)\s+)?([A-Za-z]+)\b\W*", re.IGNORECASE)


class ReplyError(LLMAnswerError):
    """A reply that names no valid action; ``kind`` is one of :data:`REPLY_ERRORS`."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Decision:
    """A parsed reply: the action word, the question for ASK, and every other field."""

    action: str
    question: str = ""
    fields: Mapping[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"action": self.action, **self.fields}
        if self.question:
            out["question"] = self.question
        return out


def _key(name: str) -> str:
    return re.sub(r"[\s-]+", "_", name.strip().lower())


def reply_fields(text: str) -> dict[str, str]:
    """The reply's fields (lower-case keys, ``new planning`` → ``new_planning``).

    Raises:
        ReplyError: ``empty`` or ``malformed`` (neither a JSON object nor key lines).
    """
    if not isinstance(text, str) or not text.strip():
        raise ReplyError("empty", "the reply is empty")
    try:
        value = extract_json(text)
    except LLMAnswerError:
        value = None
    if isinstance(value, dict):
        return {_key(str(k)): v if isinstance(v, str) else str(v) for k, v in value.items()}
    found: dict[str, str] = {}
    last = None
    for line in text.splitlines():
        match = _LINE.match(line.strip())
        if match:
            last = _key(match.group(1))
            found[last] = match.group(2).strip()  # a repeated key: the last one counts
        elif last is not None and line.strip():
            found[last] = f"{found[last]}\n{line.strip()}".strip()
    if not found:
        raise ReplyError("malformed", f"no JSON object or 'Action:' line in {_excerpt(text)!r}")
    return found


def parse_reply(text: str, options: Sequence[str]) -> Decision:
    """The :class:`Decision` of ``text`` given the valid ``options``.

    Raises:
        ReplyError: see the module docs.
    """
    fields = reply_fields(text)
    raw = fields.pop("action", None)
    if raw is None or not raw.strip():
        raise ReplyError("malformed", f"the reply has no action: {_excerpt(text)!r}")
    match = _ACTION.match(raw.strip().strip("\"'`"))
    word = match.group(1) if match else ""
    upper = word.upper()
    if upper in (STOP, ASK) or len(word) == 1:
        action = upper
    else:
        action = word
    if action not in options:
        raise ReplyError("unknown_id", f"action {raw.strip()[:40]!r} is not one of {', '.join(options)}")
    question = fields.pop("question", "").strip()
    if action == ASK and not question:
        raise ReplyError("malformed", "ASK needs a non-empty question")
    return Decision(action, question if action == ASK else "", fields)


def _excerpt(text: str, limit: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
