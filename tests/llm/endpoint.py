"""An OpenAI-compatible chat-completions endpoint served in-process, for tests.

``ChatEndpoint`` is the server logic (it parses real HTTP requests the ``openai`` SDK
sends and answers with the API's JSON shape); tests mount it on an
``httpx.MockTransport`` or a real local HTTP server.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

API_KEY_ENV = "VLNVERSE_TEST_LLM_KEY"


def echo_answer(body: dict[str, Any]) -> str:
    """Deterministic answer: the last user text and the number of images, as JSON."""
    last = body["messages"][-1]
    content = last["content"]
    if isinstance(content, str):
        text, images = content, 0
    else:
        text = "\n".join(p["text"] for p in content if p["type"] == "text")
        images = sum(p["type"] == "image_url" for p in content)
    return json.dumps({"echo": text, "images": images, "temperature": body.get("temperature")})


def completion_json(body: dict[str, Any], texts: list[str]) -> dict[str, Any]:
    """A chat.completion object as the API returns it."""
    prompt_tokens = sum(len(json.dumps(m["content"]).split()) for m in body["messages"])
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1700000000,
        "model": body["model"] + "-2024-08-06",
        "choices": [
            {
                "index": i,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": text},
            }
            for i, text in enumerate(texts)
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": sum(len(t.split()) for t in texts),
            "total_tokens": prompt_tokens + sum(len(t.split()) for t in texts),
        },
    }


@dataclass
class ChatEndpoint:
    """Server logic of ``POST /v1/chat/completions``.

    Attributes:
        answer: maps the request body to the answer text.
        failures: (status, headers) to return, in order, before answering normally.
        requests: every request body received.
        headers: every request's headers.
        hold: when given, every request waits until it is set before it is answered (to
            provoke client timeouts without racing the clock).
        arrived: released once per request received (wait on it for a request to arrive).
    """

    answer: Callable[[dict[str, Any]], str] = echo_answer
    failures: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    hold: threading.Event | None = None
    arrived: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))

    def respond(
        self, method: str, path: str, headers: dict[str, str], raw: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        if method != "POST" or not path.endswith("/chat/completions"):
            return 404, {}, b'{"error": {"message": "not found"}}'
        body = json.loads(raw)
        self.requests.append(body)
        self.arrived.release()
        if self.hold is not None:
            self.hold.wait()
        self.headers.append(headers)
        if self.failures:
            status, extra = self.failures.pop(0)
            error = {"error": {"message": f"injected {status}", "type": "server_error"}}
            return status, extra, json.dumps(error).encode()
        texts = [self.answer(body) for _ in range(body.get("n", 1))]
        return 200, {}, json.dumps(completion_json(body, texts)).encode()

    def transport(self) -> httpx.MockTransport:
        def handle(request: httpx.Request) -> httpx.Response:
            status, extra, payload = self.respond(
                request.method, request.url.path, dict(request.headers), request.content
            )
            return httpx.Response(
                status, content=payload, headers={"content-type": "application/json", **extra}
            )

        return httpx.MockTransport(handle)


class _Handler(BaseHTTPRequestHandler):
    endpoint: ChatEndpoint

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        raw = self.rfile.read(int(self.headers["Content-Length"]))
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, extra, payload = self.endpoint.respond("POST", self.path, headers, raw)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for key, value in extra.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def serve_http(endpoint: ChatEndpoint) -> Iterator[str]:
    """Serve ``endpoint`` over real HTTP on 127.0.0.1; yields its ``/v1`` base URL."""
    handler = type("Handler", (_Handler,), {"endpoint": endpoint})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
