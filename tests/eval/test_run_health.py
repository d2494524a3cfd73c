"""A run that measured nothing says so: refused before it starts, warned about, or exiting
with a documented status (``vlnverse eval`` as a user runs it, against loopback servers)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys

import pytest

from tests.bundled import REPO
from tests.cli_errors import one_error_line
from tests.eval.agents_for_tests import BROKEN_ENV
from vlnverse.cli.eval import ALL_ERRORED_EXIT, UNREACHABLE_EXIT
from vlnverse.llm.loopback import LoopbackServer

CHAT_AGENT = "tests.eval.llm_agents_for_tests:ChatStepAgent"


def vlnverse(*args, env=None):
    return subprocess.run([sys.executable, "-m", "vlnverse", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, timeout=300, env={**os.environ, **(env or {})})


def small_run(dataset, out, *extra):
    return ["eval", "--dataset", dataset, "--task", "fine", "--episodes", "2", "--physics", "tel_hop",
            "--max-steps", "4", "--plots", "0", "--no-progress", "--out", out, *extra]


def keyless(url: str) -> str:
    return f"openai:gpt-4o?base_url={url}&api_key_env=none&max_retries=0&timeout=5"


def warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("warning: ")]


@pytest.mark.slow
def test_an_llm_agent_without_a_model_is_refused_in_one_line(bundled_dataset, tmp_path):
    result = vlnverse(*small_run(bundled_dataset, tmp_path / "run", "--agent", "text_history"))
    assert result.returncode == 2, result.stdout
    assert "needs a model: pass --llm" in one_error_line(result.stderr)
    assert not (tmp_path / "run" / "episodes.jsonl").exists()


@pytest.mark.slow
def test_replies_that_ignore_the_format_are_counted_and_warned_about(bundled_dataset, tmp_path):
    with LoopbackServer(lambda body: "I would rather talk about the weather.") as server:
        result = vlnverse(*small_run(bundled_dataset, tmp_path / "run", "--agent", CHAT_AGENT,
                                     "--llm", keyless(server.url)))
    assert result.returncode == 0, result.stderr
    assert "health: 8 of 8 steps by fallback (100.0%) · 8 repair prompts · 0 error episode(s)" in result.stdout
    [warning] = warnings(result.stderr)
    assert "100% of the agent's steps (8 of 8) were fallback moves, above the 50% threshold" in warning
    summary = (tmp_path / "run" / "summary.md").read_text()
    assert "### Run health" in summary and "8 of 8 steps by fallback" in summary
    assert "**Warning:** 100% of the agent's steps" in summary
    health = json.loads((tmp_path / "run" / "summary.json").read_text())["health"]
    assert (health["fallback_share"], health["repairs"], health["verdict"]) == (1.0, 8, "ok")

    # the threshold is a setting: at 100 % nothing is above it
    again = vlnverse(*small_run(bundled_dataset, tmp_path / "run", "--agent", CHAT_AGENT, "--llm",
                                keyless(server.url), "--fallback-warning", "1"))
    assert again.returncode == 0 and warnings(again.stderr) == [] and "0 evaluated, 2 resumed" in again.stdout


@pytest.mark.slow
def test_an_unreachable_server_exits_with_its_own_status(bundled_dataset, tmp_path):
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = vlnverse(*small_run(bundled_dataset, tmp_path / "run", "--agent", CHAT_AGENT,
                                 "--llm", keyless(f"http://127.0.0.1:{port}/v1")))
    assert result.returncode == UNREACHABLE_EXIT, result.stderr
    assert any("the model server could not be reached in 2 of 2 episode(s)" in w for w in warnings(result.stderr))
    assert "2 with the model server unreachable" in result.stdout
    records = [json.loads(line) for line in (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()]
    assert all(r["llm"]["unreachable_calls"] > 0 for r in records)


def test_a_run_whose_every_episode_errored_exits_with_its_own_status(bundled_dataset, tmp_path):
    agent = "tests.eval.agents_for_tests:FixableAgent"
    result = vlnverse(*small_run(bundled_dataset, tmp_path / "run", "--agent", agent, "--json"),
                      env={BROKEN_ENV: "1"})
    assert result.returncode == ALL_ERRORED_EXIT, result.stderr
    assert json.loads(result.stdout)["summary"]["health"]["errors"] == 2
    assert any("2 of 2 episode(s) ended in an error (source: agent; first: RuntimeError: boom" in w
               for w in warnings(result.stderr))
    assert "### Episodes that ended in an error: 2" in (tmp_path / "run" / "summary.md").read_text()


@pytest.mark.parametrize("verdict, stopped, status", [("unreachable", "spent", 5), ("all_errored", "spent", 4),
                                                      ("ok", "spent", 3), ("ok", None, 0)])
def test_exit_status_precedence(verdict, stopped, status):
    from vlnverse.cli.eval import exit_status

    assert exit_status({"verdict": verdict}, stopped) == status


@pytest.mark.slow
def test_retry_errors_runs_again_only_the_episodes_that_errored(bundled_dataset, tmp_path):
    agent = "tests.eval.agents_for_tests:FixableAgent"
    out = tmp_path / "run"
    episodes = out / "episodes.jsonl"
    good = vlnverse(*small_run(bundled_dataset, out, "--agent", agent, "--physics", "strict"))
    assert good.returncode == 0, good.stderr
    strict_lines = episodes.read_text().splitlines()

    broken = vlnverse(*small_run(bundled_dataset, out, "--agent", agent, "--physics", "strict,tel_hop"),
                      env={BROKEN_ENV: "1"})
    assert broken.returncode == 0 and "2 evaluated, 2 resumed" in broken.stdout  # not every record errored
    assert any("2 of 4 episode(s) ended in an error" in w for w in warnings(broken.stderr))

    fixed = small_run(bundled_dataset, out, "--agent", agent, "--physics", "strict,tel_hop")
    kept = vlnverse(*fixed)  # a plain re-run keeps the error records
    assert "0 evaluated, 4 resumed" in kept.stdout and warnings(kept.stderr)
    retried = vlnverse(*fixed, "--retry-errors")
    assert retried.returncode == 0, retried.stderr
    assert "2 evaluated, 2 resumed, 2 error record(s) run again" in retried.stdout
    assert warnings(retried.stderr) == []
    lines = episodes.read_text().splitlines()
    assert lines[:2] == strict_lines  # the other records are kept byte for byte
    records = [json.loads(line) for line in lines]
    assert [r["fail_reason"] for r in records] == ["stop"] * 4
    assert len({(r["episode_id"], r["physics"]) for r in records}) == 4


@pytest.mark.slow
def test_an_agent_from_a_file_is_named_by_its_class_and_its_errors_are_marked(bundled_dataset, tmp_path):
    """``--agent path/file.py:Class`` rows read ``Class`` (``--label`` renames them), errored episodes are
    counted in their row, the warning says where the traceback is, and no LLM health line is printed."""
    out = tmp_path / "run"
    result = vlnverse(*small_run(bundled_dataset, out, "--agent", "tests/eval/agents_for_tests.py:FixableAgent"),
                      env={BROKEN_ENV: "1"})
    assert result.returncode == ALL_ERRORED_EXIT, result.stderr
    assert "│ FixableAgent │ Tel-Hop │" in result.stdout and "2 (2 errored)" in result.stdout
    assert "health:" not in result.stdout and "agents_for_tests.py" not in result.stdout
    assert any("--debug shows each traceback" in w for w in warnings(result.stderr))
    assert "# VLNVerse evaluation — agent `FixableAgent`" in (out / "summary.md").read_text()
    assert "<title>VLNVerse evaluation — FixableAgent</title>" in (out / "index.html").read_text()
    again = vlnverse(*small_run(bundled_dataset, out, "--agent", "tests/eval/agents_for_tests.py:FixableAgent",
                                "--label", "mine"), env={BROKEN_ENV: "1"})
    assert re.search(r"│ mine +│ Tel-Hop +│", again.stdout) and "0 evaluated, 2 resumed" in again.stdout
    assert "agent `mine`" in (out / "summary.md").read_text()
