"""Reading the plan line a model names for ARNA's ``next_step``.

A reference is read when exactly one line number stands at its head, after formatting
(quotes, ``**``, brackets) and an optional word (``line``, ``step``, ``statement``,
``no.``) or ``#``: ``4``, ``Step 4``, ``#4``, ``(4)``, ``line 3:``; whatever follows a
separator or a space is an echo of the line or a reason and is not read
(``4 (goto kitchen)``, ``line 3 (goto kitchen)``, ``4 because the hall is explored``).
It is refused when a second number competes there (``4 or 5``, ``4, 5``, ``4/5``,
``4. Actually, 5``) or none stands at the head (``the kitchen step``).
"""

from __future__ import annotations

import re

from vlnverse.agents.parsing import ALTERNATIVE_WORDS
from vlnverse.agents.prose_decision import ALONE_CHANGE_WORDS, CHANGE_WORDS

COMPETING_WORDS = frozenset(ALTERNATIVE_WORDS) | CHANGE_WORDS | ALONE_CHANGE_WORDS
"""Words before a second line number that make two lines compete (a plan line is one
reference: a change of mind, ``3. Actually, 4``, names two)."""

_WRAP = "\"'`*_[](){}<> \t\n"
_HEAD = re.compile(r"(?:(?:line|step|statement|no\.?|number)\s*)?(?:#\s*)?[(\[]?\s*(\d+)\s*[)\]]?"
                   r"(?=$|[\s.:,;/|&+(\[\-\u2013\u2014])", re.IGNORECASE)
_TOKEN = re.compile(r"[A-Za-z]+|\d+")
_RIVAL_WINDOW = 80


def line_reference(text: str) -> int | None:
    """The line number ``text`` names (module docs), or None when it names none or two."""
    head = str(text).strip().strip(_WRAP)
    match = _HEAD.match(head)
    if match is None:
        return None
    tail = head[match.end():match.end() + _RIVAL_WINDOW]
    return None if _second_number(tail) else int(match.group(1))


def _second_number(tail: str) -> bool:
    """Whether ``tail`` offers another line in the first one's place: a number after
    alternative words, or one right after a list separator."""
    listed = re.match(r"\s*[,/|&+]", tail) is not None
    for token in _TOKEN.finditer(tail):
        word = token.group(0).lower()
        if word.isdigit():
            return True
        if word in COMPETING_WORDS:
            listed = True
        elif not (listed and word in ("line", "step", "statement")):
            return False
    return False
