"""Observation → prompt helpers shared by every LLM agent.

A :class:`Prompt` is an ordered list of titled text sections and labelled images; it
becomes chat messages for the client and, with every image replaced by its label, the
JSON form stored in the agent trace. Each section says how it may be cut when the prompt
must fit the model's context window (:class:`Section`; :mod:`vlnverse.agents.fitting`). The section helpers render the pieces every agent
needs: instruction, candidate cards, step history, the local map, what the agent sees,
the reference image (visual reference) and the dialogue state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vlnverse.agents.gt_perception import ViewObjects
from vlnverse.agents.waypoints.candidate import Candidate
from vlnverse.llm.images import ImagePart
from vlnverse.llm.types import ChatMessage

STOP, ASK = "STOP", "ASK"
CUTS = ("keep", "oldest", "shorten", "shorten_start")
"""How a section may be cut to fit the context window: ``keep`` (never: the instruction,
the options, the reply format), ``oldest`` (drop its first lines, keeping the newest: a
history), ``shorten`` (cut each line's end: scene text, a model's summary),
``shorten_start`` (cut the start, keeping the end: a one-line trajectory)."""


class Section(str):
    """A prompt section's text (``Title:`` then the body) that knows its ``title``,
    ``body`` and ``cut`` rule (one of :data:`CUTS`)."""

    title: str
    body: str
    cut: str

    def __new__(cls, title: str, body: str, cut: str = "keep") -> Section:
        if cut not in CUTS:
            raise ValueError(f"cut must be one of {CUTS}, got {cut!r}")
        text = super().__new__(cls, f"{title}:\n{body}")
        text.title, text.body, text.cut = title, body, cut
        return text


@dataclass
class Prompt:
    """A user turn under construction (see the module docs)."""

    parts: list[tuple[str, Any]] = field(default_factory=list)

    def section(self, title: str, text: str, cut: str = "keep") -> None:
        """Add ``Title:`` followed by ``text`` (skipped when empty); ``cut``: how it may be
        shortened to fit the context window (:data:`CUTS`)."""
        if text.strip():
            self.parts.append(("text", Section(title, text.strip(), cut)))

    def image(self, label: str, image: np.ndarray) -> None:
        """Add ``Image <label>:`` and the image."""
        self.parts.append(("text", f"Image {label}:"))
        self.parts.append(("image", (label, ImagePart.from_array(np.ascontiguousarray(image), "low", jpeg=True))))

    def messages(self, system: str) -> list[ChatMessage]:
        """The chat messages: the system prompt and one user turn."""
        parts: list[Any] = []
        for kind, value in self.parts:
            if kind == "image":
                parts.append(value[1])
            elif parts and isinstance(parts[-1], str):
                parts[-1] += "\n\n" + value
            else:
                parts.append(value)
        return [ChatMessage.system(system), ChatMessage("user", tuple(parts))]

    def describe(self, system: str) -> list[dict[str, str]]:
        """The trace form: text messages, each image replaced by ``<image LABEL>``."""
        text = "\n\n".join(value if kind == "text" else f"<image {value[0]}>" for kind, value in self.parts)
        return [{"role": "system", "content": system}, {"role": "user", "content": text}]


def describe_messages(messages: Sequence[ChatMessage]) -> list[dict[str, str]]:
    """Trace form of any chat messages (images as ``<image sha256:…>``)."""
    return [{"role": m.role, "content": "\n".join(
        p if isinstance(p, str) else f"<image sha256:{p.sha256[:12]}>" for p in m.parts)} for m in messages]


def instruction_text(instruction: str, *, long_horizon: bool = False, stops: int = 0,
                     subgoals: Sequence[str] = ()) -> str:
    """The instruction; on a long-horizon episode, what the agent knows of its goals.

    Without ``subgoals`` that is only what it observes and did: the instruction chains
    goals, and it has stopped ``stops`` times. With the privileged split (``subgoals``),
    each sub-goal's instruction and the active one (``stops`` of them reached).
    """
    if not long_horizon:
        return instruction
    if not subgoals:
        return (f"{instruction}\n\nThis instruction chains several goals: STOP each time you reach one, "
                f"in order; the episode ends at the last. You have stopped {stops} time(s) so far.")
    legs, leg = len(subgoals), min(stops, len(subgoals) - 1)
    lines = [instruction, "", f"This is a sequence of {legs} goals; STOP at each goal in order."]
    lines += [f"{'->' if i == leg else '  '} goal {i + 1}: {text}" for i, text in enumerate(subgoals)]
    lines.append(f"You are now on goal {leg + 1} of {legs}.")
    return "\n".join(lines)


def candidate_cards(candidates: Sequence[Candidate], *, views: Sequence[ViewObjects] | None = None,
                    notes: Mapping[str, str] | None = None) -> str:
    """One line per candidate: ``B: forward-left, 1.2 m (view 1; sees: sofa 2.5 m) …``."""
    lines = []
    for c in candidates:
        extras = [f"view {c.view}"]
        if views is not None:
            seen = ", ".join(f"{n} {d:.1f} m" for n, d in views[c.view].objects)
            extras.append(f"sees: {seen or 'nothing notable'}")
        line = f"{c.id}: {c.phrase} ({'; '.join(extras)})"
        if notes and c.id in notes:
            line += f" {notes[c.id]}"
        lines.append(line)
    return "\n".join(lines) or "(no free space around you: every direction is blocked)"


def action_options(candidates: Sequence[Candidate], *, can_ask: bool, can_stop: bool = True,
                   stop_first: bool = False) -> list[str]:
    """The valid action words: candidate ids, STOP (unless withheld; first with
    ``stop_first``, as MapGPT lists it), and ASK when allowed."""
    stop = [STOP] if can_stop or not candidates else []
    ids = [c.id for c in candidates]
    return (stop + ids if stop_first else ids + stop) + ([ASK] if can_ask else [])


def view_label(index: int, step_deg: float) -> str:
    """``view 3 (90 deg left)``: a panorama view and its heading from the agent's."""
    deg = round(index * step_deg) % 360
    where = "ahead" if deg == 0 else "behind" if deg == 180 else \
        f"{deg} deg left" if deg < 180 else f"{360 - deg} deg right"
    return f"view {index} ({where})"


def spread_views(views: int, budget: int, first: Sequence[int] = ()) -> list[int]:
    """``budget`` of ``views`` panorama views: ``first`` ones, then the others spread evenly."""
    chosen = list(dict.fromkeys(first))[:budget]
    rest = [v for v in range(views) if v not in chosen]
    need = min(budget - len(chosen), len(rest))
    if need > 0:
        chosen += [rest[int(i * len(rest) / need)] for i in range(need)]
    return sorted(chosen)


def history_text(entries: Sequence[str], window: int) -> str:
    """The last ``window`` step entries, all with ``window = 0`` (older ones are
    summarised by a count)."""
    if not entries:
        return "(this is the first step)"
    shown = list(entries[-window:]) if window else list(entries)
    skipped = len(entries) - len(shown)
    head = [f"({skipped} earlier step(s) not shown)"] if skipped else []
    return "\n".join(head + shown)


def dialogue_text(exchanges: Sequence[tuple[str, str]], questions_left: int) -> str:
    """Questions asked so far with the oracle's answers, and how many remain when ASK is
    offered (``questions_left = 0``: not offered, so nothing is said about asking)."""
    lines = [f"Q: {q}\nA: {a}" for q, a in exchanges]
    if questions_left:
        lines.append(f"You may ask {questions_left} more question(s) (action ASK with a question).")
    return "\n".join(lines)


def reply_schema(fields: Mapping[str, str], options: Sequence[str]) -> dict[str, object]:
    """The JSON schema of a decision reply, sent as structured output where the server takes
    it: every field a string described as the prompt describes it, ``action`` one of ``options``."""
    properties: dict[str, object] = {name: {"type": "string", "description": text} for name, text in fields.items()}
    properties["action"] = {"type": "string", "enum": list(options)}
    return {"title": "decision", "type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


def output_format(variant: str, fields: Mapping[str, str], options: Sequence[str]) -> str:
    """How to reply: the ordered fields, as a JSON object or as ``Key: value`` lines."""
    names = ", ".join(options)
    if variant == "json":
        body = ", ".join(f'"{k}": "<{v}>"' for k, v in fields.items())
        return (f"Reply with one JSON object and nothing else: {{{body}}}\n"
                f"Write the action as the id alone, no other words.\n\"action\" must be exactly one of: {names}.")
    lines = "\n".join(f"{k.replace('_', ' ').title()}: <{v}>" for k, v in fields.items())
    return (f"Reply in exactly these lines:\n{lines}\nWrite the action as the id alone, no other words.\n"
            f"The action must be exactly one of: {names}.")
