"""On-disk response cache keyed by the request hash of (model, messages, parameters).

One JSON file per request under ``<dir>/<key[:2]>/<key>.json``, written atomically (temp
file + rename), so concurrent processes can share a cache: a reader sees a whole entry
or none, and two writers of the same key write the same answer. Sampled requests
(temperature > 0) are cached too: a cache makes a run repeatable, which is its purpose
here; give a different ``seed`` to get a different sample.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from vlnverse.fileio import write_json_atomic
from vlnverse.llm.base import LLMClient, WrapperClient
from vlnverse.llm.types import LLMRequest, LLMResponse

log = logging.getLogger(__name__)


class CachedClient(WrapperClient):
    """Wraps a client; answers repeated requests from disk with ``cached=True``.

    Args:
        inner: the client that answers misses.
        directory: cache root (created on first write).
    """

    def __init__(self, inner: LLMClient, directory: str | os.PathLike) -> None:
        super().__init__(inner)
        self.directory = Path(directory)
        self.hits = 0
        self.misses = 0

    def path_for(self, request: LLMRequest) -> Path:
        """Where the entry of ``request`` lives."""
        return self.directory / request.key[:2] / f"{request.key}.json"

    def lookup(self, request: LLMRequest) -> LLMResponse | None:
        """The cached response of ``request``, or None (a corrupt entry counts as absent)."""
        path = self.path_for(request)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            if entry.get("key") != request.key:
                raise ValueError(f"entry key {entry.get('key')!r} does not match")
            return LLMResponse.from_dict(entry["response"], cached=True)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("ignoring unreadable LLM cache entry %s: %s", path, exc)
            return None

    def send(self, request: LLMRequest) -> LLMResponse:
        cached = self.lookup(request)
        if cached is not None:
            self.hits += 1
            return cached
        self.misses += 1
        response = self.inner.send(request)
        write_json_atomic(
            self.path_for(request),
            {"key": request.key, "request": request.describe(), "response": response.to_dict()},
        )
        return response

