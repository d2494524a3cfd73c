"""Reading an action out of a model reply.

A reply is a JSON object (``{"action": "B", ...}``, in code fences or prose, with Python
quoting or a trailing comma too), ``Key: value`` lines (NavGPT/MapGPT string mode,
``Action: B``) or a bare answer (``B``, ``**B**``, ``<answer>B</answer>``); a reasoning
block (``<think>…</think>``) before it is skipped. The **decision position** is the action
field (``action``, else ``answer``, ``final_answer``, ``decision``, ``choice`` or
``next_action``), or the reply itself when it has no such field and is not a JSON object.

What is read there is what a careful reader reads (:func:`parse_option`):

- **the last explicit decision wins**: the option at the head (after formatting, a label
  such as ``Answer:`` and a prefix such as ``Candidate``; whatever follows in its clause is
  an echo or a reason: ``B because A is blocked``), a label's value anywhere (``..., so I
  will stop here. Action: STOP``), a clause that chooses one option (``so C``, ``I choose
  C``, ``The best option is C.``) and a change of mind (``B, but actually let's go with
  C`` is C);
- **a hedge or a question decides nothing** (``maybe C``, ``C?``, ``I think B is best``);
- **one option named once outside reasoning is a decision** (``C is closer to the
  kitchen``);
- **prose never becomes STOP**: STOP and ASK are decided only alone or as a label's value
  (``stop? no. keep going`` and ``we are done, STOP here`` are refused);
- **two options named** with no decision between them (``B or C``, ``B, C``, ``A then
  STOP``) are refused as naming more than one.

Clauses and their words are :mod:`vlnverse.agents.prose_decision`'s. Anything unusable
raises :class:`ReplyError` with a ``kind``: ``empty`` (no text, or only reasoning),
``malformed`` (no decision, a hedge, prose that would be STOP, or two options) or
``unknown_id`` (an id that is not among the options). Agents count these, send one repair
prompt and then fall back; they never turn into a silent STOP. Where the server takes JSON
schemas the agents ask for structured output, whose ``action`` is one of the options, and
this reading is the fallback for servers that answer in text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from vlnverse.agents.prompts import ASK, STOP
from vlnverse.agents.prose_decision import read_clauses
from vlnverse.agents.reply_text import answer_part, reply_object
from vlnverse.errors import LLMAnswerError

REPLY_ERRORS = ("empty", "malformed", "unknown_id")
ACTION_KEYS = ("action", "answer", "final_answer", "decision", "choice", "next_action")
"""Fields read as the decision, the first present one (``decision`` is also DSCD's SIB's
agree/counter: the ``action`` field comes first)."""
OPTION_PREFIXES = ("candidate", "option", "direction", "waypoint", "id")
"""Words that may stand before the id in an action field (``Candidate B``)."""
REASON_WORDS = ("because", "since", "as", "given", "toward", "towards", "leading", "which", "where")
"""Words that may follow the id and start a reason (``B because …``)."""
ALTERNATIVE_WORDS = ("or", "and", "then", "maybe", "perhaps", "alternatively", "otherwise", "else", "also", "plus")
"""Words that, before a second id, make it compete with the first (``B, or maybe C``); a change
of mind (``B, actually C``) is not a rival but a later decision (:mod:`.prose_decision`)."""
NEGATIONS = ("not", "never", "avoid", "avoiding", "over", "than", "vs", "versus", "of")
"""Words that, before a second id, set it aside (``B (not C)``, ``B instead of C``)."""
ENGLISH_LETTERS = ("I", "A")
_LINE = re.compile(r"[*#-]*\s*([A-Za-z][A-Za-z _]{0,30}?)\s*(?:\*+\s*)?:\s*(.*)")  # on stripped lines: no backtracking
_WRAP = "\"'`*_[](){}<> \t\n\r"
_TAG = re.compile(r"</?[A-Za-z][\w-]{0,24}>|\\boxed\{")
_LABEL = re.compile(r"(?:(?:the|my)\s+)?(?:final\s+)?(?:answer|action|decision|choice|selection|next\s+action)"
                    r"(?:\s*[:=]|\s+is\s*:?)\s*", re.IGNORECASE)
_HEAD = re.compile(  # linear time on any text (tests/agents/test_parsing.py reads 100 kB fields)
    r"(?:(?:" + "|".join(OPTION_PREFIXES) + r")\b\s*(?:[:#=]\s*)?[(\[\"'`*]*)?"   # an optional prefix
    r"([A-Za-z0-9]+)[\"'`*_\]}>]*"                                                # the id and its closing marks
    r"(?:$|\s*(?:[.:),;!(\[{/|&+\n]|[\u2013\u2014]|--)|\s+-(?=\s)|\s+(?:" + "|".join(REASON_WORDS) + r")\b)",
    re.IGNORECASE)
_TOKEN = re.compile(r"[A-Za-z0-9]+")
_TAIL_WINDOW = 200  # characters after the head read for a competing option


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


def _answer(text: str) -> str:
    """The reply after its reasoning block.

    Raises:
        ReplyError: ``empty`` (no text, or only an unclosed reasoning block).
    """
    if not isinstance(text, str) or not text.strip():
        raise ReplyError("empty", "the reply is empty")
    answer = answer_part(text)
    if answer is None or not answer.strip():
        raise ReplyError("empty", "the reply holds only reasoning (a <think> block and no answer after it)")
    return answer


def reply_fields(text: str) -> dict[str, str]:
    """The reply's fields (lower-case keys, ``new planning`` → ``new_planning``), read
    after any reasoning block.

    Raises:
        ReplyError: ``empty``, or ``malformed`` (neither an object nor key lines).
    """
    fields, _ = _fields(_answer(text))
    if not fields:
        raise ReplyError("malformed", f"no JSON object or 'Action:' line in {_excerpt(text)!r}")
    return fields


def _fields(answer: str) -> tuple[dict[str, str], bool]:
    """The fields of ``answer`` and whether they came from an object."""
    value = reply_object(answer)
    if value is not None:
        return {_key(str(k)): v if isinstance(v, str) else str(v) for k, v in value.items()}, True
    found: dict[str, str] = {}
    last = None
    for line in answer.splitlines():
        match = _LINE.match(line.strip())
        if match:
            last = _key(match.group(1))
            found[last] = match.group(2).strip()  # a repeated key: the last one counts
        elif last is not None and line.strip():
            found[last] = f"{found[last]}\n{line.strip()}".strip()
    return found, False


def parse_reply(text: str, options: Sequence[str]) -> Decision:
    """The :class:`Decision` of ``text`` given the valid ``options``.

    Raises:
        ReplyError: see the module docs.
    """
    answer = _answer(text)
    fields, is_object = _fields(answer)
    key = next((k for k in ACTION_KEYS if str(fields.get(k, "")).strip()), None)
    if key is None and is_object:
        raise ReplyError("malformed", f"the reply has no action: {_excerpt(text)!r}")
    raw = fields.pop(key) if key is not None else answer
    action = parse_option(raw, options)
    question = fields.pop("question", "").strip()
    if action == ASK and not question:
        raise ReplyError("malformed", "ASK needs a non-empty question")
    return Decision(action, question if action == ASK else "", fields)


def parse_option(raw: str, options: Sequence[str]) -> str:
    """The option that ``raw`` (an action field, or a bare reply) decides (module docs).

    Args:
        raw: The field's text.
        options: The valid ids (compared without regard to case).

    Returns:
        The option as spelled in ``options``.

    Raises:
        ReplyError: ``malformed`` (no decision, a hedge, prose that would be STOP, or
            more than one option named) or ``unknown_id`` (an id that is not an option).
    """
    text = _unwrap(str(raw))
    by_upper = {str(o).upper(): str(o) for o in options}
    head = _HEAD.match(text)
    word = head.group(1) if head is not None else ""
    if word.upper() in by_upper:
        action = by_upper[word.upper()]
        rival = _rival(text[head.end():head.end() + _TAIL_WINDOW], action, by_upper)
        if rival is not None:
            raise _several(raw, options, [action, rival])
        later = read_clauses(text[head.end(1):], by_upper, skip_first=True)  # its own clause is its reason
        option, plain = [(action, True), *later.decisions][-1]
    else:
        reading = read_clauses(text, by_upper)
        named = sorted(set(reading.named) | reading.hedged)
        if reading.decisions:
            option, plain = reading.decisions[-1]
        elif len(named) > 1:
            raise _several(raw, options, named)
        elif len(reading.named) == 1 and sum(reading.named.values()) == 1:
            option, plain = next(iter(reading.named)), False
        elif word and (len(word) <= 3 or word.isupper()) and not reading.hedged:
            raise ReplyError("unknown_id", f"action {_excerpt(str(raw), 40)!r} is not one of {', '.join(options)}")
        else:
            raise ReplyError("malformed", f"action {_excerpt(str(raw), 40)!r} does not decide one option "
                                          f"(expected exactly one of: {', '.join(options)})")
    if option in (STOP, ASK) and not plain:
        raise ReplyError("malformed", f"action {_excerpt(str(raw), 40)!r} names {option} only in prose "
                                      f"(write it alone, or as 'Action: {option}')")
    if option.upper() not in by_upper:
        raise ReplyError("unknown_id", f"action {_excerpt(str(raw), 40)!r} is not one of {', '.join(options)}")
    return by_upper[option.upper()]


def _several(raw: str, options: Sequence[str], named: Sequence[str]) -> ReplyError:
    return ReplyError("malformed", f"action {_excerpt(str(raw), 40)!r} names more than one option "
                                   f"({', '.join(named[:4])}; expected exactly one of: {', '.join(options)})")


def _unwrap(text: str) -> str:
    """The decision text without formatting, tags and a leading label."""
    text = text.strip()
    head = _TAG.sub(" ", text[:200]) + text[200:]   # tags open the answer (<answer>B</answer>, \boxed{B})
    head = head.strip().strip(_WRAP)
    label = _LABEL.match(head)
    if label is not None:
        head = head[label.end():].strip().strip(_WRAP)
    return head


def _rival(tail: str, action: str, by_upper: Mapping[str, str]) -> str | None:
    """The option that ``tail`` (the text after the id and its separator) offers in the
    id's place: the first one after alternative words, or one standing as a list item."""
    alternative = False
    for token in _TOKEN.finditer(tail):
        word, after = token.group(0), tail[token.end():]
        if word.lower() in ALTERNATIVE_WORDS:
            alternative = True
            continue
        if word.lower() in OPTION_PREFIXES:
            continue
        if word.lower() in NEGATIONS or word.upper() == action.upper() or not _names_option(word, after, by_upper):
            return None
        following = after.lstrip(" \t\"'`*_]}>")
        joined = _TOKEN.match(following)
        listed = not following or following[0] in ".,;:/|&+)\n!?" or \
            (joined is not None and joined.group(0).lower() in ("or", "and"))
        return by_upper.get(word.upper(), word) if alternative or listed else None
    return None


def _names_option(word: str, after: str, by_upper: Mapping[str, str]) -> bool:
    """Whether ``word`` names an option: an offered one, a capital letter (an id of another
    step), STOP or ASK; ``I`` and ``A`` before a lower-case word are English words."""
    if len(word) == 1:
        if word.upper() in ENGLISH_LETTERS and after[:1] in (" ", "\t") and after.lstrip(" \t")[:1].islower():
            return False
        return word.isupper() or word.upper() in by_upper
    return word.upper() in by_upper or word.upper() in (STOP, ASK)


def _excerpt(text: str, limit: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
