"""The OpenAI client against hostile servers on 127.0.0.1: one that never answers is cut off
at the episode's deadline, a huge reply sent whole is the model's answer cut at the cap (never
resent), and bad bytes (invalid UTF-8,
infinite usage counts, JSON nested too deeply) are bad replies, never crashes."""

from __future__ import annotations

import json
import time

import pytest

from vlnverse import deadline
from vlnverse.deadline import EpisodeTimeout
from vlnverse.errors import LLMRequestError
from vlnverse.llm.loopback import LoopbackServer, Reply
from vlnverse.llm.openai_client import OpenAIClient

KEY_ENV = "VLNVERSE_TEST_HOSTILE_KEY"


@pytest.fixture
def client_for(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-test")
    clients = []

    def make(server, **options):
        client = OpenAIClient("gpt-4o", base_url=server.url, api_key_env=KEY_ENV, sleep=lambda s: None, **options)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def body(content="ok", usage=None):
    return {"id": "x", "object": "chat.completion", "created": 1, "model": "gpt-4o",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": usage or {"prompt_tokens": 1, "completion_tokens": 1}}


def test_a_server_that_never_answers_is_cut_off_at_the_episode_deadline(client_for):
    with LoopbackServer(lambda request: Reply(content="late", delay_s=30)) as server:
        client = client_for(server)  # 60 s per attempt, 300 s per call: the episode's 1 s comes first
        started = time.monotonic()
        with deadline.within(1.0), pytest.raises(EpisodeTimeout):
            client.complete("hello?")
        assert time.monotonic() - started < 3 and server.calls == 1


def test_calls_on_helper_threads_are_abandoned_at_the_deadline_not_awaited():
    started = time.monotonic()
    with deadline.within(0.5), pytest.raises(EpisodeTimeout):
        deadline.run_all(lambda seconds: time.sleep(seconds), [0.0, 30.0], workers=2)
    assert time.monotonic() - started < 2
    assert deadline.run_all(lambda x: x * 2, [1, 2, 3], workers=2) == [2, 4, 6]  # no deadline: no bound


def test_a_5_MB_reply_sent_whole_is_the_models_answer_cut_at_the_cap_and_never_resent(client_for):
    huge = json.dumps(body("x" * 5_000_000, usage={"prompt_tokens": 7, "completion_tokens": 1_250_000})).encode()
    with LoopbackServer(lambda request: Reply(raw=huge)) as server:
        client = client_for(server, max_retries=4)
        started = time.monotonic()
        response = client.complete("tell me everything")
        assert time.monotonic() - started < 5 and server.calls == 1   # answered once: not retried, not billed again
        assert response.finish_reason == "length" and response.model == "gpt-4o"
        assert response.text == "x" * len(response.text) and 60_000 < len(response.text) <= 65536
        assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (7, 1_250_000)
        assert not response.usage.estimated                           # read from the body's tail
        assert client_for(server, max_reply_bytes=8_000_000).complete("again").text == "x" * 5_000_000


@pytest.mark.parametrize("ascii_only", [True, False])  # é as a \\u escape, or as two UTF-8 bytes
def test_a_cut_reply_keeps_whole_characters_and_escapes(client_for, ascii_only):
    text = 'é"\\\\' * 30_000          # characters, escaped quotes and backslashes past the cap
    raw = json.dumps(body(text), ensure_ascii=ascii_only).encode()
    with LoopbackServer(lambda request: Reply(raw=raw)) as server:
        response = client_for(server, max_reply_bytes=4096).complete("hi")
    assert response.finish_reason == "length" and text.startswith(response.text) and len(response.text) > 500
    assert len(response.text.encode()) <= 4096 and server.calls == 1
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (1, 1)


def test_a_reply_past_the_drain_limit_is_a_bad_reply(client_for):
    huge = json.dumps(body("x" * 5_000_000)).encode()
    with LoopbackServer(lambda request: Reply(raw=huge)) as server:
        with pytest.raises(LLMRequestError, match="larger than 262144 bytes"):
            client_for(server, max_retries=1, max_reply_bytes=1024).complete("tell me everything")
        assert server.calls == 2  # not sent whole within the limit: retried once, then given up


@pytest.mark.parametrize("raw, problem", [
    (json.dumps(body(usage={"prompt_tokens": 1, "completion_tokens": 1})).replace('1}}', '1e999}}').encode(),
     "token usage is unusable"),
    (b'{"choices": ' + b"[" * 30_000 + b"]" * 30_000 + b"}", "not JSON"),
    (b"\xff\xfe not json at all \xc3\x28", "not JSON"),
])
def test_bad_bytes_are_bad_replies(client_for, raw, problem):
    with LoopbackServer(lambda request: Reply(raw=raw)) as server:
        client = client_for(server, max_retries=1)
        with pytest.raises(LLMRequestError, match=f"failed after 2 attempt.*{problem}"):
            client.complete("hi")
        assert server.calls == 2


def test_invalid_utf8_in_a_reply_is_replaced_not_fatal(client_for):
    raw = json.dumps(body("SENTINEL")).encode().replace(b"SENTINEL", b"go \xff\xfe left")
    tool = body(None)
    tool["choices"][0]["message"]["tool_calls"] = [{"id": "c", "type": "function", "function": {
        "name": "look", "arguments": "[" * 25_000 + "]" * 25_000}}]
    with LoopbackServer(lambda request: Reply(raw=raw)) as server:
        assert client_for(server).complete("hi").text == "go \ufffd\ufffd left"
    with LoopbackServer(lambda request: Reply(raw=json.dumps(tool).encode())) as server:
        calls = client_for(server).complete("hi").tool_calls
        assert calls[0].name == "look" and "_raw" in calls[0].arguments  # too deep to parse: kept raw
