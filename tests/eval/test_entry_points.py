"""``--agent`` entry points a user writes: a file, or a module in the current folder."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.cli_errors import one_error_line
from vlnverse.errors import RegistryError
from vlnverse.eval.registry import agent_factory, make_agent

AGENT_SOURCE = '''
from dataclasses import dataclass

from vlnverse.eval.agent import Agent


@dataclass(frozen=True)
class TurnerConfig:
    turn: int = 2


class Turner(Agent):
    """Turns on the spot; the config decides which way."""

    config_class = TurnerConfig
    sensors = ()

    def __init__(self, config):
        self.config = config

    def act(self, observation):
        return self.config.turn
'''


def _vlnverse(cwd, *args):
    """The CLI as its console script sees ``sys.path``: without the current folder (``-P``)."""
    return subprocess.run([sys.executable, "-P", "-m", "vlnverse", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, timeout=300)


def test_a_module_in_the_current_folder_is_found_from_the_cli(bundled_dataset, tmp_path):
    (tmp_path / "my_turner.py").write_text(AGENT_SOURCE)
    (tmp_path / "agent.yaml").write_text("turn: 3\n")
    out = tmp_path / "run"
    done = _vlnverse(tmp_path, "eval", "--dataset", bundled_dataset, "--agent", "my_turner:Turner",
                     "--agent-config", "agent.yaml", "--split", "test", "--task", "fine", "--physics",
                     "Tel-Hop", "--max-steps", "3", "--plots", "0", "--out", out, "--json")
    assert done.returncode == 0, done.stderr
    record = json.loads((out / "episodes.jsonl").read_text().splitlines()[0])
    assert record["actions"] == [3, 3, 3] and record["physics"] == "tel_hop"


@pytest.mark.slow
def test_a_file_path_and_what_an_unknown_module_error_says(bundled_dataset, tmp_path):
    folder = tmp_path / "agents"
    folder.mkdir()
    (folder / "turner.py").write_text(AGENT_SOURCE)
    out = tmp_path / "run"
    done = _vlnverse(tmp_path, "eval", "--dataset", bundled_dataset, "--agent", "agents/turner.py:Turner",
                     "--split", "test", "--task", "fine", "--physics", "tel-hop", "--max-steps", "2",
                     "--plots", "0", "--out", out, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads((out / "episodes.jsonl").read_text().splitlines()[0])["actions"] == [2, 2]
    done = _vlnverse(tmp_path, "eval", "--dataset", bundled_dataset, "--agent", "nowhere_agents:Turner",
                     "--out", tmp_path / "x")
    line = one_error_line(done.stderr)
    assert done.returncode == 2 and "no module named 'nowhere_agents'" in line
    assert f"looked in the current folder {tmp_path}" in line and "nowhere_agents.py" in line
    done = _vlnverse(tmp_path, "eval", "--dataset", bundled_dataset, "--agent", "agents/turner.py:Turnr",
                     "--out", tmp_path / "y")
    line = one_error_line(done.stderr)
    assert done.returncode == 2 and "has no 'Turnr'" in line and "Turner" in line
    done = _vlnverse(tmp_path, "eval", "--dataset", bundled_dataset, "--agent", "agents/turnr.py:Turner",
                     "--out", tmp_path / "z")
    assert done.returncode == 2 and f"no file {folder / 'turnr.py'}" in one_error_line(done.stderr)


def test_file_agents_import_their_neighbours_and_load_once(tmp_path, monkeypatch):
    folder = tmp_path / "agents"
    folder.mkdir()
    (folder / "turner.py").write_text(AGENT_SOURCE)
    (folder / "helper.py").write_text("TURN = 3\n")
    (folder / "uses_helper.py").write_text("import helper\n\ndef policy(observation):\n    return helper.TURN\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert make_agent("agents/uses_helper.py:policy").act({}) == 3
    assert agent_factory("agents/turner.py:Turner") is agent_factory(f"{folder}/turner.py:Turner")
    assert make_agent("agents/turner.py:Turner", {"turn": 1}).act({}) == 1
    with pytest.raises(Exception, match="turm"):
        make_agent("agents/turner.py:Turner", {"turm": 1})


def test_a_broken_dependency_inside_a_found_module_is_named(tmp_path, monkeypatch):
    (tmp_path / "needs_missing.py").write_text("import surely_not_installed_pkg\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    with pytest.raises(RegistryError, match="importing needs_missing failed: No module named 'surely_not_installed_pkg'"):
        agent_factory("needs_missing:Agent")


def test_a_plain_function_is_an_agent_object_for_evaluate(bundled_dataset, tmp_path):
    """``evaluate(config, agent=f)`` with a bare policy function (the README's Python example)."""
    from vlnverse.eval.running.harness import EvalConfig, evaluate

    result = evaluate(EvalConfig(dataset=str(bundled_dataset), out=str(tmp_path / "run"), agent="always_left",
                                 split="test", task="fine", physics=("tel_hop",), max_steps=2, plots=0,
                                 bootstrap=10), agent=lambda observation: 2)
    assert [r["actions"] for r in result.records] == [[2, 2]] and result.records[0]["fail_reason"] == "step_budget"
