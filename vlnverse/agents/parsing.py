"""Reading an action out of a model reply.

A reply is a JSON object (``{"action": "B", ...}``, in code fences or prose too) or
``Key: value`` lines (NavGPT/MapGPT string mode, ``Action: B``). The action field must
name exactly one of the offered options (a candidate id, ``STOP``, or ``ASK`` with a
``question``), read strictly by :func:`parse_option`:

- the id alone, in any case, optionally wrapped in quotes, backticks, ``**`` or brackets
  (``B``, ``"b"``, ``**B**``, ``(B)``, ``B.``);
- optionally after one of the prefixes :data:`OPTION_PREFIXES` (``Candidate B``,
  ``option: B``, ``Direction B``);
- optionally followed by a separator (``.`` ``:`` ``)`` ``,`` ``;``, a line break or a
  spaced dash) and an echo of the option's card or a reason, provided that tail names no other option
  (``A: forward, 1.2 m`` is A; ``A. no, C`` names two and is refused).

Prose is never read as an action: ``"STOP is not appropriate, choose B"``, ``"a good
choice is C"`` and ``"I choose B"`` are ``malformed``, not STOP, A or candidate I.
Anything unusable raises :class:`ReplyError` with a ``kind``: ``empty`` (no text),
``malformed`` (no action field, prose, or more than one option named) or ``unknown_id``
(one id that is not among the options). Agents count these, send one repair prompt and
then fall back; they never turn into a silent STOP.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from vlnverse.agents.prompts import ASK, STOP
from vlnverse.errors import LLMAnswerError
from vlnverse.llm.jsonanswer import extract_json

REPLY_ERRORS = ("empty", "malformed", "unknown_id")
_LINE = re.compile(r"[*#-]*\s*([A-Za-z][A-Za-z _]{0,30}?)\s*(?:\*+\s*)?:\s*(.*)")  # on stripped lines: no backtracking
OPTION_PREFIXES = ("candidate", "option", "direction", "waypoint", "id")
"""Words that may stand before the id in an action field (``Candidate B``)."""
_WRAP = "\"'`*_[](){}<> \t\n"
_OPTION = re.compile(  # linear time on any text (tests/agents/test_parsing.py reads 100 kB fields)
    r"(?:(?:" + "|".join(OPTION_PREFIXES) + r")\b\s*(?:[:#]\s*)?)?"   # an optional prefix
    r"([A-Za-z0-9]+)[\"'`*_\]}>]*"                                   # the id and its closing marks
    r"(?:(?:\s*[.:),;\n]|\s+[-\u2013\u2014])(.*))?",                    # a separator and a tail
    re.IGNORECASE | re.DOTALL)
_WORD = re.compile(r"[A-Za-z0-9]+")


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
    action = parse_option(raw, options)
    question = fields.pop("question", "").strip()
    if action == ASK and not question:
        raise ReplyError("malformed", "ASK needs a non-empty question")
    return Decision(action, question if action == ASK else "", fields)


def parse_option(raw: str, options: Sequence[str]) -> str:
    """The one option that ``raw`` (an action field) names, read strictly (module docs).

    Args:
        raw: The field's text.
        options: The valid ids (compared without regard to case).

    Returns:
        The option as spelled in ``options``.

    Raises:
        ReplyError: ``malformed`` (empty, prose, or several options named) or
            ``unknown_id`` (one id that is not an option).
    """
    text = str(raw).strip().strip(_WRAP)
    by_upper = {str(o).upper(): str(o) for o in options}
    match = _OPTION.fullmatch(text)
    if not text or match is None:
        raise ReplyError("malformed", f"action {_excerpt(str(raw), 40)!r} does not name one option "
                                      f"(expected exactly one of: {', '.join(options)})")
    word, tail = match.group(1), match.group(2) or ""
    if word.upper() not in by_upper:
        raise ReplyError("unknown_id", f"action {_excerpt(str(raw), 40)!r} is not one of {', '.join(options)}")
    action = by_upper[word.upper()]
    others = sorted({w for w in _WORD.findall(tail) if w != action and _looks_like_option(w, by_upper.values())})
    if others:
        raise ReplyError("malformed", f"action {_excerpt(str(raw), 40)!r} names more than one option "
                                      f"({', '.join([action, *others])})")
    return action


def _looks_like_option(word: str, options: Iterable[str]) -> bool:
    """Whether a word of a tail names an option: an offered one, a lone capital letter
    (an id of another step) or STOP / ASK in capitals."""
    return word in options or (len(word) == 1 and word.isupper()) or word in (STOP, ASK)


def _excerpt(text: str, limit: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
