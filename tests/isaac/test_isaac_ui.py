"""Controller logic behind the extension's window, run without Kit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pxr import Usd, UsdGeom

from tests.isaac.test_isaac_usd import _validation_failures
from tests.scene.builders import box_room, kitchen_with_table
from vlnverse.errors import ConfigError, DatasetError, SceneError
from vlnverse.isaac_ui import markers, scenes, summary, teleop
from vlnverse.scene import load_scene
from vlnverse.sim.agent import AgentSpec
from vlnverse.sim.backend import create_backend
from vlnverse.sim.backends import isaac_usd
from vlnverse.sim.physics import PhysicsConfig
from vlnverse.sim.types import Pose


def test_scene_listing_bundled_then_corpus(tmp_path):
    bundled = tmp_path / "bundled"
    corpus = tmp_path / "corpus"
    (corpus / "house_1").mkdir(parents=True)
    bundled.mkdir()
    box_room(bundled / "b_room.usda")
    box_room(bundled / "a_room.usd")
    (bundled / "notes.txt").write_text("not a scene")
    box_room(corpus / "house_1" / "scene.usdc")
    entries = scenes.list_scenes(bundled, [corpus, tmp_path / "missing"])
    assert [(e.name, e.source) for e in entries] == [
        ("a_room", "bundled"),
        ("b_room", "bundled"),
        ("house_1/scene", "corpus"),
    ]
    assert all(e.path.is_file() and e.size_bytes > 0 for e in entries)
    # A folder listed twice does not duplicate scenes.
    assert len(scenes.list_scenes(bundled, [bundled])) == 2
    assert scenes.scene_entry_for_file(bundled / "a_room.usd").source == "file"
    with pytest.raises(SceneError):
        scenes.scene_entry_for_file(bundled / "notes.txt")
    with pytest.raises(SceneError):
        scenes.scene_entry_for_file(tmp_path / "nope.usda")


def test_keyboard_teleop_commands():
    keys = teleop.KeyboardTeleop(teleop.TeleopSpeeds(linear=0.5, angular=1.0))
    assert keys.command() == (0.0, 0.0)
    keys.press("w")
    keys.press("LEFT")
    assert keys.command() == (0.5, 1.0)
    keys.press("S")  # opposite keys cancel
    assert keys.command() == (0.0, 1.0)
    keys.release("W")
    keys.release("left")
    assert keys.command() == (-0.5, 0.0)
    keys.release_all()
    assert keys.command() == (0.0, 0.0)
    keys.press("SPACE")
    assert keys.stop_requested
    with pytest.raises(ConfigError):
        teleop.TeleopSpeeds(linear=0.0)


def test_recorder_writes_one_row_per_50ms_with_interpolation(tmp_path):
    path = tmp_path / "rec" / "run.csv"
    with teleop.PoseRecorder(path) as recorder:
        # Poses at a 30 Hz control rate, moving +X at 1 m/s and turning across ±pi.
        for k in range(31):
            t = k / 30.0
            recorder.tick(t, (t, 0.0, 0.0), math.remainder(math.pi - 0.1 + t, 2 * math.pi))
    rows = teleop.read_pose_csv(path)
    assert rows.shape == (21, 5)  # t = 0, 0.05, ..., 1.0
    assert np.allclose(rows[:, 0], np.arange(21) * 0.05, atol=1e-6)
    assert np.allclose(rows[:, 1], rows[:, 0], atol=1e-4)  # x interpolated on the grid
    expected_yaw = [math.remainder(math.pi - 0.1 + t, 2 * math.pi) for t in rows[:, 0]]
    assert np.allclose(rows[:, 4], expected_yaw, atol=1e-4)  # no jump through 0 at ±pi


def test_recorder_keeps_final_pose_and_rejects_time_going_back(tmp_path):
    path = tmp_path / "run.csv"
    recorder = teleop.PoseRecorder(path)
    recorder.tick(10.0, (0, 0, 0), 0.0)
    recorder.tick(10.07, (0.7, 0, 0), 0.0)
    with pytest.raises(ConfigError):
        recorder.tick(10.0, (0, 0, 0), 0.0)
    recorder.close()
    rows = teleop.read_pose_csv(path)
    assert rows[:, 0].tolist() == pytest.approx([0.0, 0.05, 0.07])
    assert rows[-1, 1] == pytest.approx(0.7)
    with pytest.raises(ConfigError):
        recorder.tick(11.0, (0, 0, 0), 0.0)


def test_read_pose_csv_rejects_bad_files(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(DatasetError):
        teleop.read_pose_csv(bad)
    backwards = tmp_path / "back.csv"
    backwards.write_text("t,x,y,z,yaw\n0.1,0,0,0,0\n0.05,0,0,0,0\n")
    with pytest.raises(DatasetError):
        teleop.read_pose_csv(backwards)
    with pytest.raises(DatasetError):
        teleop.read_pose_csv(tmp_path / "missing.csv")


def test_teleop_session_drives_the_embedded_backend_and_walls_stop_it(tmp_path):
    scene = load_scene(box_room(tmp_path / "room.usda", width=4.0, depth=3.0))
    physics = PhysicsConfig(mode="slide")
    backend = create_backend("bullet", physics)
    try:
        backend.load_scene(scene)
        backend.spawn_agent(AgentSpec(), Pose(1.0, 1.5, 0.0, 0.0))
        keys = teleop.KeyboardTeleop(teleop.TeleopSpeeds(linear=1.0, angular=math.radians(90)))
        session = teleop.TeleopSession(
            backend, teleop.PoseRecorder(tmp_path / "tele.csv"), keys, physics.control_dt
        )
        keys.press("W")
        for _ in range(30):  # one simulated second towards the +X wall at x = 4
            pose = session.tick()
        assert 1.4 < pose.x < 2.3 and abs(pose.y - 1.5) < 0.05
        for _ in range(120):  # keep pushing: the wall (inner face ~3.95) stops the agent
            pose = session.tick()
        assert pose.x < 3.95 - AgentSpec().radius + 0.08
        keys.release("W")
        keys.press("A")
        for _ in range(15):  # half a second turning left at 90°/s
            pose = session.tick()
        assert pose.yaw == pytest.approx(math.radians(45), abs=math.radians(8))
        path = session.finish()
    finally:
        backend.close()
    rows = teleop.read_pose_csv(path)
    assert np.allclose(np.diff(rows[:-1, 0]), 0.05, atol=1e-6)
    assert rows[-1, 0] == pytest.approx(165 / 30, abs=1e-3)
    assert rows[-1, 1] == pytest.approx(pose.x, abs=1e-3)


def test_episode_markers_are_drawn_replaced_and_valid(tmp_path):
    stage = isaac_usd.new_stage(str(tmp_path / "m.usda"))
    episode = markers.EpisodeMarkers(
        start_position=(1.0, 1.0, 0.0),
        start_yaw=math.pi / 2,
        goals=((3.0, 2.0, 0.0), (3.5, 2.5, 0.0)),
        success_radius=1.0,
        path=((1.0, 1.0, 0.0), (2.0, 1.5, 0.0), (3.0, 2.0, 0.0)),
    )
    root = markers.draw_episode(stage, episode)
    assert root.GetPath() == markers.MARKER_ROOT
    discs = [UsdGeom.Cylinder(p) for p in stage.GetPrimAtPath(f"{markers.MARKER_ROOT}/Goals").GetChildren()]
    assert [d.GetRadiusAttr().Get() for d in discs] == [1.0, 1.0]
    curve = UsdGeom.BasisCurves(stage.GetPrimAtPath(f"{markers.MARKER_ROOT}/ReferencePath"))
    assert list(curve.GetCurveVertexCountsAttr().Get()) == [3]
    start = stage.GetPrimAtPath(f"{markers.MARKER_ROOT}/Start")
    tip = UsdGeom.Xformable(start).ComputeLocalToWorldTransform(0).TransformDir((1, 0, 0))
    assert tuple(tip) == pytest.approx((0.0, 1.0, 0.0), abs=1e-9)  # points along the start yaw
    assert _validation_failures(stage) == []

    shorter = markers.EpisodeMarkers((0, 0, 0), 0.0, ((1.0, 0.0, 0.0),), 0.5)
    markers.draw_episode(stage, shorter)
    assert len(stage.GetPrimAtPath(f"{markers.MARKER_ROOT}/Goals").GetChildren()) == 1
    assert not stage.GetPrimAtPath(f"{markers.MARKER_ROOT}/ReferencePath")
    assert markers.clear_markers(stage) and not stage.GetPrimAtPath(markers.MARKER_ROOT)
    assert markers.path_length(episode.path) == pytest.approx(math.hypot(1, 0.5) * 2)
    with pytest.raises(ConfigError):
        markers.EpisodeMarkers((0, 0, 0), 0.0, (), 1.0)


def test_scene_summary_counts_and_text(tmp_path):
    path = kitchen_with_table(tmp_path / "kitchen.usda")
    result = summary.summarize_scene(path)
    scene = load_scene(path)
    assert result.rooms == len(scene.rooms) == 1
    assert result.objects == len(scene.objects) == 3
    assert dict(result.categories) == {"dining table": 1, "cup": 1, "ceiling lamp": 1}  # tests/scene/builders.py
    text = result.render()
    assert text.startswith(f"{scene.scene_id}: 1 rooms")
    assert "kitchen" in text and "table" in text


def test_markers_on_a_real_scene_stage_leave_scene_prims_alone(tmp_path):
    path = box_room(tmp_path / "room.usda")
    stage = Usd.Stage.Open(str(path))
    before = {str(p.GetPath()) for p in stage.Traverse()}
    episode = markers.EpisodeMarkers((1, 1, 0), 0.0, ((3, 2, 0),), 1.0, ((1, 1, 0), (3, 2, 0)))
    markers.draw_episode(stage, episode)
    markers.clear_markers(stage)
    assert {str(p.GetPath()) for p in stage.Traverse()} == before
