"""``vlnverse eval table5``: the paper's zero-shot run, recorded against a loopback model and
reproduced from its transcripts; its header says what the numbers stand on."""

from __future__ import annotations

import json

import pytest

from tests.agents.conftest import SMALL
from vlnverse.cli import main
from vlnverse.errors import ConfigError
from vlnverse.eval.zeroshot import ZeroShotConfig, header, markdown, rows_of
from vlnverse.llm.loopback import LoopbackServer

KEY_ENV = "VLNVERSE_TABLE5_TEST_KEY"


def walker(body: dict) -> str:
    """First offered move twice, then STOP (by the number of past steps in the prompt)."""
    text = "\n".join(part if isinstance(part, str) else part.get("text", "")
                     for m in body["messages"] for part in ([m["content"]] if isinstance(m["content"], str)
                                                             else m["content"]))
    options = text.rsplit("exactly one of: ", 1)[-1].split(".", 1)[0].split(", ")
    moves = [o for o in options if o not in ("STOP", "ASK")]
    steps = text.count("\nstep ")
    return json.dumps({"thought": "t", "summary": "s", "action": moves[0] if moves and steps < 2 else "STOP"})


def test_table5_records_then_replays_the_same_tables(dataset, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(KEY_ENV, "sk-test")
    config = tmp_path / "agent.json"
    config.write_text(json.dumps(SMALL))
    common = ["eval", "table5", "--dataset", str(dataset), "--agents", "text_history", "--tasks", "coarse,long_horizon",
              "--physics", "tel_hop,strict", "--episodes", "1", "--max-steps", "4", "--bootstrap", "20",
              "--agent-config", str(config)]
    with LoopbackServer(walker) as server:
        spec = f"openai:qwen-test?base_url={server.url}&api_key_env={KEY_ENV}&max_retries=0&timeout=30"
        assert main([*common, "--llm", spec, "--record", str(tmp_path / "tr"), "--out", str(tmp_path / "live")]) == 0
        calls = server.calls
    live = capsys.readouterr().out
    assert calls > 0 and (tmp_path / "tr" / "text_history" / "coarse.jsonl").is_file()
    assert main([*common, "--replay", str(tmp_path / "tr"), "--out", str(tmp_path / "again")]) == 0
    replayed = capsys.readouterr().out
    assert live.split("### Table 5")[1] == replayed.split("### Table 5")[1]   # the same numbers, no model
    assert "- perception: **vlm**" in live and "checkpoint=shipped, name=learned" in live
    assert "model: openai:qwen-test" in live and "model: replayed qwen-test" in replayed
    assert "1 sampled per task from split `test` (seed 0)" in live
    table = json.loads((tmp_path / "again" / "table.json").read_text())
    rows = {(r["task"], r["physics"]): r for r in table["rows"]}
    assert set(rows) == {("coarse", "tel_hop"), ("coarse", "strict"), ("long_horizon", "tel_hop"),
                         ("long_horizon", "strict")}
    assert set(rows["coarse", "strict"]["metrics"]) == {"TL", "NE", "SR", "OSR", "SPL", "nDTW", "CR"}
    assert "| Agent | Task | Physics | n | TL | NE | SR | OSR | SPL | nDTW | CR |" in replayed
    assert {"SR_1", "SR_All"} <= set(rows["long_horizon", "tel_hop"]["metrics"])
    assert "| text_history | coarse | Strict | 1 |" in replayed and "### Table 6 (long-horizon)" in replayed
    assert (tmp_path / "again" / "text_history" / "coarse" / "episodes.jsonl").is_file()


def test_privileged_perception_is_labelled_in_the_header_and_every_row():
    config = ZeroShotConfig(dataset="d", out="o", replay="r", perception="gt", tasks=("coarse",))
    run = {"agent": "map_history", "task": "coarse", "run": {"waypoint_predictor": {"name": "depth"}},
           "summary": {"episodes": 2, "overall": [{"task": "coarse", "physics": "strict", "n_episodes": 2,
                                                   "metrics": {"SR": {"mean": 0.5, "ci_low": 0.0, "ci_high": 1.0}}}]},
           "stopped": None}
    rows = rows_of(run, "gt")
    assert rows[0]["agent"] == "map_history (privileged perception)"
    text = markdown({"header": {**header(config, [run]), "model": "m"}, "rows": rows})
    assert "perception: **gt (privileged perception)**" in text and "name=depth" in text
    assert "| map_history (privileged perception) | coarse | Strict | 2 | - | - | 50.00 [0.0, 100.0] |" in text


def test_table5_needs_one_source_of_answers():
    with pytest.raises(ConfigError, match="--llm"):
        ZeroShotConfig(dataset="d", out="o")
    with pytest.raises(ConfigError, match="--record"):
        ZeroShotConfig(dataset="d", out="o", replay="r", record="x")
