"""Fixtures of the LLM client tests: an API key variable and clients over a mock endpoint."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from vlnverse.llm import PriceTable
from vlnverse.llm.openai_client import OpenAIClient

from .endpoint import API_KEY_ENV, ChatEndpoint

PRICES = PriceTable({"gpt-4o": {"input_per_mtok": 2.5, "output_per_mtok": 10.0}})


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(API_KEY_ENV, "sk-test-123")
    return "sk-test-123"


@pytest.fixture
def endpoint() -> ChatEndpoint:
    return ChatEndpoint()


@pytest.fixture
def make_client(api_key: str, endpoint: ChatEndpoint):
    """Build an OpenAIClient over the endpoint's mock transport, recording sleeps."""
    sleeps: list[float] = []

    def build(model: str = "gpt-4o", **kwargs: Any) -> OpenAIClient:
        kwargs.setdefault("http_client", httpx.Client(transport=endpoint.transport()))
        kwargs.setdefault("base_url", "http://llm.test/v1")
        kwargs.setdefault("api_key_env", API_KEY_ENV)
        kwargs.setdefault("prices", PRICES)
        kwargs.setdefault("sleep", sleeps.append)
        client = OpenAIClient(model, **kwargs)
        client.sleeps = sleeps  # type: ignore[attr-defined]
        return client

    return build
