"""Prompts that fit the model's context window: the rules every LLM agent cuts by.

A request must fit the window less its completion cap (``max_reply_tokens``), sizes
estimated by :mod:`vlnverse.llm.context` (an upper bound: about 3 bytes a token). Two
rules keep it there, in this order:

1. **At the source**: what one model answer (a summary, a plan, an expert's or a
   perception call's answer, a debate argument, a memory field) adds to later prompts is
   capped (:func:`cap`), so a verbose model cannot multiply its own verbosity into the
   next request. The caps are method settings (``answer_tokens``; DiscussNav's
   ``perception_tokens``), applied whatever the window.
2. **When the prompt is built** (:func:`fit_prompt`), if it is still too large, its
   sections are cut by their rule (:data:`~vlnverse.agents.prompts.CUTS`): first the
   histories (``oldest``: the oldest lines go, the newest stay; ``shorten_start``), then the
   scene text and summaries (``shorten``: every line cut to a common length, so each
   direction keeps its label and the start of what was seen). Sections marked ``keep`` —
   the instruction, the candidates, the reply format — are never cut.

What was cut is counted (:class:`Fit`: estimated tokens per section) in the step's trace
and the episode's ``fitting`` counts. A prompt that does not fit even so is sent as it
is cut: the client refuses it unsent (:class:`~vlnverse.errors.LLMContextExceeded`), and
the agent handles it as a bad reply (counted under ``failures["too_long"]``, then its
fallback).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from vlnverse.agents.prompts import Prompt, Section
from vlnverse.llm.context import (
    BYTES_PER_TOKEN,
    CUT_MARK,
    MESSAGE_TOKENS,
    REPAIR_ECHO_TOKENS,
    clip,
    message_bound,
    messages_bound,
    text_bound,
)
from vlnverse.llm.types import ChatMessage

MIN_LINE_TOKENS = 12
"""A ``shorten`` section's lines keep at least this many tokens (the label and a little)."""
MIN_TAIL_TOKENS = 24
"""A ``shorten_start`` section keeps at least this many tokens of its end."""
STAGES = (("oldest", "shorten_start"), ("shorten",))
"""The order sections are cut in: histories first, then scene text and summaries."""
REPAIR_RESERVE = 2 * (REPAIR_ECHO_TOKENS + MESSAGE_TOKENS) + 40
"""Room kept for one repair turn (the quoted reply and the note on what is wrong, each
clipped to :data:`~vlnverse.llm.context.REPAIR_ECHO_TOKENS`) where the repair happens
inside the client (structured answers, tool calls) and the prompt cannot be fitted again."""


def cap(text: str, tokens: int) -> tuple[str, bool]:
    """``text`` capped to ``tokens`` (estimated) and whether it was cut."""
    capped = clip(text, tokens)
    return capped, capped != text


def cap_items(items: Sequence[str], tokens: int) -> tuple[list[str], bool]:
    """The first of ``items`` (each capped) that take ``tokens`` together (at least one),
    and whether anything was cut or dropped."""
    kept: list[str] = []
    used = 0
    for item in items:
        clipped = clip(item, tokens)
        used += text_bound(clipped) + 1
        if kept and used > tokens:
            break
        kept.append(clipped)
    return kept, len(kept) < len(items) or any(k != i for k, i in zip(kept, items, strict=False))


@dataclass
class Fit:
    """How one prompt was fitted.

    Attributes:
        budget: tokens the prompt may take (window less completion cap and reserve).
        before: its estimated size as built.
        after: its estimated size as sent.
        cuts: section title → estimated tokens cut from it.
        prompt: the prompt as cut.
        messages: its chat messages (to send).
    """

    budget: int
    before: int
    after: int
    cuts: dict[str, int] = field(default_factory=dict)
    prompt: Prompt = field(default_factory=Prompt)
    messages: list[ChatMessage] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        return self.after <= self.budget

    def to_dict(self) -> dict[str, Any]:
        return {"budget": self.budget, "before": self.before, "after": self.after, "cuts": dict(self.cuts),
                "fits": self.fits}


def _oldest(section: Section, target: int) -> Section:
    """``section`` without its oldest lines (the newest one stays) within ``target`` tokens."""
    lines = section.body.splitlines()

    def without(k: int) -> Section:
        return Section(section.title, "\n".join([f"({k} earlier line(s) cut to fit the context window)",
                                                 *lines[k:]]), section.cut)

    low, high = 1, max(1, len(lines) - 1)
    if len(lines) < 2:
        return section
    while low < high:  # the fewest lines dropped that reach the target
        mid = (low + high) // 2
        low, high = (low, mid) if text_bound(without(mid)) <= target else (mid + 1, high)
    return without(low)


def _shorten(section: Section, target: int) -> Section:
    """``section`` with every line cut to a common length, the longest within ``target``."""
    lines = section.body.splitlines()

    def at(tokens: int) -> Section:
        return Section(section.title, "\n".join(clip(line, tokens) for line in lines), section.cut)

    low, high = MIN_LINE_TOKENS, max(MIN_LINE_TOKENS, max(text_bound(line) for line in lines))
    while low < high:  # the largest line length that reaches the target
        mid = (low + high + 1) // 2
        low, high = (mid, high) if text_bound(at(mid)) <= target else (low, mid - 1)
    return at(low)


def _shorten_start(section: Section, target: int) -> Section:
    """``section`` with the start of its body cut, its end kept, within ``target`` tokens."""
    keep = max(MIN_TAIL_TOKENS, target - text_bound(section.title) - 2) * BYTES_PER_TOKEN - len(CUT_MARK.encode())
    body = section.body.encode("utf-8")
    if len(body) <= keep:
        return section
    tail = body[-keep:].decode("utf-8", errors="ignore")
    return Section(section.title, CUT_MARK.strip() + " " + tail.lstrip(), section.cut)


_CUTTERS: dict[str, Callable[[Section, int], Section]] = {
    "oldest": _oldest, "shorten": _shorten, "shorten_start": _shorten_start}


def fit_prompt(prompt: Prompt, system: str, budget: int | None) -> Fit:
    """``prompt`` cut by its sections' rules (see the module docs) until its messages
    (with ``system``) take at most ``budget`` tokens; None: no budget (nothing cut)."""
    parts = list(prompt.parts)

    def size() -> int:
        return messages_bound(Prompt(parts).messages(system))

    before = total = size()
    cuts: dict[str, int] = {}
    if budget is not None and total > budget:
        for stage in STAGES:
            order = sorted((i for i, (kind, v) in enumerate(parts) if isinstance(v, Section) and v.cut in stage),
                           key=lambda i: -text_bound(parts[i][1]))
            for index in order:
                if total <= budget:
                    break
                old = parts[index][1]
                new = _CUTTERS[old.cut](old, text_bound(old) - (total - budget))
                saved = text_bound(old) - text_bound(new)
                if saved > 0:
                    parts[index] = ("text", new)
                    cuts[old.title] = cuts.get(old.title, 0) + saved
                    total = size()
    fitted = Prompt(parts)
    return Fit(budget if budget is not None else before, before, total, cuts, fitted, fitted.messages(system))


def window_budget(client: Any, completion: int, reserve: int = 0) -> int | None:
    """Prompt tokens a request may take on ``client``: its context window less the
    completion cap and ``reserve`` (None: the window is not known)."""
    window = getattr(client, "context_window", None)
    return None if window is None else window - completion - reserve


def reserve_for(messages: Sequence[ChatMessage]) -> int:
    """Tokens ``messages`` add to a request (a repair turn appended to a fitted prompt)."""
    return sum(message_bound(m) for m in messages)
