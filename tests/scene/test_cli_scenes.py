"""``vlnverse scenes inspect|path`` as real subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from tests.cli_errors import one_error_line
from tests.outputs import assert_drawn, picture
from tests.scene import builders as b


def run_cli(*args, check=True):
    proc = subprocess.run([sys.executable, "-m", "vlnverse", *map(str, args)], capture_output=True, text=True, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(proc.stderr)
    return proc


@pytest.mark.slow
def test_inspect_writes_all_files(tmp_path):
    scene = b.kitchen_with_table(tmp_path / "k.usda")
    out = tmp_path / "out"
    proc = run_cli("scenes", "inspect", scene, "--out", out, "--json")
    summary = json.loads(proc.stdout)
    grids = np.load(out / "occupancy.npz")
    navigable = grids["navigable"]
    assert navigable.any() and not navigable.all()
    graph = json.loads((out / "scene_graph.json").read_text())
    assert {"dining table", "cup", "ceiling lamp"} <= {n.get("category") for n in graph["nodes"]}
    assert_drawn(out / "bev.png")
    on_disk = json.loads((out / "summary.json").read_text())
    assert on_disk["navigable_area_m2"] == summary["navigable_area_m2"]
    assert on_disk["rooms"] == {"kitchen": 1} and on_disk["objects"] == {"ceiling lamp": 1, "cup": 1, "dining table": 1}
    assert on_disk["largest_component_share"] == 1.0 and on_disk["resolution"] == 0.05
    assert on_disk["free_area_m2"] == pytest.approx(19.04)
    with np.load(out / "occupancy.npz") as npz:
        assert npz["free"].sum() * 0.05**2 == pytest.approx(19.04)
        assert float(npz["floor_height"]) == pytest.approx(0.0, abs=1e-6)
    assert (out / "bev.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_inspect_human_table(tmp_path):
    scene = b.box_room(tmp_path / "r.usda")
    proc = run_cli("scenes", "inspect", scene, "--out", tmp_path / "o", "--agent-radius", "0.2")
    assert "navigable_area_m2" in proc.stdout
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["agent_radius"] == 0.2 and summary["navigable_area_m2"] == pytest.approx(3.6 * 2.6)


@pytest.mark.slow
def test_path_json_and_picture(tmp_path):
    scene = b.l_corridor(tmp_path / "l.usda")
    proc = run_cli("scenes", "path", scene, "--start", "5.5,0.6", "--goal", "0.6,5.5", "--json", "--out", tmp_path)
    result = json.loads(proc.stdout)
    assert result["reachable"] is True and result["geodesic_distance"] == pytest.approx(9.09, rel=0.02)
    assert result["path"][0][:2] == [5.5, 0.6] and len(result["path"][0]) == 3
    assert result["start_used"] == [5.5, 0.6] and result["goal_used"] == [0.6, 5.5]
    # The path is drawn in blue (#1f5fd6) from the end of one arm to the end of the other: blue
    # pixels spread over most of the picture's width and height.
    pixels = picture(tmp_path / "path.png")
    blue = np.argwhere(np.abs(pixels - np.array([0x1F, 0x5F, 0xD6]) / 255).max(axis=-1) < 0.08)
    assert len(blue) > 200
    rows, cols = pixels.shape[:2]
    assert np.ptp(blue[:, 0]) > 0.5 * rows and np.ptp(blue[:, 1]) > 0.5 * cols


@pytest.mark.slow
def test_path_reports_a_snapped_goal(tmp_path):
    scene = b.kitchen_with_table(tmp_path / "k.usda")
    proc = run_cli("scenes", "path", scene, "--start", "0.8,0.8", "--goal", "2.5,1.7")
    line = next(x for x in proc.stdout.splitlines() if x.startswith("goal (2.5, 1.7) is not navigable"))
    moved = float(line.rsplit(", ", 1)[1].split(" m away")[0])
    assert 0.3 < moved < 1.0
    result = json.loads(run_cli("scenes", "path", scene, "--start", "0.8,0.8", "--goal", "2.5,1.7", "--json").stdout)
    assert result["start_used"] == [0.8, 0.8]
    assert np.hypot(result["goal_used"][0] - 2.5, result["goal_used"][1] - 1.7) == pytest.approx(moved, abs=0.01)


def test_path_unreachable_is_null(tmp_path):
    scene = b.two_platforms(tmp_path / "p.usda")
    result = json.loads(run_cli("scenes", "path", scene, "--start", "1,5", "--goal", "6,1", "--json").stdout)
    assert result == {"geodesic_distance": None, "path": [], "reachable": False}


@pytest.mark.slow
@pytest.mark.parametrize("args,message", [
    (("scenes", "inspect", "/nonexistent/scene.usd"), "no such file"),
    (("scenes", "path", "{scene}", "--start", "50,50", "--goal", "1,1"), "no floor under point"),
    (("scenes", "inspect", "{scene}", "--resolution", "0"), "must be positive"),
])
def test_errors_are_one_line_and_nonzero(tmp_path, args, message):
    scene = b.box_room(tmp_path / "r.usda")
    proc = run_cli(*[a.format(scene=scene) for a in args], check=False)
    assert proc.returncode == 2
    assert message in one_error_line(proc.stderr)


def test_debug_shows_traceback(tmp_path):
    proc = run_cli("--debug", "scenes", "inspect", tmp_path / "missing.usda", check=False)
    assert proc.returncode != 0 and "Traceback" in proc.stderr


def test_usd_warnings_stay_off_stderr_unless_debug(tmp_path, capfd, caplog):
    from vlnverse.cli import main

    scene = tmp_path / "bad.usda"
    scene.write_text('#usda 1.0\n(\n    upAxis = "Z"\n)\ndef Xform "World" (\n'
                     '    prepend references = @./missing_asset.usda@\n)\n{\n}\n')
    assert main(["scenes", "inspect", str(scene), "--out", str(tmp_path / "o")]) == 2
    err = capfd.readouterr().err
    assert err.strip().splitlines() == [f"error: {scene}: references missing asset file(s): {tmp_path}/missing_asset.usda"]
    with caplog.at_level("DEBUG", logger="vlnverse.scene.usd_loader"):
        main(["scenes", "inspect", str(scene), "--out", str(tmp_path / "o")])
    assert "Failed to resolve reference @./missing_asset.usda@" in caplog.text
