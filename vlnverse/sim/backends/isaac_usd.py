"""Plain-USD authoring for the Isaac Sim backend (tested with usd-core, no Kit needed).

Everything the ``isaac`` backend puts on a stage that can be written in plain USD lives
here: the agent's cylinder rigid body, its cameras, the PhysX lidar's prim description,
the physics scene, the contact-report API and the semantics check, plus the episode
markers the extension draws. The Kit-dependent remainder (``isaac.py``) only opens the
stage, calls these functions and steps the simulation.

PhysX-specific attributes (``physxRigidBody:*``, ``physxScene:*``,
``physxContactReport:*``) are written as plain attributes with the PhysX API schema
applied by name, because ``PhysxSchema`` ships with Isaac Sim and not with usd-core; the
attribute names and types match the PhysxSchema declarations that Isaac Sim 5.x reads.

Conventions: Z-up, meters, yaw about +Z (0 = +X, CCW), quaternions (w, x, y, z).

``pxr`` is imported inside each function: in Isaac Sim it must be Kit's own USD, loaded
after ``SimulationApp`` starts (see :mod:`vlnverse.sim.backends.isaac_kit`).

It runs past the project's 600 lines per module on purpose: every attribute the Isaac
backend authors is in one file, to be checked against the PhysxSchema declarations in one
place.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vlnverse.errors import ConfigError, SceneError
from vlnverse.sim.agent import AgentSpec
from vlnverse.sim.sensors import CameraSpec, LidarSensor

if TYPE_CHECKING:
    from pxr import Gf, Usd, UsdGeom, UsdPhysics

# USD's default camera aperture (tenths of a stage unit: "mm" on a 1 cm/unit stage).
DEFAULT_HORIZONTAL_APERTURE = 20.955

# Bits of physxRigidBody:lockedRotAxis / lockedPosAxis: (1 << 0) X, (1 << 1) Y, (1 << 2) Z.
LOCK_X = 1 << 0
LOCK_Y = 1 << 1
LOCK_Z = 1 << 2
LOCK_TILT = LOCK_X | LOCK_Y

PHYSX_RIGID_BODY_API = "PhysxRigidBodyAPI"
PHYSX_CONTACT_REPORT_API = "PhysxContactReportAPI"
PHYSX_SCENE_API = "PhysxSceneAPI"
SEMANTICS_INSTANCE = "class"

# Rotation taking a USD camera's frame (looks along -Z, +Y up) onto the agent's body
# frame (forward +X, +Z up). USD multiplies row vectors, so each row is the image of one
# camera axis: camera +X -> body -Y, camera +Y -> body +Z, camera +Z -> body -X.
_CAMERA_TO_BODY = (0.0, -1.0, 0.0, 0.0, 0.0, 1.0, -1.0, 0.0, 0.0)


# --------------------------------------------------------------------------- helpers


def _check_positive(name: str, value: float) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ConfigError(f"{name} must be a positive finite number, got {value!r}")


def yaw_quaternion(yaw: float) -> Gf.Quatd:
    """The (w, x, y, z) rotation of ``yaw`` radians about +Z."""
    from pxr import Gf

    return Gf.Quatd(math.cos(yaw / 2.0), 0.0, 0.0, math.sin(yaw / 2.0))


def quaternion_yaw(quat: Sequence[float]) -> float:
    """Yaw (radians, about +Z) of a (w, x, y, z) quaternion, ignoring any tilt."""
    w, x, y, z = (float(v) for v in quat)
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def set_pose(prim: Usd.Prim, translation: Sequence[float], orientation: Gf.Quatd) -> None:
    """Author translate + orient (double precision), the op order Isaac Sim prims use."""
    from pxr import Gf, UsdGeom

    xformable = UsdGeom.Xformable(prim)
    ops = {op.GetOpName(): op for op in xformable.GetOrderedXformOps()}
    translate = ops.get("xformOp:translate") or xformable.AddTranslateOp(
        UsdGeom.XformOp.PrecisionDouble
    )
    orient = ops.get("xformOp:orient") or xformable.AddOrientOp(UsdGeom.XformOp.PrecisionDouble)
    translate.Set(Gf.Vec3d(*(float(v) for v in translation)))
    orient.Set(Gf.Quatd(orientation))


def applied_schema_names(prim: Usd.Prim) -> list[str]:
    """All API schema names applied to ``prim``, including ones usd-core has no class for.

    ``Usd.Prim.GetAppliedSchemas`` hides schemas whose definition is not loaded (the
    PhysX ones outside Isaac Sim); the prim's composed type info keeps them.
    """
    return list(prim.GetPrimTypeInfo().GetAppliedAPISchemas())


def new_stage(path: str | None = None) -> Usd.Stage:
    """A stage following the project contract: Z-up, 1 m per unit, 1 kg per unit."""
    from pxr import Usd, UsdGeom, UsdPhysics

    stage = Usd.Stage.CreateNew(path) if path else Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdPhysics.SetStageKilogramsPerUnit(stage, 1.0)
    world = UsdGeom.Xform.Define(stage, "/World")
    stage.SetDefaultPrim(world.GetPrim())
    return stage


# --------------------------------------------------------------------------- physics scene


@dataclass(frozen=True)
class PhysicsSceneSettings:
    """The physics scene the backend simulates in.

    Attributes:
        physics_dt: Seconds per physics step (PhysX runs ``round(1/physics_dt)`` steps a second).
        gravity: Gravity magnitude in m/s², pointing along -Z.
        enable_ccd: Continuous collision detection (keeps a fast agent out of thin walls).
    """

    physics_dt: float = 1.0 / 60.0
    gravity: float = 9.81
    enable_ccd: bool = True

    def __post_init__(self) -> None:
        _check_positive("physics_dt", self.physics_dt)
        if self.physics_dt > 1.0:
            raise ConfigError(f"physics_dt must be <= 1 s, got {self.physics_dt}")
        if not (math.isfinite(self.gravity) and self.gravity >= 0):
            raise ConfigError(f"gravity must be a finite magnitude >= 0, got {self.gravity}")

    @property
    def steps_per_second(self) -> int:
        return max(1, round(1.0 / self.physics_dt))


def author_physics_scene(
    stage: Usd.Stage, settings: PhysicsSceneSettings, path: str = "/World/PhysicsScene"
) -> UsdPhysics.Scene:
    """Define (or update) the stage's PhysicsScene with gravity and the step rate.

    Isaac Sim's ``World`` reuses the first PhysicsScene it finds on the stage, so the
    rate and gravity authored here are the ones it simulates with.
    """
    from pxr import Gf, Sdf, UsdPhysics

    scene = UsdPhysics.Scene.Define(stage, path)
    scene.CreateGravityDirectionAttr(Gf.Vec3f(0.0, 0.0, -1.0))
    scene.CreateGravityMagnitudeAttr(float(settings.gravity))
    prim = scene.GetPrim()
    prim.AddAppliedSchema(PHYSX_SCENE_API)
    prim.CreateAttribute("physxScene:timeStepsPerSecond", Sdf.ValueTypeNames.UInt).Set(
        settings.steps_per_second
    )
    prim.CreateAttribute("physxScene:enableCCD", Sdf.ValueTypeNames.Bool).Set(settings.enable_ccd)
    return scene


def find_physics_scenes(stage: Usd.Stage) -> list[Usd.Prim]:
    """All PhysicsScene prims on the stage."""
    from pxr import UsdPhysics

    return [p for p in stage.Traverse() if p.IsA(UsdPhysics.Scene)]


# --------------------------------------------------------------------------- agent


def apply_contact_report(prim: Usd.Prim, threshold: float = 0.0) -> None:
    """Make PhysX report this rigid body's contacts (``PhysxContactReportAPI``)."""
    from pxr import Sdf

    prim.AddAppliedSchema(PHYSX_CONTACT_REPORT_API)
    prim.CreateAttribute("physxContactReport:threshold", Sdf.ValueTypeNames.Float).Set(
        float(threshold)
    )


def lock_rotation(prim: Usd.Prim, axes: int = LOCK_TILT) -> None:
    """Lock rotation about the given axes (bitmask; default X|Y, so the body cannot tip)."""
    from pxr import Sdf

    if axes & ~(LOCK_X | LOCK_Y | LOCK_Z):
        raise ConfigError(f"lock bitmask must combine 1, 2 and 4, got {axes}")
    prim.AddAppliedSchema(PHYSX_RIGID_BODY_API)
    prim.CreateAttribute("physxRigidBody:lockedRotAxis", Sdf.ValueTypeNames.Int).Set(int(axes))


def author_agent(
    stage: Usd.Stage,
    spec: AgentSpec,
    path: str = "/World/Agent",
    position: Sequence[float] = (0.0, 0.0, 0.0),
    yaw: float = 0.0,
    contact_threshold: float = 0.0,
) -> Usd.Prim:
    """Define the agent: an Xform rigid body whose child ``Body`` is the collision cylinder.

    The Xform's origin is the agent's base on the floor. The cylinder spans
    ``[step_height, height]`` above it, so obstacles lower than ``step_height`` pass under
    it, as on the occupancy map. The body glides at constant height like the embedded
    backend's base: gravity is off, Z translation and tilt are locked, yaw is free, CCD is
    on, and PhysX reports its contacts (``contact_threshold`` N and above; 0 reports all).
    The cylinder is invisible (purpose ``guide``) so cameras mounted inside it see out.

    Returns:
        The rigid-body Xform prim.
    """
    from pxr import Gf, Sdf, UsdGeom, UsdPhysics

    if not (math.isfinite(contact_threshold) and contact_threshold >= 0):
        raise ConfigError(f"contact_threshold must be >= 0, got {contact_threshold}")
    root = UsdGeom.Xform.Define(stage, path)
    prim = root.GetPrim()
    set_pose(prim, position, yaw_quaternion(yaw))
    UsdPhysics.RigidBodyAPI.Apply(prim).CreateRigidBodyEnabledAttr(True)
    UsdPhysics.MassAPI.Apply(prim).CreateMassAttr(float(spec.mass))
    lock_rotation(prim, LOCK_TILT)
    prim.CreateAttribute("physxRigidBody:lockedPosAxis", Sdf.ValueTypeNames.Int).Set(LOCK_Z)
    prim.CreateAttribute("physxRigidBody:disableGravity", Sdf.ValueTypeNames.Bool).Set(True)
    # Swept collision for the body itself (the scene flag alone does not enable it per body).
    prim.CreateAttribute("physxRigidBody:enableCCD", Sdf.ValueTypeNames.Bool).Set(True)
    apply_contact_report(prim, contact_threshold)

    length = float(spec.height - spec.step_height)
    radius = float(spec.radius)
    cylinder = UsdGeom.Cylinder.Define(stage, f"{path}/Body")
    cylinder.CreateAxisAttr(UsdGeom.Tokens.z)
    cylinder.CreateRadiusAttr(radius)
    cylinder.CreateHeightAttr(length)
    cylinder.CreateExtentAttr([(-radius, -radius, -length / 2), (radius, radius, length / 2)])
    centre = float(spec.step_height) + length / 2
    cylinder.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Vec3d(0.0, 0.0, centre))
    UsdPhysics.CollisionAPI.Apply(cylinder.GetPrim())
    # Collides but is never drawn, so the agent's own cameras do not see it: invisible
    # collision geometry has purpose "guide" (Isaac Sim's asset rule, physics_rules.py 294-323).
    cylinder.CreatePurposeAttr(UsdGeom.Tokens.guide)
    cylinder.MakeInvisible()
    _bind_friction(stage, cylinder.GetPrim(), f"{path}/PhysicsMaterial", float(spec.friction))
    return prim


def _bind_friction(stage: Usd.Stage, collider: Usd.Prim, path: str, friction: float) -> None:
    """Give ``collider`` a physics material with ``friction`` (static = dynamic)."""
    from pxr import UsdPhysics, UsdShade

    material = UsdShade.Material.Define(stage, path)
    api = UsdPhysics.MaterialAPI.Apply(material.GetPrim())
    api.CreateStaticFrictionAttr(friction)
    api.CreateDynamicFrictionAttr(friction)
    api.CreateRestitutionAttr(0.0)
    UsdShade.MaterialBindingAPI.Apply(collider).Bind(
        material, UsdShade.Tokens.weakerThanDescendants, "physics"
    )


def session_prim_paths(stage: Usd.Stage) -> set[str]:
    """Paths of every prim spec in the stage's session layer."""
    paths: set[str] = set()
    stage.GetSessionLayer().Traverse("/", lambda path: paths.add(str(path)) if path.IsPrimPath() else None)
    return paths


def remove_session_prims(stage: Usd.Stage, keep: set[str]) -> list[str]:
    """Remove the session-layer prim specs not in ``keep`` (what a backend added), outermost
    first; returns the removed paths. The scene's own layers are never touched."""
    from pxr import Sdf

    layer = stage.GetSessionLayer()
    added = sorted(session_prim_paths(stage) - keep)
    removed = [p for p in added if not any(p.startswith(r + "/") for r in added if r != p)]
    with Sdf.ChangeBlock():
        for path in removed:
            spec = layer.GetPrimAtPath(path)
            parent = spec.nameParent if spec.nameParent else layer.pseudoRoot
            del parent.nameChildren[spec.name]
    return removed


# --------------------------------------------------------------------------- cameras


@dataclass(frozen=True)
class CameraLens:
    """USD camera lens values (tenths of a stage unit, as USD's camera schema stores them)."""

    focal_length: float
    horizontal_aperture: float
    vertical_aperture: float


def lens_from_hfov(
    hfov_deg: float,
    width: int,
    height: int,
    horizontal_aperture: float = DEFAULT_HORIZONTAL_APERTURE,
) -> CameraLens:
    """Focal length and apertures that give ``hfov_deg`` on a ``width``×``height`` image.

    Pixels are square: the vertical aperture is the horizontal one scaled by height/width.
    """
    if not (0.0 < hfov_deg < 180.0):
        raise ConfigError(f"hfov must be in (0, 180) degrees, got {hfov_deg}")
    for name, value in (("width", width), ("height", height)):
        if not (isinstance(value, int) and value > 0):
            raise ConfigError(f"camera {name} must be a positive integer, got {value!r}")
    _check_positive("horizontal_aperture", horizontal_aperture)
    focal = horizontal_aperture / (2.0 * math.tan(math.radians(hfov_deg) / 2.0))
    return CameraLens(focal, horizontal_aperture, horizontal_aperture * height / width)


def _camera(prim_or_camera: Usd.Prim | UsdGeom.Camera) -> UsdGeom.Camera:
    from pxr import UsdGeom

    camera = (
        prim_or_camera
        if isinstance(prim_or_camera, UsdGeom.Camera)
        else UsdGeom.Camera(prim_or_camera)
    )
    if not camera or not camera.GetPrim().IsA(UsdGeom.Camera):
        raise SceneError(f"{prim_or_camera} is not a UsdGeom.Camera")
    return camera


def hfov_from_camera(prim_or_camera: Usd.Prim | UsdGeom.Camera) -> float:
    """The horizontal field of view (degrees) of a camera prim."""
    camera = _camera(prim_or_camera)
    aperture = camera.GetHorizontalApertureAttr().Get()
    focal = camera.GetFocalLengthAttr().Get()
    return math.degrees(2.0 * math.atan(aperture / (2.0 * focal)))


def vfov_from_camera(prim_or_camera: Usd.Prim | UsdGeom.Camera) -> float:
    """The vertical field of view (degrees) of a camera prim."""
    camera = _camera(prim_or_camera)
    aperture = camera.GetVerticalApertureAttr().Get()
    focal = camera.GetFocalLengthAttr().Get()
    return math.degrees(2.0 * math.atan(aperture / (2.0 * focal)))


def camera_local_orientation(pitch_deg: float = 0.0, yaw_deg: float = 0.0) -> Gf.Quatd:
    """Orientation of a USD camera mounted on the agent, looking along body +X.

    Args:
        pitch_deg: Tilt in degrees; positive looks up, negative looks down.
        yaw_deg: Extra yaw about body +Z in degrees (e.g. for side cameras).
    """
    from pxr import Gf

    tilt = Gf.Rotation(Gf.Vec3d(0.0, -1.0, 0.0), float(pitch_deg))
    turn = Gf.Rotation(Gf.Vec3d(0.0, 0.0, 1.0), float(yaw_deg))
    mount = Gf.Matrix4d().SetRotate(Gf.Matrix3d(*_CAMERA_TO_BODY))
    matrix = mount * Gf.Matrix4d().SetRotate(tilt) * Gf.Matrix4d().SetRotate(turn)
    quat = matrix.ExtractRotationQuat().GetNormalized()
    return quat if quat.GetReal() >= 0 else -quat  # same rotation, canonical sign


def author_camera(
    stage: Usd.Stage,
    path: str,
    *,
    hfov_deg: float,
    width: int,
    height: int,
    translation: Sequence[float] = (0.0, 0.0, 1.25),
    pitch_deg: float = 0.0,
    yaw_deg: float = 0.0,
    near: float = 0.05,
    far: float = 100.0,
) -> UsdGeom.Camera:
    """Define a pinhole camera whose lens gives ``hfov_deg`` at ``width``×``height``.

    ``translation`` is relative to the parent prim (the agent's base when mounted on it).
    """
    from pxr import Gf, UsdGeom

    _check_positive("near", near)
    if not far > near:
        raise ConfigError(f"camera far clip ({far}) must exceed near clip ({near})")
    lens = lens_from_hfov(hfov_deg, width, height)
    camera = UsdGeom.Camera.Define(stage, path)
    camera.CreateProjectionAttr(UsdGeom.Tokens.perspective)
    camera.CreateFocalLengthAttr(float(lens.focal_length))
    camera.CreateHorizontalApertureAttr(float(lens.horizontal_aperture))
    camera.CreateVerticalApertureAttr(float(lens.vertical_aperture))
    camera.CreateClippingRangeAttr(Gf.Vec2f(float(near), float(far)))
    set_pose(camera.GetPrim(), translation, camera_local_orientation(pitch_deg, yaw_deg))
    return camera


def sensor_mount(spec: CameraSpec | LidarSensor, agent: AgentSpec) -> tuple[float, float, float]:
    """A sensor's offset from the agent's base in the body frame (forward, left, up)."""
    height = spec.mount_height if spec.mount_height is not None else agent.camera_height
    return (float(spec.mount_forward), float(spec.mount_left), float(height))


def author_sensor_camera(
    stage: Usd.Stage, agent_path: str, name: str, spec: CameraSpec, agent: AgentSpec
) -> UsdGeom.Camera:
    """Mount the camera described by ``spec`` on the agent prim as ``<agent_path>/<name>``."""
    return author_camera(
        stage,
        f"{agent_path}/{name}",
        hfov_deg=spec.hfov_deg,
        width=spec.width,
        height=spec.height,
        translation=sensor_mount(spec, agent),
        pitch_deg=spec.pitch_deg,
        yaw_deg=spec.yaw_deg,
        near=spec.near,
        far=spec.far,
    )


def camera_forward_world(camera: UsdGeom.Camera) -> Gf.Vec3d:
    """The unit world direction a camera looks along (its local -Z), at the default time."""
    from pxr import Gf, Usd, UsdGeom

    xformable = UsdGeom.Xformable(camera.GetPrim())
    matrix = xformable.ComputeLocalToWorldTransform(Usd.TimeCode.Default())
    return matrix.TransformDir(Gf.Vec3d(0.0, 0.0, -1.0)).GetNormalized()


# --------------------------------------------------------------------------- lidar


@dataclass(frozen=True)
class LidarDescription:
    """A PhysX rotating lidar as Isaac Sim's ``RangeSensorCreateLidar`` command takes it.

    The lidar prim type (``RangeSensorSchema.Lidar``) ships with Isaac Sim only, so the
    backend creates it with that command from these values; everything here is checked
    without Kit.

    Attributes:
        path: Absolute prim path of the lidar.
        translation: Mount offset from the parent (agent base), meters.
        min_range: Closest valid return, meters.
        max_range: Farthest valid return, meters.
        horizontal_fov: Degrees swept horizontally (360 for a full turn).
        vertical_fov: Degrees covered vertically.
        horizontal_resolution: Degrees between columns.
        vertical_resolution: Degrees between rows.
        rotation_rate: Turns per second; 0 fires every column at once each step.
        planar: One row at 0° elevation (PhysX ``high_lod`` off), whatever the vertical field.
    """

    path: str
    translation: tuple[float, float, float] = (0.0, 0.0, 1.0)
    min_range: float = 0.1
    max_range: float = 20.0
    horizontal_fov: float = 360.0
    vertical_fov: float = 30.0
    horizontal_resolution: float = 1.0
    vertical_resolution: float = 4.0
    rotation_rate: float = 0.0
    planar: bool = False

    def __post_init__(self) -> None:
        from pxr import Sdf

        if not Sdf.Path.IsValidPathString(self.path) or not self.path.startswith("/"):
            raise ConfigError(f"lidar path must be an absolute prim path, got {self.path!r}")
        _check_positive("min_range", self.min_range)
        if not self.max_range > self.min_range:
            raise ConfigError(f"lidar max_range ({self.max_range}) must exceed min_range")
        if not 0 < self.horizontal_fov <= 360:
            raise ConfigError(f"lidar horizontal_fov must be in (0, 360], got {self.horizontal_fov}")
        if not 0 <= self.vertical_fov <= 180:
            raise ConfigError(f"lidar vertical_fov must be in [0, 180], got {self.vertical_fov}")
        _check_positive("horizontal_resolution", self.horizontal_resolution)
        _check_positive("vertical_resolution", self.vertical_resolution)
        if self.rotation_rate < 0:
            raise ConfigError(f"lidar rotation_rate must be >= 0, got {self.rotation_rate}")

    @property
    def columns(self) -> int:
        """Beams per row."""
        return max(1, round(self.horizontal_fov / self.horizontal_resolution))

    @property
    def rows(self) -> int:
        """Beam rows: 1 for a planar scan, else one at each edge of the vertical field and
        every ``vertical_resolution`` between."""
        if self.planar:
            return 1
        return round(self.vertical_fov / self.vertical_resolution) + 1

    @classmethod
    def from_spec(cls, spec: LidarSensor, agent: AgentSpec, path: str) -> LidarDescription:
        """The PhysX lidar for our ``LidarSensor`` mounted on ``agent``.

        One channel becomes a planar scan (PhysX wants a positive vertical field: 1°);
        several channels become ``channels`` rows spanning ``vfov_deg``, edges included. The backend resamples the PhysX columns onto the
        spec's ray directions by azimuth/zenith, so column order does not matter.
        """
        if spec.channels > 1:
            vertical_fov = float(spec.vfov_deg)
            vertical_resolution = vertical_fov / (spec.channels - 1)
        else:
            vertical_fov = vertical_resolution = 1.0
        return cls(
            path=path,
            translation=sensor_mount(spec, agent),
            min_range=max(float(spec.min_range), 1e-3),
            max_range=float(spec.max_range),
            horizontal_fov=float(spec.hfov_deg),
            vertical_fov=vertical_fov,
            horizontal_resolution=float(spec.h_resolution_deg),
            vertical_resolution=vertical_resolution,
            rotation_rate=0.0,
            planar=spec.channels == 1,
        )

    def command_kwargs(self) -> dict:
        """Keyword arguments of ``omni.kit.commands.execute("RangeSensorCreateLidar", ...)``."""
        from pxr import Gf

        return {
            "path": self.path,
            "parent": None,
            "translation": Gf.Vec3d(*self.translation),
            "orientation": Gf.Quatd(1.0, 0.0, 0.0, 0.0),
            "min_range": float(self.min_range),
            "max_range": float(self.max_range),
            "draw_points": False,
            "draw_lines": False,
            "horizontal_fov": float(self.horizontal_fov),
            "vertical_fov": float(self.vertical_fov),
            "horizontal_resolution": float(self.horizontal_resolution),
            "vertical_resolution": float(self.vertical_resolution),
            "rotation_rate": float(self.rotation_rate),
            "high_lod": self.rows > 1,
            "yaw_offset": 0.0,
            "enable_semantics": True,
        }


# --------------------------------------------------------------------------- semantics


@dataclass(frozen=True)
class SemanticsIssue:
    """One semantics problem on a stage (prim path and what is wrong)."""

    path: str
    problem: str


def semantic_labels(prim: Usd.Prim) -> dict[str, list[str]]:
    """``{instance: labels}`` of every ``UsdSemantics.LabelsAPI`` instance on ``prim``."""
    from pxr import UsdSemantics

    labels: dict[str, list[str]] = {}
    for api in UsdSemantics.LabelsAPI.GetAll(prim):
        attr = api.GetLabelsAttr()  # named "semantics:labels:<instance>"
        labels[attr.GetName().rsplit(":", 1)[-1]] = [str(v) for v in (attr.Get() or [])]
    return labels


def label_prim(prim: Usd.Prim, labels: Iterable[str], instance: str = SEMANTICS_INSTANCE) -> None:
    """Apply ``UsdSemantics.LabelsAPI`` instance ``instance`` with ``labels``."""
    from pxr import UsdSemantics

    UsdSemantics.LabelsAPI.Apply(prim, instance).CreateLabelsAttr([str(v) for v in labels])


def check_semantics(stage: Usd.Stage, required_roots: Iterable[str] = ()) -> list[SemanticsIssue]:
    """Check that every labelled prim carries a non-empty ``class`` label.

    The replicator ``semantic_segmentation`` annotator groups pixels by the ``class``
    instance, so a prim labelled only under another taxonomy renders as unlabelled.

    Args:
        stage: The stage to check.
        required_roots: Prim paths whose direct children must all be labelled (for
            example every ``/World/Rooms/<room>/Objects``).

    Returns:
        The issues found (empty when the stage is consistent).
    """
    issues: list[SemanticsIssue] = []
    for prim in stage.Traverse():
        labels = semantic_labels(prim)
        if not labels:
            continue
        if SEMANTICS_INSTANCE not in labels:
            issues.append(
                SemanticsIssue(str(prim.GetPath()), f"labelled ({', '.join(labels)}) but no 'class' label")
            )
        elif not [v for v in labels[SEMANTICS_INSTANCE] if v.strip()]:
            issues.append(SemanticsIssue(str(prim.GetPath()), "'class' label is empty"))
    for root in required_roots:
        parent = stage.GetPrimAtPath(root)
        if not parent:
            issues.append(SemanticsIssue(str(root), "prim does not exist"))
            continue
        for child in parent.GetChildren():
            if SEMANTICS_INSTANCE not in semantic_labels(child):
                issues.append(SemanticsIssue(str(child.GetPath()), "object has no 'class' label"))
    return issues


def object_roots(stage: Usd.Stage) -> list[str]:
    """The ``/World/Rooms/<room>/Objects`` prims of a VLNVerse scene stage."""
    rooms = stage.GetPrimAtPath("/World/Rooms")
    if not rooms:
        return []
    return [
        str(objects.GetPath())
        for room in rooms.GetChildren()
        if (objects := room.GetChild("Objects"))
    ]
