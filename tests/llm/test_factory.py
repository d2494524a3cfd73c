"""``make_llm`` spec parsing, options, wrappers and errors."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from vlnverse.errors import ConfigError
from vlnverse.llm import (
    LLM_BACKENDS,
    CachedClient,
    RecordingClient,
    ReplayClient,
    make_llm,
    parse_spec,
)
from vlnverse.llm.openai_client import OpenAIClient

from .endpoint import API_KEY_ENV, ChatEndpoint


def test_none_and_parse() -> None:
    assert make_llm("none") is None and make_llm(" None ") is None
    assert parse_spec("openai:gpt-4o?base_url=http://h:1/v1&timeout=5") == (
        "openai",
        "gpt-4o",
        {"base_url": "http://h:1/v1", "timeout": "5"},
    )
    assert parse_spec("hf:/models/tiny") == ("hf", "/models/tiny", {})
    assert set(LLM_BACKENDS.names()) >= {"openai", "hf", "replay"}


def test_openai_spec_with_options(api_key: str) -> None:
    client = make_llm(
        f"openai:gpt-4o-mini?base_url=http://127.0.0.1:8000/v1&api_key_env={API_KEY_ENV}&timeout=2.5&max_retries=1"
    )
    assert isinstance(client, OpenAIClient)
    assert (client.model, client.base_url, client.max_retries) == (
        "gpt-4o-mini",
        "http://127.0.0.1:8000/v1",
        1,
    )
    keyless = make_llm("openai:local?api_key_env=none&base_url=http://127.0.0.1:8000/v1")
    assert isinstance(keyless, OpenAIClient)


def test_spec_options_and_kwargs_build_a_working_stack(api_key: str, tmp_path: Path) -> None:
    endpoint = ChatEndpoint()
    client = make_llm(
        f"openai:gpt-4o?api_key_env={API_KEY_ENV}&base_url=http://llm.test/v1",
        http_client=httpx.Client(transport=endpoint.transport()),
        cache_dir=tmp_path / "cache",
        record=tmp_path / "llm.jsonl",
    )
    assert isinstance(client, RecordingClient) and isinstance(client.inner, CachedClient)
    first = client.complete("hello")
    second = client.complete("hello")
    assert len(endpoint.requests) == 1 and second.cached and second.text == first.text
    replay = make_llm(f"replay:{tmp_path / 'llm.jsonl'}")
    assert isinstance(replay, ReplayClient)
    assert replay.complete("hello").text == first.text


def test_hf_spec_without_model_dir(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="torch is not installed (hf extra)")
    pytest.importorskip("transformers", reason="transformers is not installed (hf extra)")
    with pytest.raises(ConfigError, match="does not exist"):
        make_llm(f"hf:{tmp_path / 'absent'}?device=cpu&max_new_tokens=8")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("gpt-4o", "expected none \\| openai:MODEL"),
        ("openai:", "invalid LLM spec"),
        (":gpt-4o", "invalid LLM spec"),
        ("claude:opus", "unknown LLM backend 'claude'; valid names: hf, openai, replay"),
        ("openai:gpt-4o?temperature=1", "unknown option 'temperature' for openai; valid: "),
        ("openai:gpt-4o?timeout=soon", "option timeout: expected float, got 'soon'"),
        ("openai:gpt-4o?max_retries=1.5", "option max_retries: expected int"),
        ("openai:gpt-4o?timeout=1&timeout=2", "given twice"),
        ("openai:gpt-4o?timeout", "invalid options"),
        ("replay:/no/such/file.jsonl", "cannot read LLM transcript"),
        (42, "must be a string"),
    ],
)
def test_bad_specs(spec, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make_llm(spec)


def test_bad_kwarg_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        json.dumps(
            {
                "request": {"model": "m", "messages": [{"role": "user", "content": "x"}]},
                "response": {"text": "y"},
            }
        )
        + "\n"
    )
    with pytest.raises(ConfigError, match="unexpected keyword argument 'colour'"):
        make_llm(f"replay:{path}", colour="blue")
