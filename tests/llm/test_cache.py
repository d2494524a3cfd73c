"""On-disk cache: hits, misses, corrupt entries and sharing across processes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from vlnverse.llm import CachedClient, ChatMessage, ReplayClient

from .endpoint import ChatEndpoint


def test_hit_and_miss(make_client, endpoint: ChatEndpoint, tmp_path: Path) -> None:
    client = CachedClient(make_client(), tmp_path / "cache")
    first = client.complete("Where is the sofa?", temperature=0.7, seed=3)
    again = client.complete("Where is the sofa?", temperature=0.7, seed=3)
    other_seed = client.complete("Where is the sofa?", temperature=0.7, seed=4)
    other_model_request = client.inner.request("Where is the sofa?", temperature=0.7, seed=3)
    assert len(endpoint.requests) == 2
    assert (first.cached, again.cached, other_seed.cached) == (False, True, False)
    assert (again.text, again.usage, again.cost_usd, again.key) == (
        first.text,
        first.usage,
        first.cost_usd,
        first.key,
    )
    assert (client.hits, client.misses) == (1, 2)
    totals = client.totals.to_dict()
    assert totals["calls"] == 2 and totals["cached_calls"] == 1
    entry = json.loads(client.path_for(other_model_request).read_text())
    assert entry["key"] == first.key and entry["response"]["text"] == first.text
    assert not list((tmp_path / "cache").rglob("*.tmp"))


def test_cache_keys_cover_model_images_and_params(
    make_client, endpoint: ChatEndpoint, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    a = CachedClient(make_client("gpt-4o"), cache)
    b = CachedClient(make_client("gpt-4o-mini"), cache)
    a.complete("hi")
    b.complete("hi")
    a.complete("hi", max_tokens=5)
    a.complete([ChatMessage.user("hi", images=[np.zeros((3, 3, 3), np.uint8)])])
    a.complete([ChatMessage.user("hi", images=[np.ones((3, 3, 3), np.uint8)])])
    assert len(endpoint.requests) == 5
    a.complete([ChatMessage.user("hi", images=[np.ones((3, 3, 3), np.uint8)])])
    assert len(endpoint.requests) == 5


def test_corrupt_entry_is_refetched(
    make_client, endpoint: ChatEndpoint, tmp_path: Path, caplog
) -> None:
    client = CachedClient(make_client(), tmp_path / "cache")
    first = client.complete("hello")
    path = client.path_for(client.request("hello"))
    path.write_text("{truncated")
    second = client.complete("hello")
    assert second.cached is False and second.text == first.text
    assert len(endpoint.requests) == 2
    assert "unreadable LLM cache entry" in caplog.text
    assert client.complete("hello").cached is True


def test_cache_is_shared_across_processes(tmp_path: Path) -> None:
    """Two processes fill one cache concurrently; a third process answers all from it."""
    transcript = tmp_path / "answers.jsonl"
    prompts = [f"prompt {i}" for i in range(20)]
    transcript.write_text(
        "".join(
            json.dumps(
                {
                    "request": {"model": "m", "messages": [{"role": "user", "content": p}]},
                    "response": {"text": p.upper()},
                }
            )
            + "\n"
            for p in prompts
        )
    )
    cache = tmp_path / "cache"
    script = textwrap.dedent(
        f"""
        import sys
        from vlnverse.llm import CachedClient, ReplayClient
        client = CachedClient(ReplayClient({str(transcript)!r}), {str(cache)!r})
        for p in {prompts!r}:
            assert client.complete(p).text == p.upper()
        print(client.hits, client.misses)
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [proc.communicate(timeout=120)[0] for proc in procs]
    assert all(proc.returncode == 0 for proc in procs), outputs
    assert len(list(cache.rglob("*.json"))) == 20
    # A replay client that already served everything can only answer from the cache now.
    exhausted = ReplayClient(transcript)
    for p in prompts:
        exhausted.complete(p)
    reader = CachedClient(exhausted, cache)
    assert [reader.complete(p).text for p in prompts] == [p.upper() for p in prompts]
    assert reader.hits == 20 and reader.misses == 0


@pytest.mark.parametrize("bad", ["", "   "])
def test_an_empty_prompt_is_sent_and_cached_under_its_own_key(bad: str, make_client, endpoint, tmp_path: Path) -> None:
    client = CachedClient(make_client(), tmp_path / "cache")
    assert client.request(bad).key != client.request("x").key
    first = client.complete(bad)
    assert endpoint.requests[-1]["messages"][-1]["content"] == bad  # it reached the server as it was
    assert json.loads(first.text)["echo"] == bad
    assert client.complete(bad).text == first.text
    assert (client.hits, client.misses, len(endpoint.requests)) == (1, 1, 1)
