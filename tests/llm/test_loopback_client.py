"""The real ``openai`` client over a loopback HTTP server: structured output and its
emulation, tool calls and their emulation, repair, 429s, timeouts and empty replies."""

from __future__ import annotations

import json

import pytest

from vlnverse.errors import LLMRequestError, LLMSchemaError
from vlnverse.llm import CachedClient, RecordingClient, ReplayClient, make_llm
from vlnverse.llm.loopback import LoopbackServer, Reply

KEY_ENV = "VLNVERSE_TEST_LOOPBACK_KEY"
SCHEMA = {"type": "object", "properties": {"action": {"type": "string", "enum": ["left", "right", "stop"]}},
          "required": ["action"], "additionalProperties": False}
TOOLS = [{"name": "move", "description": "Move to a candidate.",
          "parameters": {"type": "object", "properties": {"candidate": {"type": "integer"}},
                         "required": ["candidate"]}},
         {"name": "stop", "description": "Stop here.", "parameters": {"type": "object", "properties": {}}}]


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-loopback")


def client(server, **options):
    opts = {"base_url": server.url, "api_key_env": KEY_ENV, "max_retries": 0, "timeout": 5.0, **options}
    return make_llm("openai:gpt-4o", **opts)


def scripted(*replies):
    """Answer the k-th request with ``replies[k]`` (the last one repeats)."""
    queue = list(replies)
    return lambda body: queue.pop(0) if len(queue) > 1 else queue[0]


def test_native_structured_output():
    with LoopbackServer(scripted('{"action": "left"}')) as server:
        value, response = client(server).complete_structured("Where now?", SCHEMA)
    assert value == {"action": "left"} and response.usage.total_tokens > 0
    sent = server.requests[0]["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["schema"] == SCHEMA


def test_server_without_structured_output_falls_back_to_the_prompt():
    def answer(body):
        if body.get("response_format", {}).get("type") == "json_schema":
            return Reply(status=400)
        return '```json\n{"action": "stop"}\n```'

    with LoopbackServer(answer) as server:
        llm = client(server)
        value, _ = llm.complete_structured("Where now?", SCHEMA)
        assert value == {"action": "stop"} and llm.supports_json_schema is False
        llm.complete_structured("And now?", SCHEMA)
    assert len(server.requests) == 3  # one rejected, then only prompt-based requests
    emulated = server.requests[1]
    assert emulated["response_format"] == {"type": "json_object"}
    assert '"enum": ["left", "right", "stop"]' in emulated["messages"][0]["content"]


def test_malformed_json_is_repaired_within_the_bound():
    with LoopbackServer(scripted("I think left", '{"action": "up"}', '{"action": "right"}')) as server:
        value, _ = client(server).complete_structured("Where now?", SCHEMA, repairs=2)
    assert value == {"action": "right"} and len(server.requests) == 3
    repair = server.requests[1]["messages"]
    assert repair[-2] == {"role": "assistant", "content": "I think left"}
    assert "could not be used" in repair[-1]["content"]
    with LoopbackServer(scripted("no", "still no")) as server, pytest.raises(LLMSchemaError, match="1 repair"):
        client(server).complete_structured("Where now?", SCHEMA)
    assert len(server.requests) == 2


def test_empty_replies_are_repaired_then_fail_typed():
    with LoopbackServer(scripted("", '{"action": "left"}')) as server:
        value, _ = client(server).complete_structured("Where now?", SCHEMA)
    assert value == {"action": "left"}
    assert server.requests[1]["messages"][-2]["content"] == "(empty reply)"
    with LoopbackServer(scripted(Reply(content=None))) as server, pytest.raises(LLMSchemaError, match="empty"):
        client(server).complete_structured("Where now?", SCHEMA)


def test_native_tool_calls():
    reply = Reply(content=None, tool_calls=[{"name": "move", "arguments": {"candidate": 3}}])
    with LoopbackServer(scripted(reply)) as server:
        response = client(server).complete_tools("Go.", TOOLS, tool_choice="required")
    assert [(c.name, dict(c.arguments)) for c in response.tool_calls] == [("move", {"candidate": 3})]
    sent = server.requests[0]
    assert [t["function"]["name"] for t in sent["tools"]] == ["move", "stop"]
    assert sent["tool_choice"] == "required"


def test_tool_calls_are_emulated_for_servers_without_them():
    bad = Reply(content=None, tool_calls=[{"name": "move", "arguments": {"candidate": "three"}}])

    def answer(body):
        if "tools" in body:
            return Reply(status=400)
        return '{"tool": "move", "arguments": {"candidate": 2}}'

    with LoopbackServer(answer) as server:
        llm = client(server)
        response = llm.complete_tools("Go.", TOOLS)
        assert llm.supports_tools is False
    assert response.tool_calls[0].name == "move" and response.tool_calls[0].arguments == {"candidate": 2}
    assert "tools" not in server.requests[1] and "move: Move to a candidate." in server.requests[1]["messages"][0]["content"]
    with LoopbackServer(scripted("Just walking.")) as server:
        plain = client(server, native_tools=False).complete_tools("Go.", TOOLS)
    assert plain.tool_calls == () and plain.text == "Just walking."
    with LoopbackServer(scripted(bad, Reply(content=None, tool_calls=[{"name": "stop"}]))) as server:
        repaired = client(server).complete_tools("Go.", TOOLS)
    assert repaired.tool_calls[0].name == "stop" and len(server.requests) == 2


def test_tool_calls_survive_the_cache_and_replay(tmp_path):
    reply = Reply(content=None, tool_calls=[{"name": "move", "arguments": {"candidate": 1}}])
    with LoopbackServer(scripted(reply)) as server:
        recorder = RecordingClient(CachedClient(client(server), tmp_path / "cache"), tmp_path / "t.jsonl")
        first = recorder.complete_tools("Go.", TOOLS)
        again = recorder.complete_tools("Go.", TOOLS)
    assert server.calls == 1 and again.cached and again.tool_calls == first.tool_calls
    replay = ReplayClient(tmp_path / "t.jsonl")
    assert replay.supports_tools and replay.complete_tools("Go.", TOOLS).tool_calls == first.tool_calls


def test_429_then_success_and_a_timeout():
    with LoopbackServer(scripted(Reply(status=429, headers={"retry-after": "0"}), '{"action": "left"}')) as server:
        value, _ = client(server, max_retries=2, backoff_base=0.01).complete_structured("Go?", SCHEMA)
    assert value == {"action": "left"} and len(server.requests) == 2
    with LoopbackServer(scripted(Reply(content="late", delay_s=3.0))) as server:
        # The reply would be a success: only the client's timeout makes this call fail.
        with pytest.raises(LLMRequestError, match="failed after 1 attempt.*timed out"):
            client(server, timeout=0.3).complete("Go?")


def test_request_hashes_without_the_new_fields_are_unchanged():
    """Transcripts recorded before structured output and tools still replay."""
    from vlnverse.llm.types import GenerationParams

    described = GenerationParams(temperature=0.0).describe()
    assert set(described) == {"temperature", "max_tokens", "seed", "response_format", "top_p", "n", "stop"}
    assert json.dumps(GenerationParams(tools=TOOLS).describe()["tools"][0]["name"]) == '"move"'
