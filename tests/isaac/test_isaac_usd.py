"""Plain-USD authoring of the isaac backend, checked with pxr and NVIDIA's asset validator."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest
from pxr import Gf, Usd, UsdGeom, UsdPhysics, UsdShade

from vlnverse.errors import ConfigError, SceneError
from vlnverse.sim.agent import AgentSpec
from vlnverse.sim.backends import isaac_usd as iu
from vlnverse.sim.sensors import DepthSensor, LidarSensor, RGBSensor


def _validation_failures(stage: Usd.Stage) -> list[str]:
    logging.getLogger("omni.asset_validator").setLevel(logging.WARNING)
    import omni.asset_validator as validator

    results = validator.ValidationEngine().validate(stage)
    return [
        f"{issue.rule.__name__ if issue.rule else '?'}: {issue.message}"
        for issue in results.issues()
        if issue.severity in (validator.IssueSeverity.ERROR, validator.IssueSeverity.FAILURE)
    ]


def _agent_stage(tmp_path, spec: AgentSpec | None = None) -> tuple[Usd.Stage, str]:
    spec = spec or AgentSpec()
    path = str(tmp_path / "agent.usda")
    stage = iu.new_stage(path)
    iu.author_physics_scene(stage, iu.PhysicsSceneSettings(physics_dt=1 / 120, gravity=9.81))
    iu.author_agent(stage, spec, position=(1.0, 2.0, 0.0), yaw=math.pi / 2)
    iu.author_sensor_camera(stage, "/World/Agent", "rgb", RGBSensor(pitch_deg=-15.0), spec)
    iu.author_sensor_camera(stage, "/World/Agent", "depth", DepthSensor(), spec)
    floor = UsdGeom.Cube.Define(stage, "/World/Floor")
    floor.CreateSizeAttr(1.0)
    floor.CreateExtentAttr([(-0.5, -0.5, -0.5), (0.5, 0.5, 0.5)])
    floor.AddScaleOp().Set(Gf.Vec3f(10.0, 10.0, 0.1))
    UsdPhysics.CollisionAPI.Apply(floor.GetPrim())
    for parent in ("/World/Rooms", "/World/Rooms/kitchen_0", "/World/Rooms/kitchen_0/Objects"):
        UsdGeom.Xform.Define(stage, parent)
    chair = UsdGeom.Xform.Define(stage, "/World/Rooms/kitchen_0/Objects/chair_0").GetPrim()
    iu.label_prim(chair, ["chair"])
    stage.GetRootLayer().Save()
    return stage, path


def test_agent_rigid_body_reopens_with_locks_and_contact_report(tmp_path):
    spec = AgentSpec(radius=0.3, height=1.5, mass=35.0, step_height=0.1, friction=0.2)
    _, path = _agent_stage(tmp_path, spec)
    stage = Usd.Stage.Open(path)
    agent = stage.GetPrimAtPath("/World/Agent")
    assert agent.HasAPI(UsdPhysics.RigidBodyAPI) and agent.HasAPI(UsdPhysics.MassAPI)
    assert UsdPhysics.MassAPI(agent).GetMassAttr().Get() == pytest.approx(35.0)
    schemas = iu.applied_schema_names(agent)
    assert "PhysxRigidBodyAPI" in schemas and "PhysxContactReportAPI" in schemas
    assert agent.GetAttribute("physxRigidBody:lockedRotAxis").Get() == iu.LOCK_X | iu.LOCK_Y == 3
    assert agent.GetAttribute("physxRigidBody:lockedPosAxis").Get() == iu.LOCK_Z
    assert agent.GetAttribute("physxRigidBody:disableGravity").Get() is True
    assert agent.GetAttribute("physxContactReport:threshold").Get() == 0.0
    assert str(agent.GetAttribute("physxRigidBody:lockedRotAxis").GetTypeName()) == "int"
    assert str(agent.GetAttribute("physxContactReport:threshold").GetTypeName()) == "float"

    body = UsdGeom.Cylinder(stage.GetPrimAtPath("/World/Agent/Body"))
    assert body.GetPrim().HasAPI(UsdPhysics.CollisionAPI)
    assert body.GetRadiusAttr().Get() == pytest.approx(0.3)
    assert body.GetHeightAttr().Get() == pytest.approx(1.4)
    # The collider spans [step_height, height] above the base, which sits at (1, 2, 0).
    to_world = UsdGeom.Xformable(body).ComputeLocalToWorldTransform(Usd.TimeCode.Default())
    low, high = (to_world.Transform(Gf.Vec3d(*corner)) for corner in body.GetExtentAttr().Get())
    assert min(low[2], high[2]) == pytest.approx(0.1) and max(low[2], high[2]) == pytest.approx(1.5)
    assert (low[0] + high[0]) / 2 == pytest.approx(1.0)
    # It collides but no camera renders it (invisible, purpose guide), and sweeps with CCD.
    assert body.ComputeVisibility() == UsdGeom.Tokens.invisible
    assert body.GetPurposeAttr().Get() == UsdGeom.Tokens.guide
    assert UsdGeom.BBoxCache(Usd.TimeCode.Default(), ["default", "render"]).ComputeWorldBound(
        body.GetPrim()).GetRange().IsEmpty()
    assert agent.GetAttribute("physxRigidBody:enableCCD").Get() is True

    pose = UsdGeom.Xformable(agent).ComputeLocalToWorldTransform(Usd.TimeCode.Default())
    quat = pose.ExtractRotationQuat()
    yaw = iu.quaternion_yaw((quat.GetReal(), *quat.GetImaginary()))
    assert yaw == pytest.approx(math.pi / 2)

    binding = UsdShade.MaterialBindingAPI(body.GetPrim()).GetDirectBinding("physics")
    material = UsdPhysics.MaterialAPI(binding.GetMaterial().GetPrim())
    assert material.GetDynamicFrictionAttr().Get() == pytest.approx(0.2)


def test_physics_scene_rate_and_gravity(tmp_path):
    _, path = _agent_stage(tmp_path)
    stage = Usd.Stage.Open(path)
    scenes = iu.find_physics_scenes(stage)
    assert [str(p.GetPath()) for p in scenes] == ["/World/PhysicsScene"]
    scene = UsdPhysics.Scene(scenes[0])
    assert tuple(scene.GetGravityDirectionAttr().Get()) == (0.0, 0.0, -1.0)
    assert scene.GetGravityMagnitudeAttr().Get() == pytest.approx(9.81)
    rate = scenes[0].GetAttribute("physxScene:timeStepsPerSecond")
    assert rate.Get() == 120 and str(rate.GetTypeName()) == "uint"
    assert "PhysxSceneAPI" in iu.applied_schema_names(scenes[0])
    with pytest.raises(ConfigError):
        iu.PhysicsSceneSettings(physics_dt=0.0)


@pytest.mark.parametrize(
    ("hfov", "width", "height"), [(90.0, 224, 224), (79.0, 640, 480), (120.0, 256, 128), (30.0, 100, 300)]
)
def test_camera_hfov_round_trips_through_focal_length_and_aperture(tmp_path, hfov, width, height):
    stage = iu.new_stage(str(tmp_path / "cam.usda"))
    iu.author_camera(stage, "/World/Cam", hfov_deg=hfov, width=width, height=height)
    stage.GetRootLayer().Save()
    reopened = Usd.Stage.Open(str(tmp_path / "cam.usda"))
    camera = UsdGeom.Camera(reopened.GetPrimAtPath("/World/Cam"))
    assert iu.hfov_from_camera(camera) == pytest.approx(hfov, abs=1e-4)
    # Square pixels: the vertical aperture follows the image aspect.
    h_ap = camera.GetHorizontalApertureAttr().Get()
    v_ap = camera.GetVerticalApertureAttr().Get()
    assert v_ap / h_ap == pytest.approx(height / width, rel=1e-6)
    expected_vfov = math.degrees(2 * math.atan(math.tan(math.radians(hfov) / 2) * height / width))
    assert iu.vfov_from_camera(camera) == pytest.approx(expected_vfov, abs=1e-4)
    assert RGBSensor(width=width, height=height, hfov_deg=hfov).vfov_deg == pytest.approx(
        expected_vfov, abs=1e-9
    )


def test_default_aperture_matches_isaac_reference_value():
    lens = iu.lens_from_hfov(90.0, 640, 480)
    assert lens.focal_length == pytest.approx(10.4775)
    assert lens.vertical_aperture == pytest.approx(20.955 * 480 / 640)
    with pytest.raises(ConfigError):
        iu.lens_from_hfov(180.0, 10, 10)
    with pytest.raises(ConfigError):
        iu.lens_from_hfov(90.0, 0, 10)


def test_mounted_camera_looks_along_agent_heading_with_pitch(tmp_path):
    stage, _ = _agent_stage(tmp_path)
    rgb = UsdGeom.Camera(stage.GetPrimAtPath("/World/Agent/rgb"))
    depth = UsdGeom.Camera(stage.GetPrimAtPath("/World/Agent/depth"))
    # Agent yaw is +90°, so a level camera looks along +Y; the rgb one is pitched 15° down.
    level = iu.camera_forward_world(depth)
    assert tuple(level) == pytest.approx((0.0, 1.0, 0.0), abs=1e-9)
    pitched = iu.camera_forward_world(rgb)
    assert tuple(pitched) == pytest.approx(
        (0.0, math.cos(math.radians(15)), -math.sin(math.radians(15))), abs=1e-9
    )
    up = UsdGeom.Xformable(depth.GetPrim()).ComputeLocalToWorldTransform(0).TransformDir(
        Gf.Vec3d(0, 1, 0)
    )
    assert tuple(up) == pytest.approx((0.0, 0.0, 1.0), abs=1e-9)
    world = UsdGeom.Xformable(depth.GetPrim()).ComputeLocalToWorldTransform(0)
    assert world.ExtractTranslation()[2] == pytest.approx(AgentSpec().camera_height)


def test_side_camera_yaw_offset_turns_left():
    stage = iu.new_stage()
    camera = iu.author_camera(stage, "/World/Cam", hfov_deg=90, width=64, height=64, yaw_deg=90.0)
    assert tuple(iu.camera_forward_world(camera)) == pytest.approx((0.0, 1.0, 0.0), abs=1e-9)


def test_lidar_description_from_spec():
    agent = AgentSpec()
    planar = iu.LidarDescription.from_spec(LidarSensor(), agent, "/World/Agent/Lidar")
    assert planar.translation == (0.0, 0.0, 0.40)
    assert planar.columns == 360 and planar.rows == 1
    kwargs = planar.command_kwargs()
    assert kwargs["horizontal_fov"] == 360.0 and kwargs["horizontal_resolution"] == 1.0
    assert kwargs["max_range"] == 10.0 and kwargs["rotation_rate"] == 0.0
    assert kwargs["path"] == "/World/Agent/Lidar" and kwargs["enable_semantics"] is True
    assert kwargs["high_lod"] is False  # PhysX's planar scan
    spec = LidarSensor(channels=16, vfov_deg=30.0, hfov_deg=180.0, h_resolution_deg=0.5)
    multi = iu.LidarDescription.from_spec(spec, agent, "/World/Agent/Lidar")
    # One PhysX row per channel, at the spec's elevations: -15°, -13°, ..., +15°.
    elevations = np.degrees(np.arcsin(spec.ray_directions()[:, 0, 2]))
    assert multi.rows == len(elevations) == 16
    assert np.allclose(np.diff(elevations), multi.vertical_resolution)
    assert elevations[-1] - elevations[0] == pytest.approx(multi.vertical_fov)
    assert multi.columns == 360 and multi.command_kwargs()["high_lod"] is True
    assert iu.LidarDescription.from_spec(LidarSensor(channels=2, vfov_deg=20.0), agent, "/World/L").rows == 2
    with pytest.raises(ConfigError):
        iu.LidarDescription(path="relative/path")
    with pytest.raises(ConfigError):
        iu.LidarDescription(path="/L", min_range=5.0, max_range=1.0)


def test_semantics_check_flags_missing_and_non_class_labels(tmp_path):
    stage, _ = _agent_stage(tmp_path)
    roots = iu.object_roots(stage)
    assert roots == ["/World/Rooms/kitchen_0/Objects"]
    assert iu.check_semantics(stage, roots) == []

    table = UsdGeom.Xform.Define(stage, "/World/Rooms/kitchen_0/Objects/table_0").GetPrim()
    iu.label_prim(table, ["wood"], instance="material")
    lamp = UsdGeom.Xform.Define(stage, "/World/Rooms/kitchen_0/Objects/lamp_0").GetPrim()
    empty = UsdGeom.Xform.Define(stage, "/World/Rooms/kitchen_0/Objects/empty_0").GetPrim()
    iu.label_prim(empty, [""])
    issues = {(i.path, i.problem) for i in iu.check_semantics(stage, roots)}
    assert (str(table.GetPath()), "labelled (material) but no 'class' label") in issues
    assert (str(table.GetPath()), "object has no 'class' label") in issues
    assert (str(lamp.GetPath()), "object has no 'class' label") in issues
    assert (str(empty.GetPath()), "'class' label is empty") in issues
    assert iu.semantic_labels(stage.GetPrimAtPath("/World/Rooms/kitchen_0/Objects/chair_0")) == {
        "class": ["chair"]
    }


def test_authored_stage_passes_nvidia_asset_validator(tmp_path):
    _, path = _agent_stage(tmp_path)
    assert _validation_failures(Usd.Stage.Open(path)) == []


def test_validator_catches_a_broken_stage():
    """The validator check above can fail: an untyped prim is reported."""
    stage = iu.new_stage()
    stage.DefinePrim("/World/Untyped")
    assert any("TypeChecker" in f for f in _validation_failures(stage))


def test_non_camera_prim_is_rejected():
    stage = iu.new_stage()
    with pytest.raises(SceneError):
        iu.hfov_from_camera(stage.GetPrimAtPath("/World"))


def test_yaw_helpers_round_trip():
    for yaw in (-3.0, -1.0, 0.0, 0.5, 2.9):
        q = iu.yaw_quaternion(yaw)
        assert iu.quaternion_yaw((q.GetReal(), *q.GetImaginary())) == pytest.approx(yaw)
