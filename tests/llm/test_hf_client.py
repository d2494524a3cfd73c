"""The local transformers backend: a tiny random GPT-2 built offline, and the missing-extra path."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from vlnverse.errors import DependencyNotInstalled, LLMRequestError
from vlnverse.llm import ChatMessage, make_llm

from .tiny_hf import WORDS, build_tiny_gpt2, build_tiny_llava


def test_missing_extra_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` fail
    with pytest.raises(DependencyNotInstalled, match=r"pip install 'vlnverse\[hf\]'"):
        make_llm(f"hf:{tmp_path}")


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer random GPT-2 and a word-level tokenizer, saved like a hub checkpoint."""
    return build_tiny_gpt2(tmp_path_factory.mktemp("tiny-gpt2"))


def test_tiny_model_generates_deterministically(tiny_model_dir: Path) -> None:
    client = make_llm(f"hf:{tiny_model_dir}?name=tiny-gpt2&max_new_tokens=6")
    messages = [ChatMessage.system("walk"), ChatMessage.user("go to the kitchen")]
    greedy = client.complete(messages)
    again = client.complete(messages)
    assert greedy == again
    assert greedy.model == "tiny-gpt2" and greedy.cost_usd is None
    assert greedy.usage.prompt_tokens == len(
        "system : walk user : go to the kitchen assistant :".split()
    )
    assert 1 <= greedy.usage.completion_tokens <= 6
    assert greedy.finish_reason in ("stop", "length")
    assert set(greedy.text.split()) <= set(WORDS) | {"user", "assistant", "system", ":"}

    sampled = [
        client.complete(messages, temperature=1.0, seed=s, max_tokens=8, n=2) for s in (1, 1, 2)
    ]
    assert sampled[0] == sampled[1]
    assert len(sampled[0].choices) == 2
    assert sampled[0].choices != sampled[2].choices
    assert sampled[0].usage.completion_tokens <= 16
    assert client.totals.calls == 5


def test_tiny_model_with_chat_template_and_stop(tiny_model_dir: Path, tmp_path: Path) -> None:
    import shutil

    import transformers

    templated = tmp_path / "templated"
    shutil.copytree(tiny_model_dir, templated)
    tokenizer = transformers.AutoTokenizer.from_pretrained(templated)
    tokenizer.chat_template = (
        "{% for m in messages %}{{ m['role'] }} : {{ m['content'] }} {% endfor %}"
        "{% if add_generation_prompt %}assistant :{% endif %}"
    )
    tokenizer.save_pretrained(templated)
    client = make_llm(f"hf:{templated}?dtype=float32")
    request = client.request("turn left")
    assert client.prompt_text(request) == "user : turn left assistant :"
    samples = [
        client.complete("turn left", max_tokens=10, temperature=1.0, seed=s) for s in range(8)
    ]
    seed, full = next((s, r) for s, r in enumerate(samples) if len(r.text.split()) >= 3)
    stop = full.text.split()[2]
    stopped = client.complete("turn left", max_tokens=10, temperature=1.0, seed=seed, stop=[stop])
    assert stopped.finish_reason == "stop"
    assert stopped.text == full.text[: full.text.index(stop)]
    with pytest.raises(LLMRequestError, match="text-only"):
        client.complete([ChatMessage.user("look", images=[np.zeros((2, 2, 3), np.uint8)])])


def test_a_model_whose_processor_takes_images_gets_them(tmp_path: Path) -> None:
    client = make_llm(f"hf:{build_tiny_llava(tmp_path / 'llava')}?max_new_tokens=4")
    assert client.takes_images
    dark = [ChatMessage.user("what is this", images=[np.zeros((20, 20, 3), np.uint8)])]
    request = client.request(dark)
    assert client.prompt_text(request) == "user : what is this <image> assistant :"
    inputs = client._encode(request)
    assert tuple(inputs["pixel_values"].shape) == (1, 3, 16, 16)
    assert int((inputs["input_ids"] == client.tokenizer.convert_tokens_to_ids("<image>")).sum()) == 4
    first = client.complete(dark)
    assert client.complete(dark) == first and 1 <= first.usage.completion_tokens <= 4
    assert first.usage.prompt_tokens == len("user : what is this assistant :".split()) + 4
