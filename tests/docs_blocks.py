"""The code blocks of the README and the documentation pages, as the docs tests run them.

Every fenced block has a language. ``python`` blocks run in order in one namespace per
page, ``bash`` blocks run in a shell, ``yaml`` and ``json`` blocks are parsed, and a block
with ``title="NAME"`` is written to the file NAME instead (the page's own example files,
which its other blocks import or name on the command line).
``text`` blocks are not code (command synopses with placeholders, outputs, diagrams). A
block that cannot run here (a real model endpoint, a GPU, hours of work) follows the line
``<!-- not run: REASON -->``, and says so in the page too. A ``yaml`` block after the line
``<!-- agent config: NAME -->`` is also built into agent NAME's config class (keys checked).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

LANGUAGES = ("python", "bash", "yaml", "json", "text")
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<info>.*)$")
_NOT_RUN = re.compile(r"^<!--\s*not run:\s*(?P<why>.*?)\s*-->$")
_TITLE = re.compile(r'title="(?P<title>[^"]+)"')
_AGENT = re.compile(r"^<!--\s*agent config:\s*(?P<agent>[\w.:/-]+)\s*-->$")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a Markdown file."""

    path: Path
    line: int
    language: str
    code: str
    title: str | None = None
    not_run: str | None = None
    agent: str | None = None

    @property
    def where(self) -> str:
        return f"{self.path.name}:{self.line}"


def code_blocks(path: Path) -> list[Block]:
    """The fenced blocks of ``path`` in order; raises ``ValueError`` on an unclosed fence."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, indent, info = match["fence"], len(match["indent"]), match["info"].strip()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i][indent:] if lines[i][:indent].isspace() else lines[i])
            i += 1
        if i == len(lines):
            raise ValueError(f"{path.name}:{start + 1}: unclosed code fence")
        previous = next((lines[j].strip() for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        not_run, agent = _NOT_RUN.match(previous), _AGENT.match(previous)
        title = _TITLE.search(info)
        blocks.append(Block(path, start + 1, info.split()[0] if info else "", "\n".join(body) + "\n",
                            title["title"] if title else None, not_run["why"] if not_run else None,
                            agent["agent"] if agent else None))
        i += 1
    return blocks


def indented_code(path: Path) -> list[int]:
    """Lines that start an indented (unfenced) code block outside a list: the docs fence
    every block so that the tests see it."""
    found: list[int] = []
    fenced, blank_before, last_text = False, False, ""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if _FENCE.match(line):
            fenced, blank_before, last_text = not fenced, False, line
        elif fenced:
            continue
        elif not line.strip():
            blank_before = True
        else:
            in_list = last_text.startswith(" ") or re.match(r"^([-*+]|\d+\.)\s", last_text)
            if line.startswith("    ") and blank_before and not in_list:
                found.append(number)
            blank_before, last_text = False, line
    return found
