"""Per-model token prices and usage/cost accounting.

Prices are USD per million tokens. The bundled table (``prices.json``) lists public list
prices of common models and may age; pass your own table or point
``VLNVERSE_LLM_PRICES`` at a JSON file of the same shape to override it. A model not in
the table has an unknown cost (``None``), never a guessed one.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from vlnverse.errors import ConfigError
from vlnverse.llm.types import LLMResponse, Usage

PRICES_ENV = "VLNVERSE_LLM_PRICES"


@dataclass(frozen=True)
class ModelPrice:
    """USD per million input (prompt) and output (completion) tokens."""

    input_per_mtok: float
    output_per_mtok: float

    def __post_init__(self) -> None:
        if self.input_per_mtok < 0 or self.output_per_mtok < 0:
            raise ConfigError(f"prices must be >= 0, got {self}")

    def cost(self, usage: Usage) -> float:
        return (
            usage.prompt_tokens * self.input_per_mtok
            + usage.completion_tokens * self.output_per_mtok
        ) / 1e6


class PriceTable:
    """Model name → :class:`ModelPrice`; dated snapshots match their base name.

    ``gpt-4o-2024-08-06`` is priced as ``gpt-4o`` (the longest table entry that is a
    prefix followed by ``-``), and ``openai/gpt-4o`` as ``gpt-4o`` (provider prefixes
    are dropped), so routers and snapshots need no entries of their own.
    """

    def __init__(self, prices: Mapping[str, ModelPrice | Mapping[str, float]]) -> None:
        self._prices: dict[str, ModelPrice] = {}
        for name, price in prices.items():
            if isinstance(price, Mapping):
                unknown = sorted(set(price) - {"input_per_mtok", "output_per_mtok"})
                if unknown or len(price) != 2:
                    raise ConfigError(
                        f"price of {name!r} needs exactly input_per_mtok and output_per_mtok, got {sorted(price)}"
                    )
                price = ModelPrice(float(price["input_per_mtok"]), float(price["output_per_mtok"]))
            self._prices[name] = price

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> PriceTable:
        """Load ``{"model": {"input_per_mtok": x, "output_per_mtok": y}, ...}``."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"cannot read price table {path}: {exc}") from exc
        if not isinstance(data, dict):
            raise ConfigError(f"price table {path} must be a JSON object")
        data.pop("_comment", None)
        return cls(data)

    @classmethod
    def default(cls) -> PriceTable:
        """The table named by ``VLNVERSE_LLM_PRICES``, else the bundled one."""
        override = os.environ.get(PRICES_ENV)
        if override:
            return cls.from_file(override)
        with resources.as_file(resources.files("vlnverse.llm") / "prices.json") as path:
            return cls.from_file(path)

    def lookup(self, model: str) -> ModelPrice | None:
        """The price of ``model``, or None when unknown."""
        name = model.rsplit("/", 1)[-1]
        if name in self._prices:
            return self._prices[name]
        best = max((k for k in self._prices if name.startswith(k + "-")), key=len, default=None)
        return self._prices[best] if best else None

    def cost(self, model: str, usage: Usage) -> float | None:
        price = self.lookup(model)
        return None if price is None else price.cost(usage)


class UsageTotals:
    """Running totals of calls, tokens and cost; thread-safe.

    Cached responses are counted as hits and cost nothing (they were paid for before).
    A cost is ``None`` once any paid call had an unknown price, so totals never
    under-report silently.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls = 0
        self.cached_calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cost_usd: float | None = 0.0

    def add(self, response: LLMResponse) -> None:
        with self._lock:
            if response.cached:
                self.cached_calls += 1
                return
            self.calls += 1
            self.prompt_tokens += response.usage.prompt_tokens
            self.completion_tokens += response.usage.completion_tokens
            if self.cost_usd is not None:
                self.cost_usd = (
                    None if response.cost_usd is None else self.cost_usd + response.cost_usd
                )

    def merge(self, other: UsageTotals | Mapping[str, Any]) -> None:
        """Add another totals object (or its :meth:`to_dict`), e.g. from a worker process."""
        data = other.to_dict() if isinstance(other, UsageTotals) else other
        with self._lock:
            self.calls += int(data["calls"])
            self.cached_calls += int(data["cached_calls"])
            self.prompt_tokens += int(data["prompt_tokens"])
            self.completion_tokens += int(data["completion_tokens"])
            cost = data["cost_usd"]
            self.cost_usd = None if cost is None or self.cost_usd is None else self.cost_usd + cost

    def to_dict(self) -> dict[str, Any]:
        with self._lock:
            return {
                "calls": self.calls,
                "cached_calls": self.cached_calls,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "cost_usd": self.cost_usd,
            }
