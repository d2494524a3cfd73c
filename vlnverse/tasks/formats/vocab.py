"""The instruction vocabulary and token ids both external formats carry (VLN-CE style)."""

from __future__ import annotations

import re
from collections.abc import Iterable

PAD, UNK = "<pad>", "<unk>"
MAX_TOKENS = 200
_TOKEN = re.compile(r"[a-z0-9]+|[^\sa-z0-9]")


def tokenize(text: str) -> list[str]:
    """Lower-case words and punctuation marks."""
    return _TOKEN.findall(text.lower())


def build_vocab(texts: Iterable[str]) -> dict:
    """``instruction_vocab`` as VLN-CE writes it (``<pad>`` = 0, ``<unk>`` = 1, then sorted words)."""
    words = sorted({t for text in texts for t in tokenize(text)} - {PAD, UNK})
    word_list = [PAD, UNK] + words
    index = {w: i for i, w in enumerate(word_list)}
    return {"word_list": word_list, "word2idx_dict": index, "itos": word_list, "stoi": index,
            "num_vocab": len(word_list), "PAD_INDEX": 0, "UNK_INDEX": 1}


def encode(text: str, vocab: dict, length: int = MAX_TOKENS) -> list[int]:
    """Token ids of ``text`` padded (or cut) to ``length``."""
    ids = [vocab["stoi"].get(t, 1) for t in tokenize(text)][:length]
    return ids + [0] * (length - len(ids))
