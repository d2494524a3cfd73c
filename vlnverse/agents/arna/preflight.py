"""Refusing, before a run, a model ARNA cannot run with.

ARNA's cost budget (``max_cost_usd``, §6.3) needs each call's price. A model without one
(a local server, a model missing from the price table and ``VLNVERSE_LLM_PRICES``) can
still run with a token cap (``max_tokens_per_episode``); without either, every episode
would end in the same error at its first call, so the run is refused before it starts.
"""

from __future__ import annotations

from pathlib import Path

from vlnverse.errors import ConfigError
from vlnverse.llm.factory import parse_spec
from vlnverse.llm.pricing import PriceTable


def unpriced_models(spec: str) -> list[str]:
    """The models ``spec`` answers with that have no price: an ``openai:``/``hf:`` model
    the price table lacks, or a replayed transcript's unpriced answers' models."""
    parsed = parse_spec(spec)
    if parsed is None:
        return []
    backend, target, _ = parsed
    if backend == "replay":
        from vlnverse.llm.transcript import read_transcript

        if not Path(target).is_file():
            return []  # the replay client names the missing file itself
        return sorted({str(r["response"].get("model") or r["request"].get("model", "?"))
                       for r in read_transcript(target) if r["response"].get("cost_usd") is None})
    return [] if PriceTable.default().lookup(target) is not None else [target]


def check_priced(spec: str, max_tokens_per_episode: int) -> None:
    """Refuse ``spec`` when a model of it has no price and no token cap is set.

    Raises:
        ConfigError: one line naming the model and both ways out.
    """
    unpriced = unpriced_models(spec)
    if unpriced and not max_tokens_per_episode:
        raise ConfigError(f"arna: model {', '.join(unpriced)} has no price, so max_cost_usd cannot hold: "
                          "give its price (VLNVERSE_LLM_PRICES) or set max_tokens_per_episode")
