"""Printing results for people (rich tables) and for scripts (one JSON object)."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping, Sequence
from typing import Any


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if hasattr(value, "tolist"):
        return _json_safe(value.tolist())
    return value


def print_json(obj: Any) -> None:
    """Print one JSON object on stdout (non-finite floats become null)."""
    sys.stdout.write(json.dumps(_json_safe(obj), sort_keys=True) + "\n")


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Print a rich table on stdout (cells too wide for the console wrap)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for column in columns:
        table.add_column(str(column), overflow="fold")  # long values (paths) wrap, never cut to "…"
    for row in rows:
        table.add_row(*(_format_cell(v) for v in row))
    Console().print(table)


def _format_cell(value: Any) -> str:
    if isinstance(value, float):
        return "inf" if math.isinf(value) else f"{value:.3f}"
    return str(value)
