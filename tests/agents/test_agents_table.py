"""tools/agents_table.py: a table recorded against a model is reproduced from its transcripts."""

from __future__ import annotations

import importlib.util
import json

from tests.agents.conftest import SMALL, ScriptedModel, walk_then_stop
from tests.bundled import REPO
from vlnverse.llm.transcript import RecordingClient


def load_tool():
    spec = importlib.util.spec_from_file_location("agents_table", REPO / "tools" / "agents_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_table_replays_from_recorded_transcripts(dataset, tmp_path, monkeypatch, capsys):
    tool = load_tool()
    config = tmp_path / "agent.json"
    config.write_text(json.dumps(SMALL))
    common = ["--dataset", str(dataset), "--agents", "text_history,map_history_cot", "--physics", "tel_hop",
              "--episodes", "1", "--agent-config", str(config)]
    monkeypatch.setattr(tool, "client_for", lambda agent, args: RecordingClient(
        ScriptedModel(walk_then_stop(1)), tmp_path / "transcripts" / f"{agent}.jsonl"))
    assert tool.main([*common, "--llm", "none", "--out", str(tmp_path / "live")]) == 0
    recorded = capsys.readouterr().out
    monkeypatch.undo()
    assert tool.main([*common, "--replay", str(tmp_path / "transcripts"), "--out", str(tmp_path / "again")]) == 0
    replayed = capsys.readouterr().out
    assert replayed == recorded and recorded.count("| tel_hop | 1 |") == 2
    assert (tmp_path / "again" / "table.md").read_text() == replayed
