"""An OpenAI-compatible chat-completions endpoint served in-process, for tests.

``ChatEndpoint`` is the server logic (it parses real HTTP requests the ``openai`` SDK
sends and answers with the API's JSON shape); tests mount it on an
``httpx.MockTransport`` or a real local HTTP server.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
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
        delay_s: seconds to wait before answering (to provoke client timeouts).
    """

    answer: Callable[[dict[str, Any]], str] = echo_answer
    failures: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    delay_s: float = 0.0

    def respond(
        self, method: str, path: str, headers: dict[str, str], raw: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        if method != "POST" or not path.endswith("/chat/completions"):
            return 404, {}, b'{"error": {"message": "not found"}}'
        body = json.loads(raw)
        self.requests.append(body)
        time.sleep(self.delay_s)
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
