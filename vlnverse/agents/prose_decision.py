"""The decision a sentence states, read as a careful reader reads it.

The text is cut into clauses: at a sentence's end (``.`` ``!`` ``?`` ``;`` a line break) and
before a change of mind (``but``, ``actually``, ``instead``, ``rather``, ``correction``,
``sorry``, or ``no``/``wait`` standing alone). A clause that ends with ``?`` or hedges
(``maybe``, ``perhaps``, ``might``, ``or``, ``I think``, ``seems`` ...) decides nothing,
though what it names still counts as named. Any other clause naming exactly one option
*decides* it when the option is the clause's last word (``so C``), follows a word of
choosing (``choose``, ``take``, ``go``, ``so``, ``pick`` ...), opens a change of mind, or
follows a label (``Action: C``, ``Answer: STOP``). An option right after ``not``/``avoid``
/``over``/``than`` or before ``is not`` is set aside, and one after ``because``/``since`` in
the middle of a clause is a reason: neither is named.

:func:`read_clauses` returns every decision in order and what was named; the caller
(:func:`vlnverse.agents.parsing.parse_option`) keeps the last decision, or else the one
option named once outside a hedge. ``STOP`` and ``ASK`` are options only written so (in
capitals, or as a label's value), and only a label or a clause that is the option alone
decides them: prose never becomes STOP.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from vlnverse.agents.prompts import ASK, STOP

CHANGE_WORDS = frozenset({"but", "actually", "instead", "rather", "correction", "sorry", "scratch", "nope"})
"""Words that open a change of mind (a new clause)."""
ALONE_CHANGE_WORDS = frozenset({"no", "wait", "hmm"})
"""Words that open a change of mind when punctuation follows them (``no, C``; not ``no wall``)."""
HEDGE_WORDS = frozenset({"maybe", "perhaps", "possibly", "probably", "might", "could", "either", "or", "unsure",
                         "unclear", "think", "guess", "seems", "seem", "seemed", "whether", "if", "depends",
                         "possible", "whichever", "sure"})
"""Words that make a clause a hedge (``sure`` as in ``not sure``)."""
DECISION_WORDS = frozenset({"choose", "chose", "choosing", "pick", "picking", "picked", "select", "selecting",
                            "take", "taking", "go", "going", "head", "heading", "move", "moving", "so", "therefore",
                            "thus", "hence", "meant", "decided", "choice", "best"})
"""Words of choosing: an option after one is decided."""
LABEL_WORDS = frozenset({"action", "answer", "decision"})
"""Words that label a decision when ``:`` or ``=`` follows (``Action: STOP``)."""
REASON_WORDS = frozenset({"because", "since", "as", "given"})
"""Words after which the rest of a clause gives reasons (``I chose B because A is blocked``)."""
SET_ASIDE = frozenset({"not", "never", "avoid", "avoiding", "over", "than", "vs", "versus"})
"""Words that, right before an option, set it aside (``not C``, ``rather than C``)."""
OPTION_WORDS = frozenset({"candidate", "option", "direction", "waypoint", "id", "final"})
"""Words that may stand between a label or a word of choosing and the option."""
ID_FOLLOWERS = frozenset({"or", "and", "then", "vs", "is", "seems", "looks", "leads"})
"""Lower-case words after which ``I`` and ``A`` are ids, not English (``A or C``, ``A is blocked``)."""
ENDS = frozenset(".!?;\n")
READ_CHARS = 1500
"""The most characters of a text read, its last ones (where a reply states its decision)."""
_AFTER = 40  # characters after a token read to tell an id from an English word
_TOKEN = re.compile(r"[A-Za-z0-9]+|\n|[^\sA-Za-z0-9]")


@dataclass
class Reading:
    """What the clauses of a text decide and name.

    Attributes:
        decisions: ``(option, plain)`` in order; ``plain`` when a label or a clause holding
            the option alone decided it (the only ways STOP and ASK are decided).
        named: How often each option was named outside hedges (set-aside ones not counted).
        hedged: The options named only in hedges or questions.
    """

    decisions: list[tuple[str, bool]] = field(default_factory=list)
    named: Counter = field(default_factory=Counter)
    hedged: set[str] = field(default_factory=set)


def _clauses(text: str) -> list[list[re.Match]]:
    """The tokens of ``text`` cut into clauses (a clause keeps its closing mark)."""
    tokens = list(_TOKEN.finditer(text))
    clauses: list[list[re.Match]] = [[]]
    for i, token in enumerate(tokens):
        word = token.group(0).lower()
        following = tokens[i + 1].group(0) if i + 1 < len(tokens) else ""
        if clauses[-1] and (word in CHANGE_WORDS or (word in ALONE_CHANGE_WORDS and following in ",:.!-")):
            clauses.append([])
        clauses[-1].append(token)
        if word in ENDS:
            clauses.append([])
    return [c for c in clauses if c]


def _option(token: str, after: str, by_upper: Mapping[str, str], labelled: bool) -> str | None:
    """The option ``token`` names (its spelling in ``by_upper`` when offered, else the token
    for an id-like capital letter), or None. ``I`` and ``A`` before a lower-case word or an
    apostrophe are English; STOP and ASK count in capitals, any case after a label."""
    upper = token.upper()
    if upper in (STOP, ASK):
        return upper if token == upper or labelled else None
    if len(token) == 1:
        if not (token.isupper() or labelled):
            return None
        following = after.lstrip().split(" ", 1)[0].strip(".,;:!?")
        if upper in ("I", "A") and not labelled and (after[:1] == "'" or following[:1].islower()) \
                and following not in ID_FOLLOWERS:
            return None
        return by_upper.get(upper, upper)
    return by_upper.get(upper)


def read_clauses(text: str, by_upper: Mapping[str, str], *, skip_first: bool = False) -> Reading:
    """The decisions and the options named in ``text`` (see the module docs); with
    ``skip_first`` the first clause (the rest of an already-read head) is not read. Only
    the last :data:`READ_CHARS` characters are read, from the first clause that starts in them
    (a clause the window cuts is not read: its unread head could change what it says)."""
    reading = Reading()
    if len(text) > READ_CHARS:
        tail = text[-READ_CHARS:]
        text = tail[next((i + 1 for i, char in enumerate(tail) if char in ENDS), len(tail)):]
    for index, clause in enumerate(_clauses(text)):
        if skip_first and index == 0:
            continue
        words = [t for t in clause if t.group(0)[0].isalnum()]
        lowered = [w.group(0).lower() for w in words]
        reason = next((i for i, w in enumerate(lowered) if i and w in REASON_WORDS), len(words))
        words, lowered = words[:reason], lowered[:reason]  # what follows ``because`` is a reason
        if not words:
            continue
        hedge = clause[-1].group(0) == "?" or bool(HEDGE_WORDS.intersection(lowered))
        found: list[tuple[int, str, bool]] = []  # (word index, option, labelled)
        for i, token in enumerate(words):
            labelled = i > 0 and _after_label(words, i, text)
            option = _option(token.group(0), text[token.end():token.end() + _AFTER], by_upper, labelled)
            if option is None or (i > 0 and lowered[i - 1] in SET_ASIDE) or "not" in lowered[i + 1:i + 3] \
                    or "isn" in lowered[i + 1:i + 2]:
                continue
            found.append((i, option, labelled))
        options = {option for _, option, _ in found}
        if hedge:
            reading.hedged |= options
            continue
        reading.named.update(option for _, option, _ in found)
        choosing = max((i for i, w in enumerate(lowered) if w in DECISION_WORDS), default=-1)
        chosen = {option for i, option, _ in found if i > choosing} if choosing >= 0 else set()
        if len(options) != 1 and len(chosen) != 1:
            continue
        i, option, labelled = found[-1]
        alone = all(w in OPTION_WORDS or w == option.lower() for w in lowered)
        opens = lowered[0] in CHANGE_WORDS | ALONE_CHANGE_WORDS
        if labelled or alone or chosen or opens or i == len(words) - 1:
            reading.decisions.append((option, labelled or alone))
    reading.hedged -= set(reading.named)
    return reading


def _after_label(words: list[re.Match], i: int, text: str) -> bool:
    """Whether word ``i`` is a label's value: ``Action: C``, ``Final answer = Candidate C``."""
    j = i - 1
    while j >= 0 and words[j].group(0).lower() in OPTION_WORDS:
        j -= 1
    if j < 0 or words[j].group(0).lower() not in LABEL_WORDS:
        return False
    between = text[words[j].end():words[j + 1].start() if j + 1 < i else words[i].start()]
    return between.strip(" *_`\"'")[:1] in (":", "=")
