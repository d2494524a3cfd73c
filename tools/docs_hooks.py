"""MkDocs hook: the docstrings' Sphinx roles (``:func:`x```, ``:class:`~a.B```) render as code.

The docstrings serve ``help()`` and the API pages alike; mkdocstrings leaves the roles as text,
so each becomes the code span of its target (``~`` keeps the last name, as Sphinx shows it).
"""

from __future__ import annotations

import re

ROLE = re.compile(r":(?:py:)?(?:func|meth|class|mod|attr|data|exc|obj|const):<code>(~?)([^<]+)</code>")


def render_roles(html: str) -> str:
    """``html`` with every Sphinx role replaced by the code span of its target."""
    return ROLE.sub(lambda m: f"<code>{m[2].rsplit('.', 1)[-1] if m[1] else m[2]}</code>", html)


def on_page_content(html: str, **_) -> str:
    """MkDocs' hook on each page's HTML, before the search index reads it."""
    return render_roles(html)
