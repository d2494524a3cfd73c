"""A tiny randomly initialised transformers causal LM, built offline for tests."""

from __future__ import annotations

from pathlib import Path

import pytest

WORDS = "go to the kitchen bedroom lamp sofa left right turn stop walk past door and".split()


def build_tiny_gpt2(path: Path, n_positions: int = 128) -> Path:
    """A 2-layer random GPT-2 and a word-level tokenizer saved like a hub checkpoint in
    ``path`` (skips the calling test without the hf extra)."""
    torch = pytest.importorskip("torch", reason="torch is not installed (hf extra)")
    transformers = pytest.importorskip("transformers", reason="transformers is not installed (hf extra)")
    from tokenizers import Tokenizer, models, pre_tokenizers

    specials = ["<pad>", "<unk>", "<eos>"]
    vocab = {word: i for i, word in enumerate([*specials, *WORDS, "user", "assistant", "system", ":"])}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace()])
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", unk_token="<unk>", eos_token="<eos>")
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=len(vocab), n_positions=n_positions, n_embd=32, n_layer=2, n_head=2,
        bos_token_id=vocab["<eos>"], eos_token_id=vocab["<eos>"], pad_token_id=vocab["<pad>"])
    transformers.GPT2LMHeadModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def build_tiny_llava(path: Path) -> Path:
    """A random LLaVA (1-layer CLIP vision tower on 16-px images, 1-layer Llama) with its
    processor (word-level tokenizer, ``<image>`` placeholder, chat template) in ``path``."""
    torch = pytest.importorskip("torch", reason="torch is not installed (hf extra)")
    transformers = pytest.importorskip("transformers", reason="transformers is not installed (hf extra)")
    from tokenizers import Tokenizer, models, pre_tokenizers

    specials = ["<pad>", "<unk>", "<eos>", "<image>"]
    vocab = {w: i for i, w in enumerate([*specials, *WORDS, "user", "assistant", "system", ":"])}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", unk_token="<unk>", eos_token="<eos>",
        extra_special_tokens={"image_token": "<image>"})
    template = ("{% for m in messages %}{{ m['role'] }} : {% for c in m['content'] %}"
                "{% if c['type'] == 'image' %}<image> {% else %}{{ c['text'] }} {% endif %}{% endfor %}"
                "{% endfor %}{% if add_generation_prompt %}assistant :{% endif %}")
    processor = transformers.LlavaProcessor(
        image_processor=transformers.CLIPImageProcessor(size={"shortest_edge": 16},
                                                        crop_size={"height": 16, "width": 16}),
        tokenizer=tokenizer, patch_size=8, vision_feature_select_strategy="default", chat_template=template,
        image_token="<image>", num_additional_image_tokens=1)
    torch.manual_seed(0)
    ids = {"eos_token_id": vocab["<eos>"], "pad_token_id": vocab["<pad>"], "bos_token_id": vocab["<eos>"]}
    config = transformers.LlavaConfig(
        vision_config=transformers.CLIPVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                                    num_attention_heads=2, image_size=16, patch_size=8),
        text_config=transformers.LlamaConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64,
                                             num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                                             max_position_embeddings=256, **ids),
        image_token_index=vocab["<image>"], vision_feature_select_strategy="default", vision_feature_layer=-1)
    transformers.LlavaForConditionalGeneration(config).save_pretrained(path)
    processor.save_pretrained(path)
    return path
