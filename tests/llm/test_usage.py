"""A reply's token usage over real HTTP: estimated (and flagged) when the server sends none,
a bad reply when it is negative, not finite or not a number."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pytest

from vlnverse.errors import LLMRequestError
from vlnverse.llm import CachedClient, make_llm
from vlnverse.llm.images import ImagePart
from vlnverse.llm.loopback import LoopbackServer, Reply, completion_body
from vlnverse.llm.types import ChatMessage, LLMRequest, Usage
from vlnverse.llm.usage import image_tokens, prompt_tokens

REPLY = "Turn left at the sofa, then stop by the lamp. ✓"


def with_usage(usage):
    """Answer every request with ``REPLY`` and the given ``usage`` object (None: no usage key)."""

    def answer(body):
        completion = completion_body(body, Reply(content=REPLY))
        if usage is None:
            del completion["usage"]
        else:
            completion["usage"] = usage
        return Reply(raw=json.dumps(completion).encode())  # json writes inf/nan as Infinity/NaN

    return answer


def client(server):
    return make_llm("openai:gpt-4o", base_url=server.url, api_key_env="none", max_retries=0, timeout=5.0)


MESSAGES = [{"role": "system", "content": "You are a guide."}, {"role": "user", "content": "Où est la cuisine ?"}]


def test_missing_usage_is_estimated_by_the_stated_rule_and_flagged(tmp_path):
    expected_prompt = math.ceil(len(b"You are a guide.") / 4) + math.ceil(len("Où est la cuisine ?".encode()) / 4)
    expected_completion = math.ceil(len(REPLY.encode()) / 4)
    with LoopbackServer(with_usage(None)) as server:
        response = client(server).complete(MESSAGES)
        assert response.usage == Usage(expected_prompt, expected_completion, estimated=True)
        assert response.cost_usd > 0  # priced like any other call
        cached = CachedClient(client(server), tmp_path / "cache")
        cached.complete(MESSAGES)
        again = cached.complete(MESSAGES)  # the flag survives the cache
        assert again.cached and again.usage == response.usage
    with LoopbackServer(with_usage({"prompt_tokens": 7})) as server:  # one count missing: that one estimated
        assert client(server).complete(MESSAGES).usage == Usage(7, expected_completion, estimated=True)
    with LoopbackServer(with_usage({"prompt_tokens": 7, "completion_tokens": 3})) as server:
        assert client(server).complete(MESSAGES).usage == Usage(7, 3)


def test_image_tokens_follow_the_tile_rule():
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(np.zeros((300, 600, 3), dtype=np.uint8)).save(buffer, format="PNG")
    image = ImagePart(buffer.getvalue())
    assert image_tokens(image) == 85 + 170 * 2  # 600 x 300 px: two 512 px tiles
    assert image_tokens(ImagePart(buffer.getvalue(), detail="low")) == 85
    request = LLMRequest("m", (ChatMessage("user", ("abcdefgh", image)),))
    assert prompt_tokens(request) == 2 + 425


@pytest.mark.parametrize("usage", [
    {"prompt_tokens": -414_000_000, "completion_tokens": 5},
    {"prompt_tokens": 5, "completion_tokens": float("inf")},
    {"prompt_tokens": float("nan"), "completion_tokens": 5},
    {"prompt_tokens": "12", "completion_tokens": 5},
    {"prompt_tokens": 2.5, "completion_tokens": 5},
])
def test_negative_or_non_finite_usage_is_a_bad_reply(usage):
    with LoopbackServer(with_usage(usage)) as server, pytest.raises(LLMRequestError, match="usage"):
        client(server).complete(MESSAGES)


def test_usage_values_are_checked_where_they_are_made():
    with pytest.raises(ValueError, match="non-negative integer"):
        Usage(-1, 0)
    assert Usage(np.int64(3), 4).total_tokens == 7
