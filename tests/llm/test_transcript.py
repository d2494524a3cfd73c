"""Record → replay round trips, hand-written transcripts and replay misses."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import numpy as np
import pytest

from vlnverse.errors import ConfigError, ReplayMissError
from vlnverse.llm import ChatMessage, RecordingClient, ReplayClient, read_transcript
from vlnverse.llm.openai_client import OpenAIClient

from .endpoint import API_KEY_ENV, ChatEndpoint


def _conversation(step: int) -> list[ChatMessage]:
    frame = np.full((6, 6, 3), step * 20, dtype=np.uint8)
    return [
        ChatMessage.system("You are a navigation expert."),
        ChatMessage.user(f"Step {step}: what do you see?", images=[frame]),
        ChatMessage.assistant("A hallway."),
        ChatMessage.user("Answer in JSON."),
    ]


def test_record_then_replay_gives_identical_responses(
    make_client, endpoint: ChatEndpoint, tmp_path: Path
) -> None:
    transcript = tmp_path / "run" / "llm.jsonl"
    recorder = RecordingClient(make_client(), transcript)
    recorded = [
        recorder.complete(_conversation(step), seed=step, temperature=0.5) for step in range(3)
    ]
    recorded.append(recorder.complete("plain prompt", response_format="json", n=2))
    assert len(endpoint.requests) == 4

    lines = transcript.read_text().splitlines()
    assert len(lines) == 4
    assert "base64" not in transcript.read_text()  # images are stored as digests only
    assert json.loads(lines[0])["key"] == recorded[0].key

    replay = ReplayClient(transcript)
    assert replay.model == "gpt-4o" and len(replay) == 4
    replayed = [
        replay.complete(_conversation(step), seed=step, temperature=0.5) for step in range(3)
    ]
    replayed.append(replay.complete("plain prompt", response_format="json", n=2))
    assert replayed == recorded
    assert len(endpoint.requests) == 4  # replay never touched the endpoint
    assert replay.totals.to_dict() == recorder.totals.to_dict()


def test_replay_miss_names_the_hash(make_client, tmp_path: Path) -> None:
    transcript = tmp_path / "llm.jsonl"
    RecordingClient(make_client(), transcript).complete("first", seed=1)
    replay = ReplayClient(transcript)
    request = replay.request("first", seed=2)
    with pytest.raises(ReplayMissError, match=request.key) as info:
        replay.complete("first", seed=2)
    assert "has no such request" in str(info.value) and "first" in str(info.value)
    other_image = [ChatMessage.user("first", images=[np.zeros((2, 2, 3), np.uint8)])]
    with pytest.raises(ReplayMissError):
        replay.complete(other_image, seed=1)


def test_repeated_requests_replay_in_recorded_order(api_key: str, tmp_path: Path) -> None:
    answers = iter(["not json", '{"formal": "a"}'])
    endpoint = ChatEndpoint(answer=lambda body: next(answers))
    client = OpenAIClient(
        "gpt-4o",
        base_url="http://llm.test/v1",
        api_key_env=API_KEY_ENV,
        http_client=httpx.Client(transport=endpoint.transport()),
    )
    transcript = tmp_path / "llm.jsonl"
    recorder = RecordingClient(client, transcript)
    first, second = recorder.complete("styles"), recorder.complete("styles")
    replay = ReplayClient(transcript)
    assert replay.complete("styles").text == first.text == "not json"
    assert replay.complete("styles").text == second.text
    with pytest.raises(ReplayMissError, match="holds 2 response"):
        replay.complete("styles")


def test_hand_written_transcript(tmp_path: Path) -> None:
    transcript = tmp_path / "answers.jsonl"
    lines = [
        {
            "request": {
                "model": "describer",
                "messages": [{"role": "user", "content": "Describe the goal."}],
            },
            "response": {"text": "A blue lamp on a nightstand."},
        },
        {
            "request": {
                "model": "describer",
                "messages": [{"role": "user", "content": "Styles?"}],
                "params": {"response_format": "json", "stop": ["END"]},
            },
            "response": {
                "text": '{"formal": "x"}',
                "usage": {"prompt_tokens": 5, "completion_tokens": 3},
            },
        },
    ]
    transcript.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n")
    replay = ReplayClient(transcript)
    assert replay.complete("Describe the goal.").text == "A blue lamp on a nightstand."
    value, response = replay.complete_json("Styles?", stop=["END"])
    assert (
        value == {"formal": "x"} and response.usage.total_tokens == 8 and response.cost_usd is None
    )


def test_bad_transcripts_give_clear_errors(tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    with pytest.raises(ConfigError, match="cannot read LLM transcript"):
        ReplayClient(missing)
    broken = tmp_path / "broken.jsonl"
    broken.write_text(
        '{"request": {"model": "m", "messages": [{"role": "user", "content": "x"}]}, "response": {"text": "y"}}\n{oops\n'
    )
    with pytest.raises(ConfigError, match=r"broken.jsonl:2: not valid JSON"):
        read_transcript(broken)
    bad_role = tmp_path / "role.jsonl"
    bad_role.write_text(
        '{"request": {"model": "m", "messages": [{"role": "robot", "content": "x"}]}, "response": {"text": "y"}}\n'
    )
    with pytest.raises(ConfigError, match="role must be one of"):
        read_transcript(bad_role)
    bad_param = tmp_path / "param.jsonl"
    bad_param.write_text(
        '{"request": {"model": "m", "messages": [{"role": "user", "content": "x"}], "params": {"temp": 1}}, "response": {"text": "y"}}\n'
    )
    with pytest.raises(ConfigError, match="unknown generation parameter"):
        read_transcript(bad_param)
    two_models = tmp_path / "two.jsonl"
    two_models.write_text(
        "".join(
            json.dumps(
                {
                    "request": {"model": m, "messages": [{"role": "user", "content": "x"}]},
                    "response": {"text": m},
                }
            )
            + "\n"
            for m in ("a", "b")
        )
    )
    with pytest.raises(ConfigError, match=r"holds models \[a, b\]"):
        ReplayClient(two_models)
    assert ReplayClient(two_models, model="b").complete("x").text == "b"


def test_a_re_render_differing_in_a_few_pixels_still_replays(tmp_path) -> None:
    """Replay falls back to the images' coarse signatures when the exact hash misses."""
    from vlnverse.llm.base import LLMClient
    from vlnverse.llm.types import LLMResponse

    class Echo(LLMClient):
        def send(self, request):
            return LLMResponse(f"seen {request.key[:6]}", self.model, key=request.key)

    rng = np.random.default_rng(0)
    view = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
    other = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
    path = tmp_path / "t.jsonl"
    recorder = RecordingClient(Echo("vlm"), path)
    first = recorder.complete([ChatMessage.user("where now?", images=[view, other])])
    recorder.complete([ChatMessage.user("and now?", images=[other])])

    rerender = view.copy()
    rerender[5:8, 10:12] = np.clip(rerender[5:8, 10:12].astype(int) + 3, 0, 255).astype(np.uint8)
    replay = ReplayClient(path)
    again = replay.complete([ChatMessage.user("where now?", images=[rerender, other])])
    assert again.text == first.text and again.key != first.key  # answered by similarity
    with pytest.raises(ReplayMissError):  # a different view is a different request
        replay.complete([ChatMessage.user("where now?", images=[255 - view, other])])
    with pytest.raises(ReplayMissError):  # so is a different text with the same images
        ReplayClient(path).complete([ChatMessage.user("where to?", images=[rerender, other])])
