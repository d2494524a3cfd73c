"""``vlnverse datagen`` under faults: one line, exit 2, nothing written before the inputs are
checked, one writer per dataset folder."""

from __future__ import annotations

import json
import os

import pytest

from tests.fsfaults import read_only_folder
from vlnverse.cli import main
from vlnverse.errors import WorkerError
from vlnverse.fileio import OutputLock
from vlnverse.tasks import datagen
from vlnverse.tasks.datagen import run_scene
from vlnverse.tasks.dataset import EpisodeDataset


def run_cli(capsys, *args):
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_an_unwritable_out_is_one_line(corpus, tmp_path, capsys):
    with read_only_folder(tmp_path / "ro") as folder:
        code, _, err = run_cli(capsys, "datagen", "--scenes", corpus, "--out", folder / "ds", "--per-scene", "1", "--tasks", "coarse",
                               "--no-progress", "--no-report")
    assert code == 2
    assert err.strip().splitlines() in ([f"error: cannot write {folder}/ds: read-only file system"],
                                        [f"error: cannot write {folder}/ds: permission denied"])


def test_a_missing_api_key_writes_nothing_and_the_corrected_command_runs(corpus, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("VLNVERSE_TEST_MISSING_KEY", raising=False)
    out = tmp_path / "ds"
    common = ("datagen", "--scenes", corpus, "--out", out, "--per-scene", "1", "--tasks", "coarse",
              "--no-progress", "--no-report", "--json")
    code, _, err = run_cli(capsys, *common, "--render", "--llm", "openai:gpt-4o?api_key_env=VLNVERSE_TEST_MISSING_KEY")
    assert code == 2 and err.strip().splitlines() == [
        "error: the API key variable VLNVERSE_TEST_MISSING_KEY is not set (set it, or choose another with "
        "api_key_env=...; api_key_env=none for keyless servers)"]
    assert not out.exists()
    code, stdout, err = run_cli(capsys, *common)
    assert code == 0, err
    assert json.loads(stdout)["episodes"] > 0


def test_a_second_writer_is_refused(corpus, tmp_path, capsys):
    out = tmp_path / "ds"
    out.mkdir()
    with OutputLock(out):  # as another datagen process would hold it
        code, _, err = run_cli(capsys, "datagen", "--scenes", corpus, "--out", out, "--per-scene", "1",
                               "--tasks", "coarse", "--no-progress", "--no-report")
    assert code == 2
    assert err.strip().splitlines() == [f"error: {out} is being written by another run; wait for it to finish "
                                        "or choose another output folder"]
    assert sorted(p.name for p in out.iterdir()) == [".vlnverse.lock"]


def _dies_on_house_1(entry, config):
    if entry.scene_id == "house_1":
        os._exit(3)
    return run_scene(entry, config)


def test_settings_that_make_no_episodes_are_refused(corpus, tmp_path, capsys):
    code, _, err = run_cli(capsys, "datagen", "--scenes", corpus, "--out", tmp_path / "ds", "--per-scene", "1",
                           "--tasks", "fine", "--no-progress")
    assert code == 2 and err.strip().splitlines() == [
        "error: --per-scene 1 gives no fine trajectories (per_scene x fine_ratio 0.3333 rounds to 0); raise --per-scene"]
    assert not (tmp_path / "ds").exists()


def test_a_dead_worker_is_one_line_naming_the_scene(corpus, tmp_path, monkeypatch):
    monkeypatch.setattr(datagen, "run_scene", _dies_on_house_1)
    config = datagen.DatagenConfig(scenes=str(corpus), out=str(tmp_path), workers=2,
                                   generation=datagen.GenerationConfig(per_scene=1, tasks=("coarse",)))
    with pytest.raises(WorkerError, match=r"a worker process died while running .*scene house_1"):
        datagen.run_datagen(config)


class _BrokenServer:
    """A loopback 'LLM server' that answers every request 200 with an HTML page echoing the
    request's Authorization header (the API key)."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("content-length", 0)))
                body = f"<html><body>502 Bad Gateway, request from {self.headers.get('authorization')}".encode()
                self.send_response(200)
                self.send_header("content-type", "text/html")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _all_text(folder) -> str:
    import gzip

    parts = []
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            parts.append((gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8", "replace"))
    return "\n".join(parts)


def test_broken_llm_replies_fall_back_and_no_secret_is_written(corpus, tmp_path, capsys, monkeypatch):
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    server = _BrokenServer()
    try:
        monkeypatch.setenv("VLNVERSE_TEST_DATAGEN_KEY", "sk-s3cretkey-echoed")
        spec = (f"openai:gpt-4o?base_url=http://127.0.0.1:{server.port}/v1&api_key_env=VLNVERSE_TEST_DATAGEN_KEY"
                "&max_retries=1&backoff_base=0.01")
        out = tmp_path / "ds"
        code, stdout, err = run_cli(capsys, "datagen", "--scenes", corpus, "--out", out, "--per-scene", "1",
                                    "--tasks", "coarse", "--render", "--llm", spec, "--no-progress")
    finally:
        server.close()
    assert code == 0, err
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["total_episodes"] == 3 and manifest["fallbacks"] == 3
    assert "3 instruction(s) kept the prior text" in stdout
    episodes = EpisodeDataset.open(out).all_episodes()
    assert all(e.provenance.instruction_source == "prior" and "the reply is not JSON" in e.provenance.fallback
               for e in episodes)
    assert "s3cret" not in _all_text(out) + stdout + err  # not even cut short by a message's length limit
    assert any("Bearer ***" in e.provenance.fallback for e in episodes)  # the echo, masked

    # credentials in the base URL are refused (the HTTP client would send and log them)
    spec = "openai:gpt-4o?base_url=http://user:s3cretpw@127.0.0.1:9/v1&api_key_env=none"
    code, stdout, err = run_cli(capsys, "datagen", "--scenes", corpus, "--out", tmp_path / "url", "--per-scene", "1",
                                "--tasks", "coarse", "--render", "--llm", spec, "--no-progress")
    assert code == 2 and "carries credentials (user:password@)" in err and "s3cretpw" not in stdout + err

    code, stdout, err = run_cli(capsys, "datagen", "--scenes", corpus, "--out", tmp_path / "other", "--per-scene", "1",
                                "--tasks", "coarse", "--render", "--llm", "openai:gpt-4o?api_key=sk-s3cretkey")
    assert code == 2 and "unknown option 'api_key'" in err
    assert "s3cretkey" not in stdout + err and not (tmp_path / "other").exists()
