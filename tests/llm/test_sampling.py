"""N samples through the real ``openai`` client on a loopback server: one request with
``n`` where the server honours it, else seeded single requests (also after a rejection)."""

from __future__ import annotations

import pytest

from vlnverse.errors import ConfigError
from vlnverse.llm import CachedClient, make_llm
from vlnverse.llm.loopback import LoopbackServer, Reply
from vlnverse.llm.sampling import merge_responses, sample_n

KEY_ENV = "VLNVERSE_TEST_SAMPLING_KEY"


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-loopback")


def client(server):
    return make_llm(f"openai:gpt-4o?base_url={server.url}&api_key_env={KEY_ENV}&max_retries=0")


def test_a_server_rejecting_n_gets_seeded_single_requests_from_then_on(tmp_path):
    def answer(body):
        if body.get("n", 1) > 1:
            return Reply(status=400)
        return f"sample {body.get('seed')}"

    with LoopbackServer(answer) as server:
        llm = CachedClient(client(server), tmp_path / "cache")
        texts = [c for r in sample_n(llm, "Where now?", 3, temperature=1.0) for c in r.choices]
        assert texts == ["sample 0", "sample 1", "sample 2"] and llm.supports_n is False
        sample_n(llm, "Where now?", 3, temperature=1.0)            # the same samples, from the cache
        assert server.calls == 4                                     # the rejected one + 3, none the second time
    merged = merge_responses(sample_n(llm, "Where now?", 3, temperature=1.0))
    assert merged.choices == ("sample 0", "sample 1", "sample 2") and merged.cached


def test_a_server_honouring_n_answers_in_one_request():
    with LoopbackServer(lambda body: Reply(content="a", choices=["b", "c", "d"][: body["n"] - 1])) as server:
        llm = client(server)
        (response,) = sample_n(llm, "Where now?", 3, temperature=1.0)
        assert response.choices == ("a", "b", "c") and llm.supports_n is True and server.calls == 1
    with pytest.raises(ConfigError, match="positive integer"):
        sample_n(llm, "x", 0)


def test_a_schema_rejected_with_n_is_the_callers_fallback_not_a_rejection_of_n():
    from vlnverse.errors import LLMUnsupportedFeature

    def answer(body):
        if (body.get("response_format") or {}).get("type") == "json_schema":
            return Reply(status=422, raw=b"Failed to deserialize the JSON body: response_format: missing field `value`")
        return Reply(content="{}", choices=["{}"] * (body.get("n", 1) - 1))

    with LoopbackServer(answer) as server:
        llm = client(server)
        with pytest.raises(LLMUnsupportedFeature) as caught:
            sample_n(llm, "Where now?", 2, json_schema={"type": "object"})
        assert caught.value.feature == "json_schema" and llm.supports_n is not False
        assert len(sample_n(llm, "Where now?", 2)[0].choices) == 2 and llm.supports_n is True
