"""Real subprocess runs of the procedural-scene commands."""

import json
import subprocess
import sys

import pytest

from tests.cli_errors import one_error_line
from tests.outputs import assert_drawn
from vlnverse.cli import main

PY = sys.executable


def _run(*args):
    """``vlnverse scenes ARGS…`` as a real subprocess."""
    return subprocess.run([PY, "-m", "vlnverse", "scenes", *args], capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_generate_validate_stats_round_trip(tmp_path):
    out = tmp_path / "corpus"
    res = _run("generate", "--out", str(out), "--count", "2", "--seed", "3", "--rooms", "3-4", "--json")
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    assert summary["generated"] == 2 and summary["count"] == 2
    res = _run("generate", "--out", str(out), "--count", "2", "--seed", "3", "--rooms", "3-4", "--json")
    assert json.loads(res.stdout)["skipped"] == 2
    res = _run("validate", str(out), "--json")
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr
    report = json.loads(res.stdout)
    assert report["ok"] and len(report["scenes"]) == 2
    assert all(s["errors"] == 0 for s in report["scenes"])
    res = _run("stats", str(out), "--json")
    assert res.returncode == 0, res.stderr
    stats = json.loads(res.stdout)
    assert stats["num_scenes"] == 2 and stats["distinct_scenes"] == 2
    assert 3 <= stats["num_rooms"]["min"] <= stats["num_rooms"]["max"] <= 4  # --rooms 3-4
    assert sum(stats["room_type_counts"].values()) == 2 * stats["num_rooms"]["mean"]
    assert stats["navigable_area_m2"]["min"] > 0 and stats["num_objects"]["min"] > 0
    assert_drawn(stats["plot"])


@pytest.mark.parametrize("args, message", [
    (["--rooms", "0-2"], "rooms range 0-2 is invalid"),
    (["--count", "-1"], "--count must be >= 1"),
    (["--workers", "0"], "--workers must be >= 1"),
])
def test_invalid_options_exit_2_with_one_line(tmp_path, args, message):
    base = ["generate", "--out", str(tmp_path / "o"), "--count", "1"]
    res = _run(*base, *args)
    assert res.returncode == 2
    assert message in res.stderr and "Traceback" not in res.stderr


def test_unwritable_out(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = _run("generate", "--out", str(blocker / "sub"), "--count", "1")
    assert res.returncode == 2 and "cannot write to output folder" in res.stderr


def test_validate_fails_on_a_broken_file(tmp_path):
    bad = tmp_path / "bad.usda"
    bad.write_text("#usda 1.0\n(\n    upAxis = \"Z\"\n)\n\ndef Xform \"World\"\n{\n}\n")
    res = _run("validate", str(bad))
    assert res.returncode == 1
    assert "FAIL" in res.stdout


def test_commands_are_reachable_through_the_main_cli(tmp_path):
    res = _run("generate", "--out", str(tmp_path / "c"), "--count", "1", "--rooms", "3-3", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["generated"] == 1


def test_generate_usda_in_two_workers_with_validation(tmp_path, capsys):
    out = tmp_path / "c"
    code = main(["scenes", "generate", "--out", str(out), "--count", "2", "--seed", "5", "--rooms", "3-3",
                 "--format", "usda", "--workers", "2", "--validate", "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0 and summary["generated"] == 2 and summary["validation_failures"] == []
    for scene in ("scene_0000", "scene_0001"):
        assert (out / scene / "scene.usda").read_text().startswith("#usda 1.0")
        meta = json.loads((out / scene / "meta.json").read_text())
        assert meta["num_rooms"] == 3 and meta["validation"]["ok"] and meta["validation"]["errors"] == 0


@pytest.mark.parametrize(("args", "message"), [
    (["{tmp}/nowhere.usda"], "no such file or folder: {tmp}/nowhere.usda"),
    (["{tmp}/empty"], "no USD files under {tmp}/empty"),
    (["{tmp}/empty", "--agent-radius", "0"], "--agent-radius must be positive, got 0.0"),
])
def test_validate_refuses_what_it_cannot_check(tmp_path, capsys, args, message):
    (tmp_path / "empty").mkdir()
    code = main(["scenes", "validate", *[a.format(tmp=tmp_path) for a in args]])
    assert code == 2
    assert one_error_line(capsys.readouterr().err) == "error: " + message.format(tmp=tmp_path)
