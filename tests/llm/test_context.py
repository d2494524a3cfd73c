"""The model's context window (issue 45): the spec's ``context=N``, context-length errors read
by behaviour (the window learned, the request never resent), and ``vlnverse llm check``
reporting the window where the server states it."""

from __future__ import annotations

import json

import pytest

from tests.llm.servers import PROFILES, SmallContext, server_answer, server_tokens
from vlnverse.cli import main
from vlnverse.errors import ConfigError, LLMContextExceeded
from vlnverse.llm import make_llm
from vlnverse.llm.context import clip, read_context_error, request_bound, text_bound
from vlnverse.llm.loopback import LoopbackServer
from vlnverse.llm.sampling import sample_n
from vlnverse.llm.types import LLMRequest

PROFILE = {p.name: p for p in PROFILES}
VLLM = ('{"object": "error", "message": "This model\'s maximum context length is 8192 tokens. However, you requested '
        '20394 tokens (18894 in the messages, 1500 in the completion). Please reduce the length of the messages or '
        'completion.", "type": "BadRequestError", "param": null, "code": 400}')
LLAMA_CPP = ('{"error": {"code": 400, "message": "request (4476 tokens) exceeds the available context size (4096 '
             'tokens), try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 4476, "n_ctx": 4096}}')


def spec(server: LoopbackServer, **options) -> str:
    query = "&".join(f"{k}={v}" for k, v in {"base_url": server.url, "api_key_env": "none", "max_retries": 2,
                                             "timeout": 10, **options}.items())
    return f"openai:local-model?{query}"


@pytest.mark.parametrize(("status", "body", "window", "requested"), [
    (400, VLLM, 8192, 20394),
    (400, LLAMA_CPP, 4096, 4476),
    (400, '{"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it", '
          '"type": "exceed_context_size_error"}}', None, None),                                       # older llama.cpp
    (400, '{"error": {"message": "This model\'s maximum context length is 128000 tokens. However, your messages '
          'resulted in 130001 tokens.", "type": "invalid_request_error", "param": "messages", '
          '"code": "context_length_exceeded"}}', 128000, 130001),                                      # OpenAI
    (422, "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 8192. Given: 9000 `inputs` tokens "
          "and 1500 `max_new_tokens`", 8192, None),                                                    # TGI, plain text
    (400, '{"error": "Trying to keep the first 5000 tokens when context the overflows. However, the model is loaded '
          'with context length of only 4096 tokens, which is not enough."}', 4096, None),              # LM Studio
])
def test_context_length_errors_are_read_from_status_and_body(status, body, window, requested):
    found = read_context_error(status, body)
    assert found is not None and found.window == window and found.requested == requested and "\n" not in found.message


@pytest.mark.parametrize(("status", "body"), [
    (400, '{"error": {"message": "Only one completion choice is allowed"}}'),
    (429, VLLM),                      # a rate limit is no statement about the request
    (200, VLLM),
    (400, "not json, and nothing about the window"),
])
def test_other_answers_are_not_context_errors(status, body):
    assert read_context_error(status, body) is None


def test_the_estimate_is_an_upper_bound_and_clip_keeps_within_it():
    text = "The sofa stands left of the window, 2.5 m away. " * 40
    assert text_bound(text) >= len(text.encode()) / 4 and text_bound("été") == 2
    cut = clip(text, 30)
    assert text_bound(cut) <= 30 and cut.endswith("[...]") and text.startswith(cut[:-6].rstrip())
    assert clip("short", 30) == "short"
    request = LLMRequest.build("m", [{"role": "system", "content": "x" * 300}, {"role": "user", "content": "y" * 300}],
                               max_tokens=50)
    assert request_bound(request) == 8 + (8 + 100) * 2 + 50


def test_the_spec_gives_the_window_and_a_request_over_it_is_not_sent():
    model = SmallContext(1000)
    with LoopbackServer(model) as server:
        llm = make_llm(spec(server, context=1000))
        assert llm.context_window == 1000 and llm.context_source == "spec"
        assert llm.complete("Describe the room.", max_tokens=200).text
        with pytest.raises(LLMContextExceeded, match="does not fit the 1000-token context window") as info:
            llm.complete("word " * 2000, max_tokens=200)
        assert info.value.window == 1000 and info.value.requested > 1000 and server.calls == 1
    with pytest.raises(ConfigError, match="context must be a positive number of tokens"):
        make_llm("openai:m?api_key_env=none&context=0")


@pytest.mark.parametrize("style", ["vllm", "llama.cpp"])
def test_a_context_error_teaches_the_window_and_is_never_resent(style):
    model = SmallContext(600, style=style)
    long = [{"role": "user", "content": "Describe what you see. " + "a lamp by a sofa " * 250}]
    with LoopbackServer(model) as server:
        llm = make_llm(spec(server))
        assert llm.context_window is None
        with pytest.raises(LLMContextExceeded, match="too long for its context") as info:
            sample_n(llm, long, 5, max_tokens=100, temperature=1.0)  # n=5: not asked again one sample at a time
        assert server.calls == 1 and llm.context_window == 600 and llm.context_source == "server error"
        assert info.value.window == 600 and info.value.requested == server_tokens(model_body(server)) + (
            100 if style == "vllm" else 0)
        with pytest.raises(LLMContextExceeded, match="not sent"):
            llm.complete(long, max_tokens=100)
        assert server.calls == 1 and llm.supports_n is None  # n was not blamed for the length
        assert llm.complete("Describe the room.", max_tokens=100).text and server.calls == 2


def model_body(server: LoopbackServer) -> dict:
    return server.requests[0]


def test_a_window_the_error_does_not_state_is_bounded_by_the_rejected_request():
    said = b'{"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it"}}'
    from vlnverse.llm.loopback import Reply

    with LoopbackServer(lambda body: Reply(status=400, raw=said)) as server:
        llm = make_llm(spec(server))
        request = llm.request("x" * 3000, max_tokens=100)
        with pytest.raises(LLMContextExceeded):
            llm.complete("x" * 3000, max_tokens=100)
        assert llm.context_window == request_bound(request) - 1 and server.calls == 1


@pytest.mark.parametrize(("routes", "fields", "tokens", "source"), [
    ({"/props": {"default_generation_settings": {"n_ctx": 4096}}}, {"meta": {"n_ctx_train": 131072}}, 4096,
     "llama.cpp /props n_ctx"),
    ({}, {"max_model_len": 32768}, 32768, "vLLM /v1/models max_model_len"),
    ({}, {"meta": {"n_ctx_train": 8192}}, 8192, "llama.cpp /v1/models meta.n_ctx_train"),
    ({"/api/show": {"parameters": "stop \"<|im_end|>\"\nnum_ctx 16384", "model_info": {"qwen2.context_length": 32768}}},
     {}, 16384, "Ollama /api/show num_ctx"),
    ({"/api/show": {"model_info": {"qwen2.context_length": 32768}}}, {}, 32768, "Ollama /api/show context_length"),
])
def test_llm_check_reports_the_window_the_server_states(capsys, routes, fields, tokens, source):
    with LoopbackServer(server_answer(PROFILE["vllm"]), models=("local-model",), model_fields=fields,
                        routes=routes) as server:
        code = main(["llm", "check", spec(server, max_retries=0, context=2048), "--json"])
    report = json.loads(capsys.readouterr().out)
    context = report["features"]["context"]
    assert code == 0 and context["tokens"] == tokens and context["source"].startswith(source)
    assert context["supported"] is True and context["detail"].endswith("; the spec says 2048")


def test_llm_check_says_when_the_window_is_unknown(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")
    with LoopbackServer(server_answer(PROFILE["vllm"]), models=("local-model",)) as server:
        code = main(["llm", "check", spec(server, max_retries=0)])
    out = capsys.readouterr().out
    assert code == 0 and "unknown: the server does not state it (give context=N in the spec)" in out


def test_a_transcript_keeps_the_window_and_the_refusals(tmp_path):
    from vlnverse.llm import RecordingClient, ReplayClient

    model = SmallContext(600)
    long = "Describe what you see. " + "a lamp by a sofa " * 250
    with LoopbackServer(model) as server:
        recorder = RecordingClient(make_llm(spec(server)), tmp_path / "calls.jsonl")
        assert recorder.complete("Describe the room.", max_tokens=100).text
        with pytest.raises(LLMContextExceeded):
            recorder.complete(long, max_tokens=100)
        assert recorder.context_window == 600 and recorder.complete("And now?", max_tokens=100).text
    lines = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert [("context_error" in line, line.get("context_window")) for line in lines] == [
        (False, None), (True, None), (False, 600)]
    replay = ReplayClient(tmp_path / "calls.jsonl")
    assert replay.context_window is None and replay.complete("Describe the room.", max_tokens=100).text
    with pytest.raises(LLMContextExceeded, match="too long for its context"):
        replay.complete(long, max_tokens=100)
    assert replay.context_window == 600 and replay.context_source == "transcript"
    assert replay.complete("And now?", max_tokens=100).text == lines[2]["response"]["text"]
    (tmp_path / "spec.jsonl").write_text(json.dumps({**lines[2], "context_window": 900}) + "\n")
    assert ReplayClient(tmp_path / "spec.jsonl").context_window == 900
    (tmp_path / "bad.jsonl").write_text(json.dumps({"request": lines[0]["request"]}) + "\n")
    with pytest.raises(ConfigError, match="needs 'request' and 'response' \\(or 'context_error'\\)"):
        ReplayClient(tmp_path / "bad.jsonl")
