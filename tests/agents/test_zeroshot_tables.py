"""``vlnverse eval zeroshot`` and ``zeroshot-tasks`` (aliases ``table5``, ``table6``): the paper's
zero-shot runs, recorded against a loopback model (and, for Table 6's dialogue block, a loopback
LLM oracle) and reproduced from their transcripts; their headers say what the numbers stand on."""

from __future__ import annotations

import json

import pytest

from tests.agents.conftest import SMALL
from vlnverse.cli import main
from vlnverse.errors import ConfigError
from vlnverse.eval.running.zeroshot import ZeroShotConfig, header, markdown, rows_of
from vlnverse.llm.loopback import LoopbackServer

KEY_ENV = "VLNVERSE_TABLE5_TEST_KEY"


ORACLE_ANSWER = "Go through the door ahead; the goal is two rooms on."


def walker(body: dict) -> str:
    """First offered move twice, then STOP (by the number of past steps in the prompt); on a
    dialogue episode it asks once first. A request that offers no options is the oracle's."""
    text = "\n".join(part if isinstance(part, str) else part.get("text", "")
                     for m in body["messages"] for part in ([m["content"]] if isinstance(m["content"], str)
                                                             else m["content"]))
    if "exactly one of: " not in text:
        return ORACLE_ANSWER
    options = text.rsplit("exactly one of: ", 1)[-1].split(".", 1)[0].split(", ")
    if "ASK" in options and "Q: " not in text:
        return json.dumps({"thought": "t", "summary": "s", "action": "ASK", "question": "Where is the goal?"})
    moves = [o for o in options if o not in ("STOP", "ASK")]
    steps = text.count("\nstep ")
    return json.dumps({"thought": "t", "summary": "s", "action": moves[0] if moves and steps < 2 else "STOP"})


@pytest.mark.slow
def test_table5_records_then_replays_the_same_tables(dataset, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(KEY_ENV, "sk-test")
    config = tmp_path / "agent.json"
    config.write_text(json.dumps(SMALL))
    common = ["eval", "zeroshot", "--dataset", str(dataset), "--agents", "text_history", "--tasks", "coarse",
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
    assert set(rows) == {("coarse", "tel_hop"), ("coarse", "strict")}
    assert set(rows["coarse", "strict"]["metrics"]) == {"TL", "NE", "SR", "OSR", "SPL", "nDTW", "CR"}
    assert "| Agent | Task | Physics | n | TL | NE | SR | OSR | SPL | nDTW | CR |" in replayed
    assert "| text_history | coarse | Strict | 1 |" in replayed and "Table 6" not in replayed
    assert "- privileged options: none" in replayed
    assert (tmp_path / "again" / "text_history" / "coarse" / "episodes.jsonl").is_file()


@pytest.mark.slow
def test_table6_records_its_three_blocks_with_the_oracle_then_replays_them(dataset, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(KEY_ENV, "sk-test")
    config = tmp_path / "agent.json"
    config.write_text(json.dumps({**SMALL, "privileged_subgoals": True}))
    # table6, the paper's name, is an alias of zeroshot-tasks
    common = ["eval", "table6", "--dataset", str(dataset), "--agents", "text_history", "--episodes", "1",
              "--max-steps", "4", "--bootstrap", "20", "--agent-config", str(config)]
    with LoopbackServer(walker) as server:
        spec = f"openai:qwen-test?base_url={server.url}&api_key_env={KEY_ENV}&max_retries=0&timeout=30"
        oracle = f"openai:qwen-oracle?base_url={server.url}&api_key_env={KEY_ENV}&max_retries=0&timeout=30"
        assert main([*common, "--llm", spec, "--oracle-llm", oracle, "--record", str(tmp_path / "tr"),
                     "--out", str(tmp_path / "live")]) == 0
    live = capsys.readouterr().out
    oracle_calls = [json.loads(line) for line in (tmp_path / "tr" / "text_history" / "dialogue.oracle.jsonl").open()]
    assert oracle_calls and all(c["response"]["text"] == ORACLE_ANSWER for c in oracle_calls)
    assert main([*common, "--replay", str(tmp_path / "tr"), "--out", str(tmp_path / "again")]) == 0
    replayed = capsys.readouterr().out
    rows = [json.loads((tmp_path / run / "table.json").read_text())["rows"] for run in ("live", "again")]
    assert rows[0] == rows[1]                                                   # the same numbers, no model
    assert "paper Table 6, Tel-Hop" in live and "- dialogue oracle: openai:qwen-oracle" in live
    assert "### Dialogue-based (LLM oracle: openai:qwen-oracle)" in live
    assert "- dialogue oracle: replayed qwen-oracle" in replayed and "model: replayed qwen-test" in replayed
    assert "- privileged options: sub-goals (privileged_subgoals)" in replayed
    assert "- physics: Tel-Hop;" in replayed and "Strict" not in replayed
    table = json.loads((tmp_path / "again" / "table.json").read_text())
    assert [(r["task"], r["physics"]) for r in table["rows"]] == [
        ("visual_reference", "tel_hop"), ("dialogue", "tel_hop"), ("long_horizon", "tel_hop")]
    assert {"SR_1", "SR_All"} <= set(table["rows"][2]["metrics"]) and "SR_1" not in table["rows"][0]["metrics"]
    episode = json.loads((tmp_path / "again" / "text_history" / "dialogue" / "episodes.jsonl").read_text().splitlines()[0])
    assert ORACLE_ANSWER in json.dumps(episode["agent_trace"]["steps"][1]["messages"])   # the oracle's answer, replayed


def test_table6_needs_the_oracle_for_its_dialogue_block():
    with pytest.raises(ConfigError, match="--oracle-llm"):
        ZeroShotConfig(dataset="d", out="o", llm="openai:m", table="table6")
    assert ZeroShotConfig(dataset="d", out="o", llm="openai:m", table="table6", tasks=("long_horizon",)).physics \
        == ("tel_hop",)
    with pytest.raises(ConfigError, match="tasks must be among"):
        ZeroShotConfig(dataset="d", out="o", replay="r", table="table6", tasks=("coarse",))


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
