"""Generation with an LLM (real OpenAI client over a local transport, then replayed) and
rendered visual-reference images."""

from __future__ import annotations

import json

import httpx
import numpy as np

from tests.llm.endpoint import API_KEY_ENV, ChatEndpoint
from vlnverse.llm import RecordingClient, ReplayClient
from vlnverse.llm.openai_client import OpenAIClient
from vlnverse.tasks.dataset import EpisodeDataset
from vlnverse.tasks.generate import GenerationConfig, generate_scene_episodes
from vlnverse.tasks.storage import write_dataset


def answer(body) -> str:
    """A model that echoes the first prior text back in the shape each stage asks for."""
    first = body["messages"][0]["content"]
    text = first if isinstance(first, str) else first[0]["text"]
    if "Analyze the provided image" in text:
        return "The object is clearly visible."
    if "[Text Instructions]" in text and "Fusion Rule" in text:
        line = text.split("[Text Instructions]")[1].strip().splitlines()[0]
        return json.dumps({"instruction": line.split(". ", 1)[1], "source": "text"})
    line = text.split("[Text Instructions]")[1].strip().splitlines()[0]
    return json.dumps({"formal": line, "natural": "Please: " + line, "casual": line})


def test_llm_generation_replays_exactly_and_renders_references(context, tmp_path, monkeypatch):
    monkeypatch.setenv(API_KEY_ENV, "sk-test")
    endpoint = ChatEndpoint(answer=answer)
    client = OpenAIClient("gpt-4o", base_url="http://llm.test/v1", api_key_env=API_KEY_ENV,
                          http_client=httpx.Client(transport=endpoint.transport()), sleep=lambda s: None)
    transcript = tmp_path / "llm.jsonl"
    config = GenerationConfig(tasks=("coarse", "visual_reference"), per_scene=2, render=True)
    kwargs = dict(scene_split="train", scene_rel_path="house.usda", config=config, seed=5)
    first = generate_scene_episodes(context, out_dir=tmp_path / "a", llm=RecordingClient(client, transcript), **kwargs)
    assert len(first.episodes) == 4 and first.fallbacks == 0
    for e in first.episodes:
        assert e.provenance.instruction_source == "llm:gpt-4o"
        assert e.provenance.stages == ("prior", "describer", "verifier", "synthesizer")
        assert e.instruction.styles["natural"].startswith("Please: ")
        assert e.provenance.generator["model"] == "gpt-4o"
    replayed = generate_scene_episodes(context, out_dir=tmp_path / "b", llm=ReplayClient(transcript), **kwargs)
    assert replayed.episodes == first.episodes
    # the reference image: rendered at the goal, facing the target, saved beside the dataset
    visual = [e for e in first.episodes if e.task == "visual_reference"]
    assert all(e.reference_image == f"images/{context.scene_id}/{e.trajectory_id}.png" for e in visual)
    assert (tmp_path / "a" / visual[0].reference_image).read_bytes() == (tmp_path / "b" / visual[0].reference_image).read_bytes()
    write_dataset(tmp_path / "a", first.episodes)
    image = EpisodeDataset.open(tmp_path / "a").reference_image(visual[0])
    assert image.shape == (224, 224, 3) and image.dtype == np.uint8 and image.std() > 0
