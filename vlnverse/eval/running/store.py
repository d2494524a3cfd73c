"""``episodes.jsonl``: the per-episode results of a run, appended as episodes finish.

One JSON object per line, keyed by ``(episode_id, physics)``. Each record is written with
a single ``write`` of the whole line, then flushed and fsync'ed, so a crash loses at most
the episode in flight. Re-opening the file skips the finished keys; a torn last line (a
crash mid-write) is cut off and logged. A key is never written twice; :meth:`ResultStore.discard`
takes records out (rewriting the file atomically, every other line byte for byte) so that
their episodes run again (``--retry-errors``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import pickle
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from vlnverse.errors import DatasetError
from vlnverse.fileio import write_bytes_atomic, write_failure
from vlnverse.redact import scrub

logger = logging.getLogger(__name__)

Key = tuple[str, str]


def json_safe(value: Any) -> Any:
    """``value`` with numpy types as Python ones and NaN/inf as ``None`` (strict JSON)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return json_safe(value.tolist())
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        return json_safe(value.item())
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot store {type(value).__name__} in episodes.jsonl")


TRACE_TEXT_CHARS = 16 * 1024
"""Default of the most characters kept of one text of an agent trace (a model's reply)."""
TRACE_DEPTH = 48
"""Nesting levels of an agent trace that are kept (a model's plan parsed as it came)."""


def bounded(value: Any, max_chars: int = TRACE_TEXT_CHARS, max_depth: int = TRACE_DEPTH) -> tuple[Any, int]:
    """``value`` (an agent trace) with every text longer than ``max_chars`` cut there (its
    length and SHA-256 appended) and containers nested deeper than ``max_depth`` replaced
    by a note; returns it and how many texts and containers were cut."""
    cut = 0

    def walk(item: Any, depth: int) -> Any:
        nonlocal cut
        if isinstance(item, str):
            if len(item) <= max_chars:
                return item
            cut += 1
            digest = hashlib.sha256(item.encode("utf-8", "replace")).hexdigest()
            return f"{item[:max_chars]} [cut: {len(item)} characters in all, sha256 {digest}]"
        if isinstance(item, (Mapping, list, tuple)):
            if depth >= max_depth:
                cut += 1
                return f"[cut: nested deeper than {max_depth} levels]"
            if isinstance(item, Mapping):
                return {key: walk(v, depth + 1) for key, v in item.items()}
            return [walk(v, depth + 1) for v in item]
        return item

    return walk(value, 0), cut


def unstorable(value: Any) -> str | None:
    """Why ``value`` cannot go into ``episodes.jsonl`` or travel from a worker process (a
    type JSON lacks, nesting too deep to write or pickle), or None when it can."""
    try:
        json.dumps(json_safe(value), allow_nan=False)
        pickle.dumps(value)
    except (TypeError, ValueError, RecursionError, pickle.PicklingError, AttributeError) as exc:
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    return None


def error_record(record: Mapping[str, Any], problem: str) -> dict[str, Any]:
    """``record`` as an episode error (``error_source = "store"``) without its agent trace and
    LLM usage, for a record that cannot be stored or sent; ``problem`` says why."""
    out = {k: v for k, v in record.items() if k not in ("agent_trace", "llm")}
    out.update(agent_trace=None, fail_reason="error", error_source="store",
               error=f"the episode's record cannot be stored: {problem}")
    return out


def dumps_record(record: Mapping[str, Any]) -> str:
    """The canonical JSON line of a record (sorted keys, compact, no newline; known secret
    values masked, :func:`vlnverse.redact.scrub`)."""
    return scrub(json.dumps(json_safe(record), sort_keys=True, separators=(",", ":"), allow_nan=False,
                            ensure_ascii=False))


def record_key(record: Mapping[str, Any]) -> Key:
    """``(episode_id, physics)`` of a record."""
    return str(record["episode_id"]), str(record["physics"])


class ResultStore:
    """The resumable ``episodes.jsonl`` of one run.

    Args:
        path: The JSONL file (created with its folder when missing).

    Raises:
        DatasetError: a line other than the last is not a JSON object with
            ``episode_id`` and ``physics`` (the file was edited or is not ours).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._records: dict[Key, dict[str, Any]] = {}
        self._load()

    def _load(self) -> None:
        if not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return
        data = self.path.read_bytes()
        good_end = 0
        lines = data.split(b"\n")
        for number, line in enumerate(lines, start=1):
            complete = number < len(lines)  # the piece after the last newline is unfinished
            if not line.strip():
                if complete:
                    good_end += len(line) + 1
                continue
            try:
                record = json.loads(line) if complete else None
                key = record_key(record) if record is not None else None
            except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError):
                key = None
            if key is None:
                if number >= len(lines) - 1:
                    break  # a torn final line: dropped below
                raise DatasetError(f"{self.path}:{number}: not an episode record; refusing to resume over it")
            self._records.setdefault(key, record)
            good_end += len(line) + 1
        if good_end < len(data):
            logger.warning("%s: dropping %d bytes of an unfinished record (interrupted run)",
                           self.path, len(data) - good_end)
            with open(self.path, "r+b") as handle:
                handle.truncate(good_end)
                handle.flush()
                os.fsync(handle.fileno())

    def __contains__(self, key: object) -> bool:
        return key in self._records

    def __len__(self) -> int:
        return len(self._records)

    def keys(self) -> set[Key]:
        """The finished ``(episode_id, physics)`` keys."""
        return set(self._records)

    def get(self, key: Key) -> dict[str, Any] | None:
        return self._records.get(key)

    def records(self) -> Iterator[dict[str, Any]]:
        """Finished records in the order they were written."""
        return iter(self._records.values())

    def discard(self, keys: set[Key]) -> int:
        """Take the records of ``keys`` out of the file (atomically); returns how many there were.

        Raises:
            OutputError: the file cannot be rewritten.
        """
        gone = keys & set(self._records)
        if not gone:
            return 0
        kept = [line for line in self.path.read_bytes().splitlines(keepends=True)
                if not line.strip() or record_key(json.loads(line)) not in gone]
        write_bytes_atomic(self.path, b"".join(kept))
        for key in gone:
            del self._records[key]
        return len(gone)

    def append(self, record: Mapping[str, Any]) -> bool:
        """Write ``record`` durably; returns False (and writes nothing) if its key is done.

        Raises:
            OutputError: the file cannot be written (disk full, read-only file system).
        """
        key = record_key(record)
        if key in self._records:
            return False
        line = (dumps_record(record) + "\n").encode("utf-8")
        try:
            with open(self.path, "ab") as handle:
                handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:  # a torn line left by a full disk is cut off on resume
            raise write_failure(exc, self.path) from None
        self._records[key] = json.loads(line)
        return True
