"""A server that echoes the API key in its error bodies cannot get it into anything a run
writes or prints (``vlnverse eval`` as a user runs it, on a loopback server)."""

from __future__ import annotations

import gzip
import itertools
import json
import os
import subprocess
import sys

import pytest

from tests.bundled import REPO
from tests.cli_errors import one_error_line
from vlnverse.llm.loopback import LoopbackServer, Reply

KEY_ENV = "VLNVERSE_TEST_ECHOED_KEY"
KEY = "sk-proj-Echoed0123456789abcdef"


def echo_key():
    """500 then 401, alternately, each body naming the key (as some servers do)."""
    statuses = itertools.cycle([500, 401])

    def answer(body):
        status = next(statuses)
        error = {"error": {"message": f"Incorrect API key provided: {KEY}. Request {status}.", "type": "auth"}}
        return Reply(status=status, raw=json.dumps(error).encode())

    return answer


def everything_written(folder) -> str:
    texts = []
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            texts.append((gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8", "replace"))
    return "\n".join(texts)


def vlnverse(*args):
    return subprocess.run([sys.executable, "-m", "vlnverse", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, timeout=300, env={**os.environ, KEY_ENV: KEY})


@pytest.mark.slow
def test_an_echoed_api_key_is_masked_in_records_reports_pages_and_logs(bundled_dataset, tmp_path):
    out = tmp_path / "run"
    agent_config = tmp_path / "agent.json"
    agent_config.write_text(json.dumps({"panorama": {"views": 4, "image_size": 32}, "waypoint_predictor": "depth"}))
    with LoopbackServer(echo_key()) as server:
        spec = f"openai:gpt-4o?base_url={server.url}&api_key_env={KEY_ENV}&max_retries=1&backoff_base=0.01"
        result = vlnverse("-v", "eval", "--dataset", bundled_dataset, "--task", "fine", "--episodes", "2",
                          "--physics", "tel_hop", "--max-steps", "3", "--plots", "2", "--no-progress",
                          "--agent", "text_history", "--agent-config", agent_config, "--llm", spec, "--out", out,
                          "--llm-record", tmp_path / "calls.jsonl")
    assert result.returncode == 4, result.stderr  # every episode ended in an error
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert all("Incorrect API key provided: ***" in r["error"] for r in records)
    assert "Incorrect API key provided: ***" in result.stderr  # the warnings say what happened ...
    written = everything_written(out) + result.stdout + result.stderr
    assert KEY not in written and "Echoed0123" not in written  # ... without the key
    assert {p.name for p in out.iterdir()} >= {"summary.md", "index.html", "viewer", "episodes.jsonl"}


@pytest.mark.slow
def test_credentials_in_the_base_url_are_refused_in_one_line(bundled_dataset, tmp_path):
    spec = "openai:gpt-4o?base_url=http://bob:hunter2pw@127.0.0.1:9/v1&api_key_env=none"
    result = vlnverse("eval", "--dataset", bundled_dataset, "--agent", "text_history", "--llm", spec,
                      "--out", tmp_path / "run")
    assert result.returncode == 2
    assert "carries credentials (user:password@)" in one_error_line(result.stderr)
    assert "hunter2pw" not in result.stdout + result.stderr and not (tmp_path / "run").exists()
