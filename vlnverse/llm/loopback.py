"""An OpenAI-compatible chat-completions server on 127.0.0.1, for tests and benchmarks.

:class:`LoopbackServer` answers ``POST .../chat/completions`` over real HTTP (so the
official ``openai`` client, its retries and timeouts are exercised as they are against a
real endpoint) with whatever its ``answer`` function returns for the request body: a
text, or a :class:`Reply` that can also carry tool calls, an HTTP error status, a delay,
or a raw (e.g. malformed) body. It binds the loopback interface only and counts every
request it receives.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One scripted answer.

    Attributes:
        content: the assistant message's text (None: no content, e.g. with tool calls).
        tool_calls: ``{"name", "arguments"}`` mappings answered as OpenAI tool calls.
        status: HTTP status; anything but 200 is sent as an API error body.
        headers: extra response headers (e.g. ``Retry-After``; a ``content-type`` replaces
            the JSON one).
        delay_s: seconds to wait before answering.
        raw: a response body sent as is (overrides everything else but the status).
        choices: further choices' texts after ``content`` (a server honouring ``n``).
    """

    content: str | None = ""
    tool_calls: Sequence[Mapping[str, Any]] = ()
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    raw: bytes | None = None
    choices: Sequence[str] = ()


def word_count(value: Any) -> int:
    """A deterministic stand-in for a token count: words in the JSON form of ``value``."""
    return len(json.dumps(value).split())


def completion_body(body: Mapping[str, Any], reply: Reply) -> dict[str, Any]:
    """The ``chat.completion`` object answering ``body`` with ``reply``."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function",
             "function": {"name": call["name"], "arguments": json.dumps(call.get("arguments", {}))}}
            for i, call in enumerate(reply.tool_calls)
        ]
    prompt = word_count(body.get("messages", []))
    completion = word_count(reply.content or "") + word_count(list(reply.tool_calls))
    completion += sum(word_count(text) for text in reply.choices)
    extra = [{"index": i, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
             for i, text in enumerate(reply.choices, 1)]
    return {
        "id": "chatcmpl-loopback", "object": "chat.completion", "created": 1700000000,
        "model": body.get("model", "loopback"),
        "choices": [{"index": 0, "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                     "message": message}, *extra],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion},
    }


class LoopbackServer:
    """A threaded HTTP server on ``127.0.0.1`` speaking the chat-completions API.

    Args:
        answer: maps a request body to a :class:`Reply` or a text.
        delay_s: seconds every answer waits (added to a reply's own delay).
        models: the model names ``GET .../models`` lists.
        model_fields: further fields of every listed model (vLLM's ``max_model_len``,
            llama.cpp's ``meta``).
        routes: other paths (``/props``, ``/api/show``) → the JSON body answered to a GET
            or POST there (servers that state their context window).

    Attributes:
        url: the ``base_url`` to give a client (``http://127.0.0.1:PORT/v1``).
        requests: every request body received, in order.
    """

    def __init__(self, answer: Callable[[dict[str, Any]], Reply | str], *, delay_s: float = 0.0,
                 models: Sequence[str] = ("loopback",), model_fields: Mapping[str, Any] | None = None,
                 routes: Mapping[str, Any] | None = None) -> None:
        self.answer = answer
        self.delay_s = delay_s
        self.models = tuple(models)
        self.model_fields = dict(model_fields or {})
        self.routes = dict(routes or {})
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                self.reply(*server.list_models(self.path))

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                self.reply(*server.respond(self.path, raw))

            def reply(self, status: int, headers: Mapping[str, str], payload: bytes) -> None:
                self.send_response(status)
                headers = {"content-type": "application/json", **{k.lower(): v for k, v in headers.items()}}
                headers["content-length"] = str(len(payload))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                try:
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="loopback-llm", daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def calls(self) -> int:
        """Requests received so far."""
        with self._lock:
            return len(self.requests)

    def list_models(self, path: str) -> tuple[int, dict[str, str], bytes]:
        """Status, headers and body answering ``GET``: the model list at ``.../models``, a route's body."""
        if path in self.routes:
            return 200, {}, json.dumps(self.routes[path]).encode()
        if not path.endswith("/models"):
            return 404, {}, b'{"error": {"message": "not found"}}'
        data = [{"id": name, "object": "model", "created": 1700000000, "owned_by": "loopback", **self.model_fields}
                for name in self.models]
        return 200, {}, json.dumps({"object": "list", "data": data}).encode()

    def respond(self, path: str, raw: bytes) -> tuple[int, dict[str, str], bytes]:
        """Status, headers and body answering one request."""
        if path in self.routes:
            return 200, {}, json.dumps(self.routes[path]).encode()
        if not path.endswith("/chat/completions"):
            return 404, {}, b'{"error": {"message": "not found"}}'
        body = json.loads(raw)
        with self._lock:
            self.requests.append(body)
        reply = self.answer(body)
        reply = reply if isinstance(reply, Reply) else Reply(content=reply)
        delay = self.delay_s + reply.delay_s
        if delay > 0:
            time.sleep(delay)
        if reply.raw is not None:
            return reply.status, dict(reply.headers), reply.raw
        if reply.status != 200:
            error = {"error": {"message": f"scripted {reply.status}", "type": "scripted"}}
            return reply.status, dict(reply.headers), json.dumps(error).encode()
        return 200, dict(reply.headers), json.dumps(completion_body(body, reply)).encode()

    def close(self) -> None:
        """Stop serving and release the port."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> LoopbackServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
