"""Feature negotiation by behaviour (issue 35): each server's rejection (status and body as
that server sends it; see :mod:`tests.llm.servers` for the sources) is read as the feature it
names, never retried as a fault, answered by the fixed fallback, and remembered; real faults
keep the retry policy."""

from __future__ import annotations

import json

import pytest

from tests.llm import servers
from tests.llm.servers import PROFILES, server_answer
from vlnverse.errors import LLMRequestError, LLMUnsupportedFeature
from vlnverse.llm.loopback import LoopbackServer, Reply
from vlnverse.llm.negotiate import read_rejection
from vlnverse.llm.openai_client import OpenAIClient
from vlnverse.llm.sampling import sample_n

SCHEMA = {"title": "Move", "type": "object", "properties": {"action": {"enum": ["left", "right", "STOP"]}},
          "required": ["action"]}
IMAGE = b"\x89PNG\r\n\x1a\n" + bytes(64)
PROFILE = {p.name: p for p in PROFILES}


def client(server: LoopbackServer, **options) -> OpenAIClient:
    return OpenAIClient("local-model", base_url=server.url, api_key_env=None, max_retries=2, timeout=10,
                        sleep=lambda s: None, **options)


def body(**extra) -> dict:
    return {"model": "local-model", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.0,
            "max_tokens": 16, **extra}


WITH_IMAGE = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"},
                                                         {"type": "image_url", "image_url": {"url": "data:,"}}]}]}
JSON_SCHEMA = {"response_format": {"type": "json_schema", "json_schema": {"name": "Move", "schema": SCHEMA}}}
TOOLS = {"tools": [{"type": "function", "function": {"name": "go", "parameters": {}}}], "tool_choice": "required"}


@pytest.mark.parametrize(("server", "sent", "feature"), [
    ("vllm", TOOLS, "tools"),
    ("vllm", {**TOOLS, "tool_choice": "auto"}, "tools"),
    ("vllm", WITH_IMAGE, "images"),
    ("llama.cpp", {"n": 3}, "n"),
    ("llama.cpp", TOOLS, "tools"),
    ("llama.cpp", WITH_IMAGE, "images"),
    ("llama-cpp-python", JSON_SCHEMA, "json_schema"),
    ("ollama", TOOLS, "tools"),
    ("lmstudio", {"response_format": {"type": "json_object"}}, "json_object"),
    ("tgi", JSON_SCHEMA, "json_schema"),
    ("tgi", {"response_format": {"type": "json_object"}}, "json_object"),
    ("reasoning", {}, "max_tokens"),
    ("reasoning", {"max_completion_tokens": 16}, "temperature"),
])
def test_each_servers_rejection_names_the_feature_we_sent(server, sent, feature):
    request = body(**sent)
    if "max_completion_tokens" in sent:
        del request["max_tokens"]
    reply = PROFILE[server].reject(request)
    assert reply is not None and reply.status >= 400
    rejection = read_rejection(reply.status, reply.raw.decode(), request)
    assert rejection is not None and rejection.feature == feature, rejection


@pytest.mark.parametrize(("status", "text"), [
    (500, "Internal Server Error"),
    (500, json.dumps({"error": {"code": 500, "message": "CUDA error: out of memory", "type": "server_error"}})),
    (502, "<html><body>Bad Gateway</body></html>"),
    (503, json.dumps({"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}})),
    (429, json.dumps({"error": {"message": "Rate limit reached for requests", "type": "requests"}})),
])
def test_faults_are_not_rejections(status, text):
    assert read_rejection(status, text, body(n=2, **TOOLS)) is None


def test_a_validation_500_is_not_retried_but_a_fault_500_is():
    """The issue's server: json_schema is answered 500 with a validation error. The client
    falls back at once (two requests, no backoff) and remembers; a 500 that reads as a
    fault is still retried."""
    with LoopbackServer(server_answer(PROFILE["llama-cpp-python"])) as server:
        llm = client(server)
        value, _ = llm.complete_structured("Where now?", SCHEMA)
        assert value and llm.supports_json_schema is False
        assert [r.get("response_format", {}).get("type") for r in server.requests] == ["json_schema", "json_object"]
        llm.complete_structured("And now?", SCHEMA)
        assert len(server.requests) == 3 and server.requests[2]["response_format"] == {"type": "json_object"}
        assert llm.features_used["structured"] == ["json_object+schema_in_prompt"]
    faults = iter([Reply(status=500, raw=b"Internal Server Error"), Reply(status=500, raw=b"Internal Server Error")])
    with LoopbackServer(lambda b: next(faults, "ok")) as server:
        llm = client(server)
        assert llm.complete("hi").text == "ok" and server.calls == 3


def test_fallback_order_json_schema_then_json_object_then_prompt_only():
    with LoopbackServer(server_answer(PROFILE["tgi"])) as server:
        llm = client(server)
        value, _ = llm.complete_structured("Where now?", SCHEMA)
        assert value and llm.supports_json_schema is False and llm.supports_json_object is False
        sent = [r.get("response_format", {}).get("type") for r in server.requests]
        assert sent == ["json_schema", "json_object", None]
        assert '"enum": ["left", "right", "STOP"]' in server.requests[-1]["messages"][0]["content"]
        llm.complete_structured("And now?", SCHEMA)
        llm.complete_json("Reply in JSON.")
        assert len(server.requests) == 5 and all("response_format" not in r for r in server.requests[3:])
    assert llm.features_used == {"structured": ["schema_in_prompt"], "json_mode": ["prompt"]}


def test_json_mode_rejected_is_resent_without_it_at_once():
    with LoopbackServer(server_answer(PROFILE["lmstudio"])) as server:
        llm = client(server)
        llm.complete_json("Reply in JSON.")
        assert [r.get("response_format") for r in server.requests] == [{"type": "json_object"}, None]
        llm.complete_json("Again.")
        assert len(server.requests) == 3
    assert llm.features_used["json_mode"] == ["prompt"]


def test_reasoning_model_parameters_are_rewritten_and_remembered():
    with LoopbackServer(server_answer(PROFILE["reasoning"])) as server:
        llm = client(server)
        llm.complete("hi", max_tokens=32, temperature=0.0)
        assert len(server.requests) == 3
        last = server.requests[-1]
        assert last["max_completion_tokens"] == 32 and "max_tokens" not in last and "temperature" not in last
        llm.complete("again", max_tokens=32)
        assert len(server.requests) == 4


@pytest.mark.parametrize("name", ["llama.cpp", "ollama"])
def test_n_falls_back_to_seeded_single_requests(name):
    """llama.cpp rejects n (500); Ollama ignores it (one choice): either way the samples
    come from single requests with seeds seed, seed+1, ..., and later calls skip n."""
    with LoopbackServer(server_answer(PROFILE[name])) as server:
        llm = client(server)
        texts = [c for r in sample_n(llm, "Go?", 3, seed=7) for c in r.choices]
        assert len(texts) == 3 and llm.supports_n is False
        before = server.calls
        sample_n(llm, "Go?", 3, seed=7)
        assert server.calls - before == 3 and all(r.get("n", 1) == 1 for r in server.requests[before:])
        assert sorted(r["seed"] for r in server.requests[before:]) == [7, 8, 9]
    assert llm.features_used["n"] == ["single_seeded"]


def test_tools_fall_back_to_the_emulation():
    tools = [{"name": "ExploreInterface", "parameters": {"type": "object"}}]
    with LoopbackServer(server_answer(PROFILE["vllm"])) as server:
        llm = client(server)
        response = llm.complete_tools("Explore.", tools, tool_choice="required")
        assert response.tool_calls[0].name == "ExploreInterface" and llm.supports_tools is False
        assert ["tools" in r for r in server.requests] == [True, False]
        llm.complete_tools("Explore.", tools, tool_choice="required")
        assert len(server.requests) == 3
    assert llm.features_used["tools"] == ["emulated"]


def test_images_rejected_once_then_refused_without_a_call():
    with LoopbackServer(server_answer(PROFILE["llama.cpp"])) as server:
        llm = client(server)
        message = [{"role": "user", "content": "What is this?", "images": [IMAGE]}]
        with pytest.raises(LLMUnsupportedFeature, match="image input is not supported") as info:
            llm.complete(message)
        assert info.value.feature == "images" and server.calls == 1 and llm.supports_images is False
        with pytest.raises(LLMUnsupportedFeature, match="known from an earlier answer"):
            llm.complete(message)
        assert server.calls == 1 and llm.complete("plain text").text
    assert llm.features_used["images"] == ["refused"]


def test_a_rejection_naming_nothing_we_sent_is_not_retried():
    with LoopbackServer(lambda b: servers.openai_error(400, "The prompt breaks the content policy.")) as server:
        with pytest.raises(LLMRequestError, match="rejected the request .400: The prompt breaks") as info:
            client(server).complete("hi")
    assert not isinstance(info.value, LLMUnsupportedFeature) and server.calls == 1

