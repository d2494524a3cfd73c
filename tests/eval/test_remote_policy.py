"""The ``remote`` agent against policy servers in separate processes: one without vlnverse
(``remote_policy_server.py`` under ``python -I -S``, only websockets, msgpack and numpy on its
path), and ``vlnverse serve-policy``; then the fault table, each fault an ``error`` record."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.bundled import REPO
from vlnverse.eval.running.harness import EvalConfig, evaluate

SERVER = Path(__file__).with_name("remote_policy_server.py")
pytest.importorskip("websockets")
pytest.importorskip("msgpack")


@pytest.fixture(scope="module")
def bare_path(tmp_path_factory) -> Path:
    """A folder holding only numpy, msgpack and websockets (links to this venv's copies)."""
    import msgpack
    import numpy
    import websockets

    folder = tmp_path_factory.mktemp("bare_site")
    for module in (numpy, msgpack, websockets):
        package = Path(module.__file__).parent
        for name in (package.name, f"{package.name}.libs"):
            if (package.parent / name).exists():
                (folder / name).symlink_to(package.parent / name)
    return folder


def _ready_line(process: subprocess.Popen, prefix: str, timeout: float = 60.0) -> str:
    """The first stdout line starting with ``prefix`` (the process is killed past ``timeout``)."""
    timer = threading.Timer(timeout, process.kill)
    timer.start()
    try:
        for line in process.stdout:
            if line.startswith(prefix):
                return line.strip()
    finally:
        timer.cancel()
    raise AssertionError(f"server gave no {prefix!r} line: {process.stderr.read()}")


@contextlib.contextmanager
def started(command: list[str], prefix: str, **kwargs):
    """A server process; yields its ready line and the process (killed on exit)."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                               **kwargs)
    try:
        yield _ready_line(process, prefix), process
    finally:
        process.kill()
        process.wait(timeout=30)
        process.stdout.close()
        process.stderr.close()


def bare_server(bare_path: Path, mode: str = "ok", *extra: str):
    """A server of ``mode`` in a Python that cannot import vlnverse; yields its URL."""
    command = [sys.executable, "-I", "-S", str(SERVER), "--path", str(bare_path), "--mode", mode, *extra]
    return started(command, "listening ")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run(dataset: Path, out: Path, agent: str, config: dict | None = None, **kwargs) -> dict:
    settings = {"split": "test", "task": "coarse", "physics": ("tel_hop",), "max_steps": 8, "plots": 0} | kwargs
    result = evaluate(EvalConfig(dataset=str(dataset), out=str(out), agent=agent, agent_config=config or {},
                                 **settings))
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    return {"result": result, "records": records}


@pytest.mark.slow
def test_cli_eval_against_a_server_without_vlnverse(bundled_dataset, bare_path, tmp_path):
    key = "sk-remote-test-0123456789"
    with bare_server(bare_path, "ok", "--api-key", key) as (line, _):
        url = f"ws://127.0.0.1:{line.split()[1]}"
        config = tmp_path / "remote.yaml"
        config.write_text(f"url: {url}\napi_key_env: POLICY_KEY\nsensors: [rgb, depth]\n")
        out = tmp_path / "run"
        done = subprocess.run(
            [sys.executable, "-m", "vlnverse", "eval", "--dataset", str(bundled_dataset), "--agent", "remote",
             "--agent-config", str(config), "--split", "test", "--task", "fine", "--physics", "tel_hop",
             "--max-steps", "8", "--out", str(out), "--json", "--no-progress"],
            capture_output=True, text=True, cwd=REPO, timeout=300, env={**os.environ, "POLICY_KEY": key})
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert [(r["fail_reason"], r["actions"]) for r in records] == [("stop", [1, 1, 0])]
    assert all(key not in p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    run_file = json.loads((out / "run.json").read_text())["run"]
    assert run_file["action_space"] == "discrete"
    assert run_file["label"] == run_file["served_agent"] == "TestPolicy"  # the server's metadata names its agent
    (timing,) = [json.loads(line) for line in (out / "timings.jsonl").read_text().splitlines()]
    assert {"build", "built", "agent", "env", "waited", "total"} <= set(timing) and timing["agent"] > 0
    assert json.loads(done.stdout)["timings"][0]["episode_id"] == records[0]["episode_id"]


def test_a_wrong_key_and_a_server_without_control_frames(bundled_dataset, bare_path, tmp_path, monkeypatch):
    monkeypatch.setenv("POLICY_KEY", "not-the-right-key")
    with bare_server(bare_path, "noctrl", "--api-key", "the-right-key-123") as (line, _):
        url = f"ws://127.0.0.1:{line.split()[1]}"
        refused = run(bundled_dataset, tmp_path / "refused", url,
                      {"api_key_env": "POLICY_KEY", "action_space": "discrete", "reconnects": 0})
        monkeypatch.setenv("POLICY_KEY", "the-right-key-123")
        fallback = run(bundled_dataset, tmp_path / "fallback", url, {"api_key_env": "POLICY_KEY"})
    assert {r["fail_reason"] for r in refused["records"]} == {"error"}
    assert "HTTP 401" in refused["records"][0]["error"]
    assert [r["fail_reason"] for r in fallback["records"]] == ["stop", "stop"]
    assert {tuple(r["actions"]) for r in fallback["records"]} == {(1, 1, 0)}


FAULTS = {  # mode: what the error says
    "slow": "did not send an action for step 0 within 1 s",
    "close": "closed the connection",
    "garbage": "frame is not msgpack",
    "outside": "outside the declared space",
    "nan": "is not finite",
    "huge": "over our size limit",
    "text": "the peer sent an error: RuntimeError: CUDA out of memory",
}


@pytest.mark.slow
@pytest.mark.parametrize("mode", sorted(FAULTS))
@pytest.mark.timeout(120)
def test_a_fault_is_an_error_record_and_the_run_goes_on(mode, bundled_dataset, bare_path, tmp_path):
    with bare_server(bare_path, mode) as (line, _):
        url = f"ws://127.0.0.1:{line.split()[1]}"
        done = run(bundled_dataset, tmp_path / mode, url, {"step_timeout_s": 1 if mode == "slow" else 20,
                                                               "reconnect_delay_s": 0.05})
    assert done["result"].evaluated == 2
    assert [r["fail_reason"] for r in done["records"]] == ["error", "error"], done["records"]
    errors = [r["error"] for r in done["records"]]
    assert all(FAULTS[mode] in e and "\n" not in e for e in errors), errors


@pytest.mark.timeout(120)
def test_a_server_that_is_down_fails_episodes_and_retry_errors_runs_them_again(bundled_dataset, bare_path,
                                                                             tmp_path):
    port = free_port()
    config = {"url": f"ws://127.0.0.1:{port}", "action_space": "discrete", "reconnects": 1,
              "reconnect_delay_s": 0.05}
    down = run(bundled_dataset, tmp_path / "run", "remote", config)
    assert [r["fail_reason"] for r in down["records"]] == ["error", "error"]
    assert "cannot connect to the policy server ws://127.0.0.1" in down["records"][0]["error"]
    with bare_server(bare_path, "ok", "--port", str(port)):
        again = run(bundled_dataset, tmp_path / "run", "remote", config, retry_errors=True)
    assert again["result"].retried == 2
    assert [r["fail_reason"] for r in again["records"]] == ["stop", "stop"]


def connects(process: subprocess.Popen) -> int:
    """How many connections a test server (killed) took in all."""
    process.kill()
    lines = [text for text in process.stdout.read().splitlines() if text.startswith("connections ")]
    return int(lines[-1].split()[-1]) if lines else 0


@pytest.mark.slow
@pytest.mark.parametrize("replan, requests, inference", [
    (None, [1], [[0, 0, 0]]), (1, [3], [[0, 1, 2]]), (2, [2], [[0, 0, 1]]),
])
def test_an_openpi_server_answers_chunks_executed_replan_steps_at_a_time(replan, requests, inference,
                                                                           bundled_dataset, bare_path, tmp_path):
    with bare_server(bare_path, "openpi") as (line, _):
        url = f"ws://127.0.0.1:{line.split()[1]}"
        done = run(bundled_dataset, tmp_path / "run", url, {"replan_steps": replan}, task="fine")
    records = done["records"]
    assert [(r["fail_reason"], r["actions"]) for r in records] == [("stop", [1, 1, 0])]
    assert [r["agent_trace"]["requests"] for r in records] == requests
    assert [r["agent_trace"]["inference"] for r in records] == inference


def test_each_executed_action_of_a_chunk_is_checked_and_only_those(bundled_dataset, bare_path, tmp_path):
    with bare_server(bare_path, "openpi_bad") as (line, _):
        url = f"ws://127.0.0.1:{line.split()[1]}"
        whole = run(bundled_dataset, tmp_path / "whole", url, task="fine")
        one = run(bundled_dataset, tmp_path / "one", url, {"replan_steps": 1}, task="fine")
    (bad,) = whole["records"]
    assert bad["fail_reason"] == "error" and bad["actions"] == [1]
    assert "the action [7.0] is outside the declared space" in bad["error"]
    assert [(r["fail_reason"], r["actions"]) for r in one["records"]] == [("stop", [1, 1, 0])]


def test_a_reply_too_many_fails_its_episode_and_the_next_starts_in_step(bundled_dataset, bare_path, tmp_path):
    with bare_server(bare_path, "extra") as (line, _):
        done = run(bundled_dataset, tmp_path / "run", f"ws://127.0.0.1:{line.split()[1]}")
    first, second = done["records"]
    assert first["fail_reason"] == "error" and first["actions"] == [1, 1], first
    assert "sent a frame nobody asked for" in first["error"] and "out of step" in first["error"]
    assert (second["fail_reason"], second["actions"]) == ("stop", [1, 1, 0])


@pytest.mark.parametrize("mode, connections", [("noaction", 3), ("badend", 3)])
def test_a_reply_error_or_an_odd_control_answer_drops_the_connection(mode, connections, bundled_dataset, bare_path,
                                                                     tmp_path):
    with bare_server(bare_path, mode) as (line, process):
        done = run(bundled_dataset, tmp_path / "run", f"ws://127.0.0.1:{line.split()[1]}")
        taken = connects(process)
    endings = [(r["fail_reason"], r["actions"]) for r in done["records"]]
    if mode == "noaction":
        assert endings == [("error", [1]), ("stop", [1, 1, 0])]
        assert "the reply has no 'action' or 'actions'" in done["records"][0]["error"]
    else:
        assert endings == [("stop", [1, 1, 0])] * 2
    assert taken == connections  # the metadata read before the run, the first episode's, a fresh one


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_episode_timeout_bounds_a_wait_for_a_silent_server(bundled_dataset, bare_path, tmp_path):
    import time

    with bare_server(bare_path, "silent") as (line, _):
        url = f"ws://127.0.0.1:{line.split()[1]}"
        started_at = time.monotonic()
        done = run(bundled_dataset, tmp_path / "run", url, {"step_timeout_s": 600}, task="fine",
                   episode_timeout=4.0)
        took = time.monotonic() - started_at
    (record,) = done["records"]
    assert record["fail_reason"] == "timeout" and record["actions"] == [1, 1, 1], record
    assert "killed" not in record["error"] and took < 30


@pytest.mark.timeout(120)
def test_an_unreachable_policy_server_is_counted_as_unreachable(bundled_dataset, tmp_path):
    from vlnverse.cli.eval import UNREACHABLE_EXIT, exit_status

    config = {"url": f"ws://127.0.0.1:{free_port()}", "action_space": "discrete", "reconnects": 0}
    done = run(bundled_dataset, tmp_path / "run", "remote", config)
    health = done["result"].summary["health"]
    assert health["unreachable"] == 2 and health["verdict"] == "unreachable"
    assert exit_status(health, None) == UNREACHABLE_EXIT
    assert all(r["error"].startswith("RemoteUnreachable: cannot connect") for r in done["records"])


@pytest.mark.parametrize("argv, requests", [(["0"], 3), (["0", "--chunks"], 1)])
def test_the_docs_minimal_server(argv, requests, bundled_dataset, bare_path, tmp_path):
    from tests.docs_blocks import code_blocks

    (block,) = [b for b in code_blocks(REPO / "docs" / "remote-policy.md") if b.title == "policy_server.py"]
    script = tmp_path / "policy_server.py"
    script.write_text(block.code)
    boot = (f"import sys, runpy; sys.path.insert(0, {str(bare_path)!r}); sys.argv = [{str(script)!r}, *{argv!r}]; "
            f"runpy.run_path({str(script)!r}, run_name='__main__')")
    with started([sys.executable, "-I", "-S", "-c", boot], "listening ") as (line, _):
        done = run(bundled_dataset, tmp_path / "run", f"ws://127.0.0.1:{line.split()[1]}")
    assert [(r["fail_reason"], r["actions"]) for r in done["records"]] == [("stop", [1, 1, 0])] * 2
    assert [r["agent_trace"]["requests"] for r in done["records"]] == [requests] * 2
    assert json.loads((tmp_path / "run" / "run.json").read_text())["run"]["label"] == "forward-twice"


def test_serve_policy_serves_a_harness_agent(bundled_dataset, tmp_path):
    command = [sys.executable, "-m", "vlnverse", "serve-policy", "forward", "--port", "0"]
    with started(command, "serving ", env={**os.environ, "PYTHONPATH": str(REPO)}) as (line, _):
        url = line.split(" on ")[1]
        assert url.startswith("ws://127.0.0.1:")
        served = run(bundled_dataset, tmp_path / "served", url)
    local = run(bundled_dataset, tmp_path / "local", "forward")
    assert [r["actions"] for r in served["records"]] == [r["actions"] for r in local["records"]]
    assert all(r["fail_reason"] == "step_budget" for r in served["records"])


def test_concurrent_episodes_have_a_connection_each(bundled_dataset, bare_path, tmp_path):
    with bare_server(bare_path, "ok", "--delay", "0.3") as (line, process):
        done = run(bundled_dataset, tmp_path / "run", f"ws://127.0.0.1:{line.split()[1]}", concurrency=2)
        process.kill()
        counts = [int(text.split()[1]) for text in process.stdout.read().splitlines()
                  if text.startswith("connections ")]
    assert [r["fail_reason"] for r in done["records"]] == ["stop", "stop"]
    assert max(counts) == 2  # and one before, the metadata read when the run starts


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_concurrent_episodes_reuse_envs_and_record_what_fresh_envs_record(bundled_dataset, bare_path, tmp_path,
                                                                           monkeypatch):
    """Each lane resets the env its last episode used, given the next episode's task components
    when they differ (collisions, pushed objects, pose, RNG and pictures all start over): the
    records equal, byte for byte, those of a run where every episode builds its own env."""
    from vlnverse.eval.running import worker
    from vlnverse.eval.running.store import dumps_record

    def lines(done: dict) -> dict:
        return {(r["episode_id"], r["physics"]): dumps_record(r) for r in done["records"]}

    with bare_server(bare_path, "walk") as (line, _):
        url = f"ws://127.0.0.1:{line.split()[1]}"
        settings = {"task": "all", "physics": ("strict",), "concurrency": 2}  # one scene, every task kind
        reused = run(bundled_dataset, tmp_path / "reused", url, **settings)
        monkeypatch.setattr(worker, "ENV_CACHE_SIZE", 0)  # no idle env kept: each episode builds one
        fresh = run(bundled_dataset, tmp_path / "fresh", url, **settings)
    records = reused["records"]
    assert {"coarse", "visual_reference", "long_horizon", "dialogue"} <= {r["task"] for r in records}
    assert [t["built"] for t in fresh["result"].timings] == [True] * len(records)
    assert sum(t["built"] for t in reused["result"].timings) == 2  # one env per lane
    assert lines(reused) == lines(fresh)
    assert len({tuple(r["actions"]) for r in records}) > 1 and any(2 in r["actions"] or 3 in r["actions"]
                                                                     for r in records)


def test_bad_configs_are_one_line_and_a_url_labels_its_run(tmp_path):
    from vlnverse.errors import ConfigError
    from vlnverse.eval.registry import agent_label, make_agent

    assert agent_label("ws://user:secret@127.0.0.1:8000") == "ws://***@127.0.0.1:8000"

    with pytest.raises(ConfigError, match="must start with ws://"):
        make_agent("remote", {"url": "http://127.0.0.1:1"})
    with pytest.raises(ConfigError, match="is a URL; its config cannot set another url"):
        make_agent("ws://127.0.0.1:1", {"url": "ws://127.0.0.1:2"})
    with pytest.raises(ConfigError, match="NO_SUCH_KEY_VAR, which is not set"):
        make_agent("ws://127.0.0.1:1", {"api_key_env": "NO_SUCH_KEY_VAR", "action_space": "discrete"})


def test_a_served_agents_name_labels_its_run_and_verify_derives_it():
    from types import SimpleNamespace

    from vlnverse.eval.registry import agent_label
    from vlnverse.eval.verification.claims import claim_problems

    assert agent_label("remote", "TestPolicy") == agent_label("ws://127.0.0.1:1", "TestPolicy") == "TestPolicy"
    assert agent_label("remote") == "remote" and agent_label("forward", "TestPolicy") == "forward"
    run = SimpleNamespace(agent="ws://127.0.0.1:1", agent_config={},
                          raw={"label": "TestPolicy", "served_agent": "TestPolicy", "privileged": []})
    assert claim_problems(run) == []
    run.raw["label"] = "oracle"
    assert "is not the agent's name 'TestPolicy'" in claim_problems(run)[0]
