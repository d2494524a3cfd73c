"""Price lookup (snapshots, provider prefixes), overrides and usage totals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vlnverse.errors import ConfigError
from vlnverse.llm import LLMResponse, PriceTable, Usage, UsageTotals


def test_lookup_matches_snapshots_and_prefixes() -> None:
    table = PriceTable.default()
    usage = Usage(1_000_000, 1_000_000)
    assert table.cost("gpt-4o", usage) == pytest.approx(12.5)
    assert table.cost("gpt-4o-2024-08-06", usage) == pytest.approx(12.5)
    assert table.cost("gpt-4o-mini-2024-07-18", usage) == pytest.approx(0.75)
    assert table.cost("openai/gpt-4.1-nano", usage) == pytest.approx(0.5)
    assert table.cost("gpt-4omni", usage) is None
    assert table.cost("qwen2.5-vl-7b", usage) is None


def test_environment_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"my-model": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}}))
    monkeypatch.setenv("VLNVERSE_LLM_PRICES", str(path))
    table = PriceTable.default()
    assert table.cost("my-model", Usage(500_000, 250_000)) == pytest.approx(1.0)
    assert table.cost("gpt-4o", Usage(1, 1)) is None


def test_bad_tables(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="exactly input_per_mtok and output_per_mtok"):
        PriceTable({"m": {"input": 1.0}})
    with pytest.raises(ConfigError, match=">= 0"):
        PriceTable({"m": {"input_per_mtok": -1.0, "output_per_mtok": 0.0}})
    bad = tmp_path / "p.json"
    bad.write_text("[]")
    with pytest.raises(ConfigError, match="must be a JSON object"):
        PriceTable.from_file(bad)
    with pytest.raises(ConfigError, match="cannot read price table"):
        PriceTable.from_file(tmp_path / "absent.json")


def test_totals_count_paid_calls_and_cached_hits() -> None:
    totals = UsageTotals()
    totals.add(LLMResponse("a", "m", Usage(10, 5), cost_usd=0.25))
    totals.add(LLMResponse("a", "m", Usage(10, 5), cost_usd=0.25, cached=True))
    assert totals.to_dict() == {
        "calls": 1,
        "cached_calls": 1,
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "cost_usd": 0.25,
    }
    worker = UsageTotals()
    worker.add(LLMResponse("b", "m", Usage(1, 1), cost_usd=0.5))
    totals.merge(worker.to_dict())
    assert totals.calls == 2 and totals.cost_usd == pytest.approx(0.75)
    totals.add(LLMResponse("c", "local", Usage(3, 3), cost_usd=None))
    assert totals.cost_usd is None and totals.prompt_tokens == 14
