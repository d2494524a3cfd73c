"""``vlnverse llm check``: against emulated servers it reports what each takes and what each
agent will use, exits 0 while plain chat works and 1 when it fails; ``--json``."""

from __future__ import annotations

import json

from tests.llm.servers import PROFILES, server_answer
from vlnverse.cli import main
from vlnverse.llm.loopback import LoopbackServer, Reply

PROFILE = {p.name: p for p in PROFILES}


def check(capsys, server: LoopbackServer, *extra: str) -> tuple[int, str]:
    code = main(["llm", "check", f"openai:local-model?base_url={server.url}&api_key_env=none&max_retries=0&timeout=10",
                 *extra])
    return code, capsys.readouterr().out


def test_llama_cpp_server(capsys):
    with LoopbackServer(server_answer(PROFILE["llama.cpp"]), models=("local-model",)) as server:
        code, out = check(capsys, server, "--json")
    report = json.loads(out)
    assert code == 0 and report["chat_ok"]
    supported = {name: result["supported"] for name, result in report["features"].items()}
    assert supported == {"models": True, "context": None, "chat": True, "json_mode": True, "json_schema": True,
                         "tools": False, "n": False, "images": False}
    assert report["features"]["context"]["tokens"] is None and "unknown" in report["features"]["context"]["detail"]
    assert "Only one completion choice is allowed" in report["features"]["n"]["detail"]
    assert "tool calls emulated by prompt" in report["agents"]["arna"]
    assert "vlm refused" in report["agents"]["dscd_nav"]
    assert server.calls == 6   # chat, JSON mode, json_schema, tools, n, image: one POST each (models: a GET)


def test_llama_cpp_python_table(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # rich wraps cells to the terminal's width
    with LoopbackServer(server_answer(PROFILE["llama-cpp-python"]), models=("local-model",)) as server:
        code, out = check(capsys, server)
    assert code == 0
    assert "Input should be 'text' or 'json_object'" in out and "schema in the prompt with JSON mode" in out


def test_exit_1_only_when_plain_chat_fails(capsys):
    with LoopbackServer(lambda body: Reply(status=500, raw=b"Internal Server Error")) as server:
        code, out = check(capsys, server)
    assert code == 1 and "plain chat fails" in out and server.calls == 1
    with LoopbackServer(lambda body: Reply(status=500, raw=b"Internal Server Error")) as server:
        code, out = check(capsys, server, "--json")
    report = json.loads(out)
    assert code == 1 and report["chat_ok"] is False and set(report["features"]) == {"models", "context", "chat"}
