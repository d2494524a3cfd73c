"""LLM/VLM clients shared by instruction generation and the LLM agents.

One interface, :class:`LLMClient` (``complete(messages, **params) -> LLMResponse``), with
real backends — any OpenAI-compatible endpoint (:class:`OpenAIClient`) and a local
transformers model (:class:`HFClient`, ``hf`` extra, imported lazily) — and wrappers:
:class:`CachedClient` (on-disk cache by request hash), :class:`RecordingClient` and
:class:`ReplayClient` (JSONL transcripts for exact, offline reproduction).
:func:`make_llm` builds any of them from a spec string such as ``openai:gpt-4o``.
"""

from vlnverse.llm.base import LLMClient, Messages
from vlnverse.llm.cache import CachedClient
from vlnverse.llm.factory import LLM_BACKENDS, make_llm, parse_spec
from vlnverse.llm.images import ImagePart, encode_png
from vlnverse.llm.jsonanswer import extract_json, parse_json_answer
from vlnverse.llm.pricing import ModelPrice, PriceTable, UsageTotals
from vlnverse.llm.transcript import (
    RecordingClient,
    ReplayClient,
    read_transcript,
    transcript_record,
)
from vlnverse.llm.types import ChatMessage, GenerationParams, LLMRequest, LLMResponse, Usage

__all__ = [
    "HFClient",
    "OpenAIClient",
    "LLM_BACKENDS",
    "CachedClient",
    "ChatMessage",
    "GenerationParams",
    "ImagePart",
    "LLMClient",
    "LLMRequest",
    "LLMResponse",
    "Messages",
    "ModelPrice",
    "PriceTable",
    "RecordingClient",
    "ReplayClient",
    "Usage",
    "UsageTotals",
    "encode_png",
    "extract_json",
    "make_llm",
    "parse_json_answer",
    "parse_spec",
    "read_transcript",
    "transcript_record",
]

_LAZY = {
    "OpenAIClient": "vlnverse.llm.openai_client",
    "HFClient": "vlnverse.llm.hf_client",
}


def __getattr__(name: str):
    """Import the backends on first use (openai, torch and transformers load lazily)."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'vlnverse.llm' has no attribute {name!r}")
