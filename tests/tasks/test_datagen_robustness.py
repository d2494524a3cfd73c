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


def run_cli(capsys, *args):
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_an_unwritable_out_is_one_line(corpus, tmp_path, capsys):
    with read_only_folder(tmp_path / "ro") as folder:
        code, _, err = run_cli(capsys, "datagen", "--scenes", corpus, "--out", folder / "ds", "--per-scene", "1",
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
                               "--no-progress", "--no-report")
    assert code == 2
    assert err.strip().splitlines() == [f"error: {out} is being written by another run; wait for it to finish "
                                        "or choose another output folder"]
    assert sorted(p.name for p in out.iterdir()) == [".vlnverse.lock"]


def _dies_on_house_1(entry, config):
    if entry.scene_id == "house_1":
        os._exit(3)
    return run_scene(entry, config)


def test_a_dead_worker_is_one_line_naming_the_scene(corpus, tmp_path, monkeypatch):
    monkeypatch.setattr(datagen, "run_scene", _dies_on_house_1)
    config = datagen.DatagenConfig(scenes=str(corpus), out=str(tmp_path), workers=2,
                                   generation=datagen.GenerationConfig(per_scene=1, tasks=("coarse",)))
    with pytest.raises(WorkerError, match=r"a datagen worker process died while generating scene\(s\) .*house_1"):
        datagen.run_datagen(config)
