"""``vlnverse sim render`` as a real subprocess."""

import json
import subprocess
import sys

import matplotlib.image
import numpy as np
import pytest

from .usd_room import write_room_usd


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "vlnverse", *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    return write_room_usd(tmp_path_factory.mktemp("scene") / "room.usda")


@pytest.mark.slow
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
    for picture in ("depth", "semantic"):  # with a colour bar / a legend beside the picture
        assert matplotlib.image.imread(tmp_path / f"{picture}.png").shape[1] > 300
    assert report["renderer"] in ("gl", "tiny") and report["renderer_requested"] == "auto"
    human = run_cli("sim", "render", str(room), "--pose", "1,2,0", "--sensors", "rgb", "--out", str(tmp_path / "h"))
    assert f"renderer {report['renderer']} (picked by auto)" in human.stdout
    assert "not on the navigable map" not in human.stderr


def test_semantic_legend_names_what_is_in_view():
    from vlnverse.sim.pictures import heading_label, semantic_legend
    from vlnverse.sim.semantics import Instance, InstanceTable

    table = InstanceTable((Instance(0, "", "nothing", -1), Instance(1, "sofa_0", "sofa", 0), Instance(2, "tv_0", "tv", 1)),
                          np.array([1, 2], dtype=np.int32))
    ids = np.array([[1, 1, 1], [2, 0, 1]])
    assert semantic_legend(ids, table) == [(1, "sofa #1", 4 / 6), (0, "nothing", 1 / 6), (2, "tv #2", 1 / 6)]
    assert [heading_label(d) for d in (0, 30, 180, 330, -90)] == ["ahead", "30° left", "behind", "30° right",
                                                                  "90° right"]


def test_a_pose_off_the_navigable_map_is_warned_about(room, tmp_path):
    result = run_cli("sim", "render", str(room), "--pose", "3.5,2,0", "--sensors", "rgb", "--width", "16",
                     "--height", "16", "--out", str(tmp_path), "--json")
    assert result.returncode == 0 and json.loads(result.stdout)["navigable"] is False
    assert "(3.5, 2) is not on the navigable map" in result.stderr and "nearest navigable point" in result.stderr


@pytest.mark.slow
def test_render_panorama(room, tmp_path):
    result = run_cli("sim", "render", str(room), "--pose", "2.5,2,90", "--sensors", "rgb", "--panorama",
                     "--width", "32", "--height", "32", "--out", str(tmp_path), "--json")
    assert result.returncode == 0, result.stderr
    sheet = matplotlib.image.imread(tmp_path / "rgb_panorama.png")
    assert sheet.shape[1] > 12 * 32 and sheet.shape[0] > 3 * 32  # a strip over two rows of views, labelled
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
