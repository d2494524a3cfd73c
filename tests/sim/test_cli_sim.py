"""``vlnverse sim render`` as a real subprocess."""

import json
import subprocess
import sys

import matplotlib.image
import pytest

from .usd_room import write_room_usd


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "vlnverse", *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    return write_room_usd(tmp_path_factory.mktemp("scene") / "room.usda")


def test_render_writes_every_sensor_picture(room, tmp_path):
    result = run_cli("sim", "render", str(room), "--pose", "1,2,0", "--out", str(tmp_path), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["navigable"] is True
    names = sorted(p.split("/")[-1] for p in report["files"])
    assert names == ["depth.png", "lidar.png", "rgb.png", "semantic.png"]
    rgb = matplotlib.image.imread(tmp_path / "rgb.png")
    assert rgb.shape[:2] == (224, 224)
    assert rgb[112, 112, 0] > rgb[112, 112, 2]  # the brown table straight ahead


def test_render_panorama(room, tmp_path):
    result = run_cli("sim", "render", str(room), "--pose", "2.5,2,90", "--sensors", "rgb", "--panorama",
                     "--width", "32", "--height", "32", "--out", str(tmp_path), "--json")
    assert result.returncode == 0, result.stderr
    strip = matplotlib.image.imread(tmp_path / "rgb_panorama.png")
    assert strip.shape[:2] == (32, 12 * 32)
    assert len(json.loads(result.stdout)["files"]) == 13


def test_render_rejects_unknown_sensors(room, tmp_path):
    result = run_cli("sim", "render", str(room), "--pose", "1,2,0", "--sensors", "rgb,sonar", "--out", str(tmp_path))
    assert result.returncode == 2
    assert "unknown sensor(s) sonar" in result.stderr and "Traceback" not in result.stderr


def test_bad_poses_and_unwritable_folders_are_one_line_and_write_nothing(room, tmp_path, capsys):
    from tests.fsfaults import read_only_folder
    from vlnverse.cli import main

    def render(pose, out):
        try:
            code = main(["sim", "render", str(room), "--pose", pose, "--sensors", "rgb", "--width", "16",
                         "--height", "16", "--out", str(out)])
        except SystemExit as exc:  # argparse refuses the option itself
            code = exc.code
        return code, capsys.readouterr().err

    code, err = render("nan,6,0", tmp_path / "a")
    assert code == 2 and "expected three finite numbers, got 'nan,6,0'" in err
    code, err = render("500,500,0", tmp_path / "b")
    assert code == 2 and err.strip().splitlines() == [
        f"error: --pose (500, 500) is off the map of {room} (x -0.05..5.05, y -0.05..4.05)"]
    assert not any((tmp_path / "b").iterdir())
    with read_only_folder(tmp_path / "ro") as folder:
        code, err = render("1,2,0", folder / "x")
    assert code == 2 and err.strip() in (f"error: cannot write {folder}/x: read-only file system",
                                         f"error: cannot write {folder}/x: permission denied")
