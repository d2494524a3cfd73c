"""The real ``openai`` SDK path, over a mock HTTP transport and a local HTTP server."""

from __future__ import annotations

import base64
import json
import threading

import httpx
import numpy as np
import pytest

from vlnverse.errors import ConfigError, LLMInvalidJSON, LLMRequestError, LLMSchemaError
from vlnverse.llm import ChatMessage, encode_png
from vlnverse.llm.openai_client import OpenAIClient

from .endpoint import API_KEY_ENV, ChatEndpoint, serve_http


def test_text_request_body_usage_and_cost(
    make_client, endpoint: ChatEndpoint, api_key: str
) -> None:
    client = make_client()
    response = client.complete(
        [ChatMessage.system("You are a guide."), {"role": "user", "content": "Where is the lamp?"}],
        temperature=0.3,
        max_tokens=50,
        seed=7,
        stop=["END"],
    )
    body = endpoint.requests[0]
    assert body["model"] == "gpt-4o"
    assert body["messages"] == [
        {"role": "system", "content": "You are a guide."},
        {"role": "user", "content": "Where is the lamp?"},
    ]
    assert (body["temperature"], body["max_tokens"], body["seed"], body["stop"]) == (
        0.3,
        50,
        7,
        ["END"],
    )
    assert "response_format" not in body and "n" not in body
    assert endpoint.headers[0]["authorization"] == f"Bearer {api_key}"
    assert json.loads(response.text) == {
        "echo": "Where is the lamp?",
        "images": 0,
        "temperature": 0.3,
    }
    assert response.model == "gpt-4o-2024-08-06"
    assert response.finish_reason == "stop"
    assert response.cached is False
    assert (
        response.key
        == client.request(
            [ChatMessage.system("You are a guide."), ChatMessage.user("Where is the lamp?")],
            temperature=0.3,
            max_tokens=50,
            seed=7,
            stop=["END"],
        ).key
    )
    usage = response.usage
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0
    expected = (usage.prompt_tokens * 2.5 + usage.completion_tokens * 10.0) / 1e6
    assert response.cost_usd == pytest.approx(expected)
    assert client.totals.to_dict() == {
        "calls": 1,
        "cached_calls": 0,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "cost_usd": pytest.approx(expected),
    }


def test_images_travel_as_data_urls(make_client, endpoint: ChatEndpoint) -> None:
    rng = np.random.default_rng(0)
    frame = rng.integers(0, 256, size=(12, 16, 3), dtype=np.uint8)
    png = encode_png(rng.integers(0, 256, size=(5, 7, 3), dtype=np.uint8))
    client = make_client()
    response = client.complete([ChatMessage.user("Describe these views.", images=[frame, png])])
    content = endpoint.requests[0]["messages"][0]["content"]
    assert [part["type"] for part in content] == ["text", "image_url", "image_url"]
    assert content[0]["text"] == "Describe these views."
    urls = [part["image_url"]["url"] for part in content[1:]]
    assert all(url.startswith("data:image/png;base64,") for url in urls)
    sent = [base64.b64decode(url.split(",", 1)[1]) for url in urls]
    assert sent == [encode_png(frame), png]
    assert content[1]["image_url"]["detail"] == "auto"
    assert json.loads(response.text)["images"] == 2


def test_json_mode_and_choices(make_client, endpoint: ChatEndpoint) -> None:
    client = make_client()
    value, response = client.complete_json(
        "Answer in JSON.", required_keys=["echo"], n=3, temperature=1.0
    )
    assert endpoint.requests[0]["response_format"] == {"type": "json_object"}
    assert endpoint.requests[0]["n"] == 3
    assert value["echo"] == "Answer in JSON."
    assert len(response.choices) == 3 and response.choices[0] == response.text


def test_invalid_json_answer_raises_typed_errors(api_key: str) -> None:
    answers = iter(
        [
            'Sure! ```json\n{"formal": "Go to the kitchen."}\n```',
            "I cannot help with that.",
            "[1, 2]",
        ]
    )
    endpoint = ChatEndpoint(answer=lambda body: next(answers))
    client = OpenAIClient(
        "gpt-4o",
        base_url="http://llm.test/v1",
        api_key_env=API_KEY_ENV,
        http_client=httpx.Client(transport=endpoint.transport()),
    )
    value, _ = client.complete_json("styles", required_keys=["formal"])
    assert value == {"formal": "Go to the kitchen."}
    with pytest.raises(LLMInvalidJSON, match="cannot help"):
        client.complete_json("styles again")
    with pytest.raises(LLMSchemaError, match="expected a JSON dict"):
        client.complete_json("styles once more")


@pytest.mark.parametrize("status", [500, 502, 503, 429, 408])
def test_transient_status_is_retried_with_backoff(
    make_client, endpoint: ChatEndpoint, status: int
) -> None:
    endpoint.failures = [(status, {}), (status, {})]
    client = make_client(backoff_base=0.5, backoff_max=4.0)
    response = client.complete("hello")
    assert json.loads(response.text)["echo"] == "hello"
    assert len(endpoint.requests) == 3
    assert client.sleeps == [0.5, 1.0]


def test_retry_after_header_is_honoured_but_bounded(make_client, endpoint: ChatEndpoint) -> None:
    endpoint.failures = [(429, {"retry-after": "2"}), (429, {"retry-after": "600"})]
    client = make_client(backoff_base=0.1, backoff_max=5.0)
    client.complete("hello")
    assert client.sleeps == [2.0, 5.0]


def test_retries_are_bounded(make_client, endpoint: ChatEndpoint) -> None:
    endpoint.failures = [(500, {})] * 10
    client = make_client(max_retries=2, backoff_base=1.0, backoff_max=1.5)
    with pytest.raises(LLMRequestError, match="failed after 3 attempt"):
        client.complete("hello")
    assert len(endpoint.requests) == 3
    assert client.sleeps == [1.0, 1.5]
    assert client.totals.calls == 0


def test_client_errors_are_not_retried(make_client, endpoint: ChatEndpoint) -> None:
    endpoint.failures = [(400, {})]
    client = make_client()
    with pytest.raises(LLMRequestError, match="rejected the request"):
        client.complete("hello")
    assert len(endpoint.requests) == 1 and client.sleeps == []


def test_timeouts_and_connection_errors_are_retried(api_key: str) -> None:
    calls = []
    endpoint = ChatEndpoint()
    inner = endpoint.transport()

    def flaky(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        if len(calls) == 1:
            raise httpx.ReadTimeout("read timed out", request=request)
        if len(calls) == 2:
            raise httpx.ConnectError("connection refused", request=request)
        return inner.handle_request(request)

    sleeps: list[float] = []
    client = OpenAIClient(
        "gpt-4o",
        base_url="http://llm.test/v1",
        api_key_env=API_KEY_ENV,
        http_client=httpx.Client(transport=httpx.MockTransport(flaky)),
        backoff_base=0.25,
        sleep=sleeps.append,
    )
    assert json.loads(client.complete("ping").text)["echo"] == "ping"
    assert len(calls) == 3 and sleeps == [0.25, 0.5]


def test_unknown_model_has_unknown_cost(make_client) -> None:
    response = make_client(model="my-local-model").complete("hi")
    assert response.cost_usd is None
    assert response.usage.total_tokens > 0


def test_missing_api_key_is_a_clear_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VLNVERSE_TEST_NO_SUCH_KEY", raising=False)
    with pytest.raises(ConfigError, match="VLNVERSE_TEST_NO_SUCH_KEY is not set"):
        OpenAIClient("gpt-4o", api_key_env="VLNVERSE_TEST_NO_SUCH_KEY")


def test_base_url_defaults_to_environment(monkeypatch: pytest.MonkeyPatch, api_key: str) -> None:
    monkeypatch.setenv("VLNVERSE_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    client = OpenAIClient("gpt-4o", api_key_env=API_KEY_ENV)
    assert client.base_url == "http://127.0.0.1:9/v1"
    client.close()


@pytest.fixture
def local_server():
    endpoint = ChatEndpoint(failures=[(503, {})])
    with serve_http(endpoint) as base_url:
        yield endpoint, base_url


def test_real_local_http_server(local_server, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    endpoint, base_url = local_server
    frame = np.full((8, 8, 3), 200, dtype=np.uint8)
    with OpenAIClient(
        "gpt-4o", base_url=base_url, api_key_env=None, timeout=10, backoff_base=0.01
    ) as client:
        response = client.complete([ChatMessage.user("Which room?", images=[frame])], max_tokens=20)
    assert json.loads(response.text) == {"echo": "Which room?", "images": 1, "temperature": 0.0}
    assert len(endpoint.requests) == 2  # the first got a 503 and was retried over real HTTP
    url = endpoint.requests[1]["messages"][0]["content"][1]["image_url"]["url"]
    assert base64.b64decode(url.split(",", 1)[1]) == encode_png(frame)
    assert response.usage.prompt_tokens > 0


def test_slow_server_times_out_and_fails_cleanly(
    local_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    endpoint, base_url = local_server
    endpoint.failures.clear()
    endpoint.hold = threading.Event()  # the server answers nothing until the test is over
    sleeps: list[float] = []
    client = OpenAIClient(
        "gpt-4o",
        base_url=base_url,
        api_key_env=None,
        timeout=0.1,
        max_retries=1,
        sleep=sleeps.append,
    )
    try:
        with pytest.raises(LLMRequestError, match="failed after 2 attempt.*timed out"):
            client.complete("hello")  # returns although the server never answers: the timeout works
        for _ in range(2):  # both attempts reached the server (they may still be in flight there)
            assert endpoint.arrived.acquire(timeout=30)
    finally:
        endpoint.hold.set()
    assert len(endpoint.requests) == 2 and len(sleeps) == 1


@pytest.mark.parametrize("body, content_type", [
    (b'{"choices": [', "application/json"),
    (b"<html><body>502 Bad Gateway</body></html>", "text/html"),
    (b'{"choices": [{"message": null}]}', "application/json"),
])
def test_a_200_with_a_broken_body_is_a_bad_reply_retried_within_the_budget(api_key, body, content_type) -> None:
    replies = [httpx.Response(200, content=body, headers={"content-type": content_type})] * 2
    endpoint = ChatEndpoint()

    def handle(request: httpx.Request) -> httpx.Response:
        return replies.pop(0) if replies else endpoint.transport().handle_request(request)

    sleeps: list[float] = []
    client = OpenAIClient("gpt-4o", base_url="http://llm.test/v1", api_key_env=API_KEY_ENV, max_retries=2,
                          http_client=httpx.Client(transport=httpx.MockTransport(handle)), sleep=sleeps.append)
    assert json.loads(client.complete("ping").text)["echo"] == "ping"  # third attempt answered
    assert len(sleeps) == 2
    replies[:] = [httpx.Response(200, content=body, headers={"content-type": content_type})] * 3
    with pytest.raises(LLMRequestError, match="failed after 3 attempt.*not (a chat completion|JSON)"):
        client.complete("again")


def test_consecutive_connection_failures_open_the_breaker(api_key) -> None:
    attempts = []

    def refuse(request: httpx.Request) -> httpx.Response:
        attempts.append(request)
        raise httpx.ConnectError("connection refused", request=request)

    sleeps: list[float] = []
    client = OpenAIClient("gpt-4o", base_url="http://llm.test/v1", api_key_env=API_KEY_ENV,
                          max_retries=3, http_client=httpx.Client(transport=httpx.MockTransport(refuse)),
                          sleep=sleeps.append)
    with pytest.raises(LLMRequestError, match="failed after 4 attempt"):
        client.complete("one")
    with pytest.raises(LLMRequestError, match=r"failed 5 times in a row .*not calling it again") as second:
        client.complete("two")
    assert len(attempts) == 5 and len(sleeps) == 3
    for prompt in ("three", "four"):
        with pytest.raises(LLMRequestError, match="is not called any more: 5 consecutive connection failures"):
            client.complete(prompt)
    assert len(attempts) == 5 and len(sleeps) == 3  # no more attempts, no more waiting
    assert "http://llm.test/v1" in str(second.value)
    with pytest.raises(ConfigError, match=r"the base URL http://\*\*\*@llm.test/v1 carries credentials"):
        OpenAIClient("gpt-4o", base_url="http://user:hunter2@llm.test/v1", api_key_env=API_KEY_ENV)


def test_every_call_has_an_overall_deadline(local_server, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    endpoint, base_url = local_server
    endpoint.failures.clear()
    endpoint.hold = threading.Event()  # the server answers nothing until the test is over
    client = OpenAIClient("gpt-4o", base_url=base_url, api_key_env=None, timeout=30, max_retries=10,
                          backoff_base=0.05, deadline=0.4)
    errors: list[Exception] = []

    def call() -> None:
        try:
            client.complete("hello")
        except LLMRequestError as exc:
            errors.append(exc)

    caller = threading.Thread(target=call)
    try:
        caller.start()
        caller.join(60)  # only the deadline can end the call (a request timeout would take 30 s)
        assert not caller.is_alive(), "the deadline did not end the call"
        assert endpoint.arrived.acquire(timeout=30)
    finally:
        endpoint.hold.set()
    assert len(errors) == 1 and "within the 0.4 s deadline" in str(errors[0])
    assert len(endpoint.requests) == 1
