"""Record/replay of LLM calls through JSONL transcripts.

A transcript line is ``{"key", "request", "response"}``: ``request`` is the request's JSON
form (images as SHA-256 digests), ``response`` is :meth:`LLMResponse.to_dict`; a request
with images also stores each image's coarse signature (``image_signatures``, by digest). Replay
recomputes every key from its ``request``, so transcripts may be written by hand (tests
of the instruction pipeline do): missing parameters take their defaults and a message's
``content`` may be a plain string. A request asked ``k`` times is answered by its ``k``-th
recorded response, so a run with retries replays exactly.

Rendering is not bit-identical across machines and library versions, so a re-rendered
image changes a request's hash. When no recorded request has the exact hash, replay
takes the recorded request that matches in everything but its images and whose images'
signatures (8 x 8 thumbnails) are each within :data:`IMAGE_TOLERANCE` of the new ones:
a few changed pixel values barely move a thumbnail, a different view moves it a lot.

The model's context window travels with the calls, so a run whose agents cut their prompts
to fit it replays exactly: each line notes the window known when it was sent
(``context_window``), and a request the server refused as too long is a line with
``context_error`` (``window``, ``requested``, ``message``) in place of ``response``. Replay
starts from the first line's window and, at such a line, learns the window and raises
:class:`~vlnverse.errors.LLMContextExceeded` as the server did.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import threading
from collections import defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from vlnverse.errors import ConfigError, LLMContextExceeded, ReplayMissError
from vlnverse.llm.base import LLMClient, WrapperClient
from vlnverse.llm.images import signature_distance
from vlnverse.llm.pricing import PriceTable
from vlnverse.llm.types import ROLES, GenerationParams, LLMRequest, LLMResponse, hash_described
from vlnverse.redact import scrub

log = logging.getLogger(__name__)

try:  # POSIX advisory locks keep concurrent writers' lines whole.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


@contextlib.contextmanager
def _locked(handle: IO) -> Iterator[None]:
    if fcntl is None:  # pragma: no cover
        yield
        return
    fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _canonical_content(content: Any, where: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise ConfigError(f"{where}: content must be a string or a list of parts")
    parts = []
    for part in content:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text" and isinstance(part.get("text"), str):
            parts.append({"type": "text", "text": part["text"]})
        elif kind == "image" and isinstance(part.get("sha256"), str):
            parts.append(
                {
                    "type": "image",
                    "mime": part.get("mime", "image/png"),
                    "sha256": part["sha256"],
                    "detail": part.get("detail", "auto"),
                }
            )
        else:
            raise ConfigError(f"{where}: bad content part {part!r:.120}")
    return parts


def canonical_request(described: Mapping[str, Any], *, where: str = "request") -> dict[str, Any]:
    """Normalize a (possibly hand-written) request JSON to :meth:`LLMRequest.describe` form."""
    if not isinstance(described, Mapping) or not isinstance(described.get("model"), str):
        raise ConfigError(f"{where}: a request needs a string 'model'")
    messages = described.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ConfigError(f"{where}: a request needs a non-empty 'messages' list")
    canonical_messages = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or "role" not in message or "content" not in message:
            raise ConfigError(f"{where}: message {i} needs 'role' and 'content'")
        if message["role"] not in ROLES:
            raise ConfigError(
                f"{where}: message {i} role must be one of {ROLES}, got {message['role']!r}"
            )
        content = _canonical_content(message["content"], f"{where} message {i}")
        canonical_messages.append({"role": message["role"], "content": content})
    params = dict(described.get("params") or {})
    if isinstance(params.get("stop"), list):
        params["stop"] = tuple(params["stop"])
    return {
        "model": described["model"],
        "messages": canonical_messages,
        "params": GenerationParams.from_kwargs(**params).describe(),
    }


IMAGE_TOLERANCE = 8.0
"""Largest thumbnail difference (0-255) at which a re-rendered image still replays."""


def transcript_record(request: LLMRequest, response: LLMResponse | None, *, context_window: int | None = None,
                      context_error: LLMContextExceeded | None = None) -> dict[str, Any]:
    """The transcript line (as a dict) for one call: its answer, or the server's refusal of
    it as too long (``context_error``); with the context window known when it was sent."""
    record: dict[str, Any] = {"key": request.key, "request": request.describe()}
    if context_error is not None:
        record["context_error"] = {"window": context_error.window, "requested": context_error.requested,
                                   "message": str(context_error)[:300]}
    else:
        record["response"] = response.to_dict()
    if context_window is not None:
        record["context_window"] = context_window
    images = [p for m in request.messages for p in m.images]
    if images:
        record["image_signatures"] = {image.sha256: image.signature() for image in images}
    return record


def image_free_key(described: Mapping[str, Any]) -> str:
    """The hash of a request's JSON form with every image digest blanked (what two
    requests that differ only in their images share)."""
    blank = json.loads(json.dumps(described))
    for message in blank["messages"]:
        for part in message["content"]:
            if part.get("type") == "image":
                part["sha256"] = "*"
    return hash_described(blank)


def append_record(path: str | os.PathLike, record: Mapping[str, Any]) -> None:
    """Append one JSON line to ``path``, whole even with concurrent writers, and fsync it."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    line = scrub(json.dumps(record, sort_keys=True, ensure_ascii=False)) + "\n"
    with open(target, "a", encoding="utf-8") as handle, _locked(handle):
        handle.write(line)
        handle.flush()
        os.fsync(handle.fileno())


def read_transcript(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Read a transcript; each record gets its key recomputed from its request.

    Raises:
        ConfigError: the file is unreadable or a line is malformed (names the line).
    """
    target = Path(path)
    try:
        lines = target.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"cannot read LLM transcript {target}: {exc.strerror or exc}") from exc
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{target}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{where}: not valid JSON ({exc.msg})") from exc
        if not isinstance(record, dict) or "request" not in record or not (
                "response" in record or isinstance(record.get("context_error"), dict)):
            raise ConfigError(f"{where}: a transcript line needs 'request' and 'response' (or 'context_error')")
        request = canonical_request(record["request"], where=where)
        if "response" in record:
            LLMResponse.from_dict(record["response"])  # validates early, with the line number
        window = record.get("context_window")
        records.append(
            {"key": hash_described(request), "request": request, "response": record.get("response"),
             "context_error": record.get("context_error"),
             "context_window": window if isinstance(window, int) and not isinstance(window, bool) else None,
             "image_signatures": dict(record.get("image_signatures") or {})}
        )
    return records


class RecordingClient(WrapperClient):
    """Wraps a client and appends every call to a JSONL transcript."""

    def __init__(self, inner: LLMClient, path: str | os.PathLike) -> None:
        super().__init__(inner)
        self.path = Path(path)

    def send(self, request: LLMRequest) -> LLMResponse:
        window = self.context_window
        try:
            response = self.inner.send(request)
        except LLMContextExceeded as exc:  # the server's refusal replays as one
            append_record(self.path, transcript_record(request, None, context_window=window, context_error=exc))
            raise
        append_record(self.path, transcript_record(request, response, context_window=window))
        return response



class ReplayClient(LLMClient):
    """Answers from a transcript, keyed by the request hash; no network, no model.

    Args:
        path: the JSONL transcript.
        model: model name of the requests; default: the transcript's only model.
        prices: price table (replayed responses keep their recorded cost).
    """

    def __init__(
        self, path: str | os.PathLike, *, model: str | None = None, prices: PriceTable | None = None
    ) -> None:
        self.path = Path(path)
        records = read_transcript(self.path)
        models = sorted({r["request"]["model"] for r in records})
        if model is None:
            if len(models) != 1:
                found = ", ".join(models) or "none"
                raise ConfigError(
                    f"transcript {self.path} holds models [{found}]; pass model=... to choose one"
                )
            model = models[0]
        super().__init__(model, prices=prices)
        self._answers: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self._by_layout: dict[str, dict[str, list[str]]] = defaultdict(dict)
        if records and records[0]["context_window"] is not None:
            self.learn_context(records[0]["context_window"], "transcript")
        for record in records:
            self._answers[record["key"]].append(record)
            digests = [p["sha256"] for m in record["request"]["messages"] for p in m["content"]
                       if p["type"] == "image"]
            signatures = record["image_signatures"]
            if digests and all(d in signatures for d in digests):
                layout = self._by_layout[image_free_key(record["request"])]
                layout[record["key"]] = [signatures[d] for d in digests]
        self._served: dict[str, int] = defaultdict(int)
        self._lock = threading.Lock()
        # Replay sends the requests the recorded run sent, so it claims what that client did.
        params = [r["request"]["params"] for r in records]
        self.supports_json_schema = any("json_schema" in p for p in params)
        self.supports_tools = any("tools" in p for p in params)

    def __len__(self) -> int:
        return sum(len(v) for v in self._answers.values())

    def similar_key(self, request: LLMRequest) -> str | None:
        """The recorded request that differs from ``request`` only by images within
        :data:`IMAGE_TOLERANCE` (the closest), or None."""
        images = [p for m in request.messages for p in m.images]
        candidates = self._by_layout.get(image_free_key(request.describe())) if images else None
        if not candidates:
            return None
        wanted = [image.signature() for image in images]
        best, best_distance = None, IMAGE_TOLERANCE
        for key, recorded in candidates.items():
            distance = max(signature_distance(a, b) for a, b in zip(wanted, recorded, strict=True))
            if distance <= best_distance:
                best, best_distance = key, distance
        return best

    def send(self, request: LLMRequest) -> LLMResponse:
        key = request.key
        if key not in self._answers:
            key = self.similar_key(request) or key
            if key != request.key:
                log.info("replaying request %s by image similarity (as %s)", request.key[:12], key[:12])
        with self._lock:
            answers = self._answers.get(key, [])
            index = self._served[key]
            if index >= len(answers):
                last = request.messages[-1].text
                snippet = " ".join(last.split())[:80]
                seen = (
                    f"it holds {len(answers)} response(s) for it"
                    if answers
                    else "it has no such request"
                )
                raise ReplayMissError(
                    f"replay transcript {self.path} cannot answer request {request.key} "
                    f"(model {request.model}, call {index + 1}; {seen}); last message: {snippet!r}. "
                    "Re-record the run with a RecordingClient."
                )
            self._served[key] = index + 1
        refused = answers[index]["context_error"]
        if refused is not None:
            if isinstance(refused.get("window"), int):
                self.learn_context(refused["window"], "transcript")
            raise LLMContextExceeded(str(refused.get("message", "the request was too long for the context")),
                                     refused.get("window"), refused.get("requested"))
        response = LLMResponse.from_dict(answers[index]["response"])
        return dataclasses.replace(response, model=response.model or request.model, key=request.key)
