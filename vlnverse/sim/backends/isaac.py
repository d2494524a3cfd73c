"""The ``isaac`` backend: NVIDIA Isaac Sim 5.x (PhysX + RTX) behind the Backend protocol.

Nothing here imports Isaac Sim at module import. The Kit application is started inside
the constructor (``SimulationApp``), or reused when this code already runs inside Kit
(the ``vlnverse.isaac`` extension). Everything written onto the stage comes from the
plain-USD functions of :mod:`vlnverse.sim.backends.isaac_usd` and goes into the stage's
session layer, so the scene file itself is never modified.

Mapping of the protocol: ``move`` sets the agent rigid body's velocity every physics
step and calls ``World.step(render=False)``; contacts come from PhysX contact reports
(``get_contact_report``) filtered to the agent, floors excluded; ``render`` uses
replicator annotators ``rgb``, ``distance_to_image_plane`` and
``instance_id_segmentation`` on cached render products, after an optional warm-up of
physics+render steps (paper C.2.1); ``cast_rays`` uses PhysX scene-query raycasts.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pxr import Sdf, Usd

from vlnverse.errors import ConfigError, DependencyNotInstalled, SimulationError
from vlnverse.scene.types import Scene
from vlnverse.sim.agent import AgentSpec
from vlnverse.sim.backend import MoveResult
from vlnverse.sim.backends import isaac_usd
from vlnverse.sim.physics import PhysicsConfig
from vlnverse.sim.semantics import structural_category
from vlnverse.sim.types import CameraFrame, CameraRequest, Contact, Pose, rgb_of

logger = logging.getLogger(__name__)

ROOT = "/World/VLNVerse"
AGENT_PATH = f"{ROOT}/Agent"
CAMERA_ROOT = f"{ROOT}/Cameras"
INSTALL_HINT = (
    "Isaac Sim 5.x (Python 3.11, an RTX GPU): pip install 'vlnverse[isaac]' "
    "--extra-index-url https://pypi.nvidia.com"
)


@dataclass(frozen=True)
class IsaacSettings:
    """How the Kit application is started and frames are produced.

    Attributes:
        headless: Run without a window.
        renderer: ``"RaytracedLighting"`` or ``"PathTracing"``.
        width, height: Kit viewport resolution (camera images use their own sizes).
        warmup_steps: Physics+render steps before a frame is captured after the agent
            moved (paper C.2.1 uses 20, so RTX accumulation settles); 0 disables.
        rt_subframes: Extra RTX subframes per captured frame.
        extra_args: Extra Kit command-line arguments (e.g. ``--ext-folder``).
    """

    headless: bool = True
    renderer: str = "RaytracedLighting"
    width: int = 1280
    height: int = 720
    warmup_steps: int = 20
    rt_subframes: int = 2
    extra_args: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.renderer not in ("RaytracedLighting", "PathTracing"):
            raise ConfigError(f"IsaacSettings.renderer must be RaytracedLighting or PathTracing, got {self.renderer!r}")
        for name in ("width", "height"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) <= 0:
                raise ConfigError(f"IsaacSettings.{name} must be a positive integer")
        if self.warmup_steps < 0 or self.rt_subframes < 0:
            raise ConfigError("IsaacSettings.warmup_steps and rt_subframes must be >= 0")


def isaac_available() -> tuple[bool, str]:
    """Whether Isaac Sim can be imported here (without importing it)."""
    if "omni.kit.app" in sys.modules:
        return True, "running inside Kit"
    if importlib.util.find_spec("isaacsim") is None:
        return False, f"isaacsim is not installed; install {INSTALL_HINT}"
    return True, "isaacsim is installed"


class _Kit:
    """The Kit application: started here (owned) or the one this code runs inside."""

    def __init__(self, settings: IsaacSettings) -> None:
        self.app = None
        self.owned = "omni.kit.app" not in sys.modules
        if self.owned:
            from isaacsim import SimulationApp  # must precede every other omni/isaacsim import

            self.app = SimulationApp(
                {
                    "headless": settings.headless,
                    "renderer": settings.renderer,
                    "width": settings.width,
                    "height": settings.height,
                    "extra_args": list(settings.extra_args),
                }
            )

    def update(self) -> None:
        import omni.kit.app

        omni.kit.app.get_app().update()

    def close(self) -> None:
        if self.owned and self.app is not None:
            self.app.close()
        self.app = None


class IsaacBackend:
    """Isaac Sim backend (see :mod:`vlnverse.sim.backend` for the lifecycle)."""

    name = "isaac"

    def __init__(self, physics: PhysicsConfig | None = None, settings: IsaacSettings | None = None) -> None:
        ok, why = isaac_available()
        if not ok:
            raise DependencyNotInstalled(
                "isaacsim", extra="isaac", purpose="the 'isaac' backend: Isaac Sim 5.x, Python 3.11, an RTX GPU"
            )
        self.physics = physics or PhysicsConfig()
        self.settings = settings or IsaacSettings()
        self._kit: _Kit | None = _Kit(self.settings)
        self._world = None
        self._stage: Usd.Stage | None = None
        self._scene: Scene | None = None
        self._prim_index: dict[str, int] = {}
        self._floor_prims: set[int] = set()
        self._agent = None
        self._base_z = 0.0
        self._movables: list = []
        self._cameras: dict[tuple, tuple] = {}
        self._last_contacts: list[Contact] | None = None
        self._moved_since_render = True

    @classmethod
    def available(cls) -> tuple[bool, str]:
        return isaac_available()

    # -- lifecycle ---------------------------------------------------------------------

    def _require(self, what: str):
        if self._kit is None:
            raise SimulationError("isaac backend is closed")
        if what == "scene" and self._world is None:
            raise SimulationError("isaac backend: load the scene first")
        if what == "agent" and self._agent is None:
            raise SimulationError("isaac backend: no agent (call spawn_agent first)")
        return self._agent if what == "agent" else self._world

    def load_scene(self, scene: Scene) -> None:
        if self._kit is None:
            raise SimulationError("isaac backend is closed")
        if self._world is not None:
            raise SimulationError("isaac backend: load_scene may be called once")
        import omni.usd
        from isaacsim.core.api import World
        from isaacsim.core.utils.stage import is_stage_loading, open_stage

        context = omni.usd.get_context()
        current = context.get_stage()
        if current is None or Sdf.Layer.FindOrOpen(str(scene.path)) != current.GetRootLayer():
            if not open_stage(str(scene.path)):
                raise SimulationError(f"isaac backend: Isaac Sim could not open {scene.path}")
        while is_stage_loading():
            self._kit.update()
        self._stage = context.get_stage()
        self._scene = scene
        self._prim_index = {prim.path: i for i, prim in enumerate(scene.prims)}
        self._floor_prims = {i for i, p in enumerate(scene.prims) if structural_category(p) == "floor"}
        with Usd.EditContext(self._stage, self._stage.GetSessionLayer()):
            if not isaac_usd.find_physics_scenes(self._stage):
                isaac_usd.author_physics_scene(
                    self._stage,
                    isaac_usd.PhysicsSceneSettings(physics_dt=1.0 / self.physics.physics_hz, gravity=self.physics.gravity),
                    path=f"{ROOT}/PhysicsScene",
                )
        self._world = World(
            physics_dt=1.0 / self.physics.physics_hz,
            rendering_dt=self.physics.control_dt,
            stage_units_in_meters=1.0,
        )
        self._register_movables(scene)
        self._world.reset()

    def _register_movables(self, scene: Scene) -> None:
        from isaacsim.core.prims import SingleRigidPrim
        from pxr import UsdPhysics

        for index, obj in enumerate(scene.objects):
            prim = self._stage.GetPrimAtPath(obj.prim_path)
            if obj.movable and prim and prim.HasAPI(UsdPhysics.RigidBodyAPI):
                self._movables.append(
                    self._world.scene.add(SingleRigidPrim(prim_path=obj.prim_path, name=f"movable_{index}"))
                )

    def spawn_agent(self, spec: AgentSpec, pose: Pose) -> None:
        world = self._require("scene")
        if self._agent is not None:
            raise SimulationError("isaac backend: the agent is already spawned")
        from isaacsim.core.prims import SingleRigidPrim

        with Usd.EditContext(self._stage, self._stage.GetSessionLayer()):
            isaac_usd.author_agent(self._stage, spec, AGENT_PATH, (pose.x, pose.y, pose.z), pose.yaw)
        self._agent = world.scene.add(SingleRigidPrim(prim_path=AGENT_PATH, name="vlnverse_agent"))
        world.reset()
        self.set_agent_pose(pose)

    def close(self) -> None:
        if self._kit is None:
            return
        try:
            if self._world is not None:
                self._world.stop()
                type(self._world).clear_instance()
        finally:
            self._world = self._agent = None
            self._cameras.clear()
            kit, self._kit = self._kit, None
            kit.close()

    # -- agent -------------------------------------------------------------------------

    def set_agent_pose(self, pose: Pose) -> None:
        agent = self._require("agent")
        quat = isaac_usd.yaw_quaternion(pose.yaw)
        agent.set_world_pose(
            position=np.array([pose.x, pose.y, pose.z]),
            orientation=np.array([quat.GetReal(), *quat.GetImaginary()]),
        )
        agent.set_linear_velocity(np.zeros(3))
        agent.set_angular_velocity(np.zeros(3))
        self._base_z = pose.z
        self._last_contacts = None
        self._moved_since_render = True

    def agent_pose(self) -> Pose:
        agent = self._require("agent")
        position, orientation = agent.get_world_pose()
        return Pose(float(position[0]), float(position[1]), self._base_z, isaac_usd.quaternion_yaw(orientation))

    def move(self, velocities: np.ndarray) -> MoveResult:
        agent = self._require("agent")
        world = self._world
        commands = np.asarray(velocities, dtype=np.float64).reshape(-1, 3)
        poses = np.empty((len(commands), 3))
        deepest: dict[int, Contact] = {}
        for tick, (vx, vy, wz) in enumerate(commands.tolist()):
            for _ in range(self.physics.substeps):
                agent.set_linear_velocity(np.array([vx, vy, 0.0]))
                agent.set_angular_velocity(np.array([0.0, 0.0, wz]))
                world.step(render=False)
                for contact in self._read_contacts():
                    best = deepest.get(contact.prim_index)
                    if best is None or contact.depth > best.depth:
                        deepest[contact.prim_index] = contact
            pose = self.agent_pose()
            poses[tick] = (pose.x, pose.y, pose.yaw)
        agent.set_linear_velocity(np.zeros(3))
        agent.set_angular_velocity(np.zeros(3))
        self._last_contacts = [deepest[k] for k in sorted(deepest)]
        self._moved_since_render = True
        return MoveResult(poses, list(self._last_contacts))

    def contacts(self) -> list[Contact]:
        self._require("agent")
        if self._last_contacts is None:
            # One physics step at rest produces fresh reports; the pose is restored so
            # depenetration cannot move the agent.
            pose = self.agent_pose()
            self._world.step(render=False)
            self._last_contacts = self._read_contacts()
            self.set_agent_pose(pose)
            self._last_contacts = self._last_contacts or []
        return list(self._last_contacts)

    def _resolve_prim(self, path: str) -> int:
        """Index in ``Scene.prims`` of ``path`` or of its nearest listed ancestor (-1)."""
        sdf = Sdf.Path(path)
        while sdf != Sdf.Path.absoluteRootPath and not sdf.isEmpty:
            index = self._prim_index.get(str(sdf))
            if index is not None:
                return index
            sdf = sdf.GetParentPath()
        return -1

    def _read_contacts(self) -> list[Contact]:
        from omni.physx import get_physx_simulation_interface
        from pxr import PhysicsSchemaTools

        headers, data = get_physx_simulation_interface().get_contact_report()
        tolerance = self.physics.contact_tolerance
        found = []
        for header in headers:
            actors = (str(PhysicsSchemaTools.intToSdfPath(header.actor0)), str(PhysicsSchemaTools.intToSdfPath(header.actor1)))
            if AGENT_PATH not in actors:
                continue
            agent_is_0 = actors[0] == AGENT_PATH
            other = str(PhysicsSchemaTools.intToSdfPath(header.collider1 if agent_is_0 else header.collider0))
            index = self._resolve_prim(other)
            if index in self._floor_prims:
                continue
            for i in range(header.contact_data_offset, header.contact_data_offset + header.num_contact_data):
                point = data[i]
                if point.separation > tolerance:
                    continue
                normal = np.asarray(point.normal, dtype=np.float64)
                normal = -normal if agent_is_0 else normal  # PhysX normals point from actor1 to actor0
                found.append(
                    Contact(index, tuple(float(v) for v in point.position), tuple(float(v) for v in normal), max(0.0, -float(point.separation)))
                )
        return found

    def reset_objects(self) -> None:
        self._require("scene")
        for rigid in self._movables:
            rigid.post_reset()
            rigid.set_linear_velocity(np.zeros(3))
            rigid.set_angular_velocity(np.zeros(3))
        self._last_contacts = None

    # -- perception --------------------------------------------------------------------

    def _camera(self, request: CameraRequest) -> tuple:
        """Camera prim, render product and annotators for one image size/lens."""
        import omni.replicator.core as rep

        key = (request.width, request.height, request.hfov_deg, request.near, request.far)
        if key not in self._cameras:
            path = f"{CAMERA_ROOT}/cam_{len(self._cameras)}"
            with Usd.EditContext(self._stage, self._stage.GetSessionLayer()):
                isaac_usd.author_camera(
                    self._stage, path, hfov_deg=request.hfov_deg, width=request.width,
                    height=request.height, near=request.near, far=request.far,
                )
            product = rep.create.render_product(path, (request.width, request.height))
            annotators = {}
            for name, params in (
                ("rgb", None),
                ("distance_to_image_plane", None),
                ("instance_id_segmentation", {"colorize": False}),
            ):
                annotator = rep.AnnotatorRegistry.get_annotator(name, init_params=params) if params else rep.AnnotatorRegistry.get_annotator(name)
                annotator.attach(product)
                annotators[name] = annotator
            self._cameras[key] = (path, product, annotators)
        return self._cameras[key]

    def render(self, requests: Sequence[CameraRequest]) -> list[CameraFrame]:
        self._require("scene")
        import omni.replicator.core as rep

        if self._moved_since_render and self.settings.warmup_steps:
            for _ in range(self.settings.warmup_steps):
                self._world.step(render=True)
        self._moved_since_render = False
        frames = []
        for request in requests:
            path, _, annotators = self._camera(request)
            with Usd.EditContext(self._stage, self._stage.GetSessionLayer()):
                orientation = isaac_usd.camera_local_orientation(math.degrees(request.pitch), math.degrees(request.yaw))
                isaac_usd.set_pose(self._stage.GetPrimAtPath(path), request.position, orientation)
            rep.orchestrator.step(rt_subframes=self.settings.rt_subframes, delta_time=0.0, pause_timeline=False)
            frames.append(self._frame(request, annotators))
        return frames

    def _frame(self, request: CameraRequest, annotators: dict) -> CameraFrame:
        frame = CameraFrame()
        if request.rgb:
            frame.rgb = rgb_of(np.asarray(annotators["rgb"].get_data(), dtype=np.uint8))
        if request.depth:
            depth = np.asarray(annotators["distance_to_image_plane"].get_data(), dtype=np.float32)
            frame.depth = np.where(np.isfinite(depth) & (depth > 0), np.minimum(depth, request.far), request.far).astype(np.float32)
        if request.instance:
            result = annotators["instance_id_segmentation"].get_data()
            ids = np.asarray(result["data"], dtype=np.int64)
            lut = {int(k): self._resolve_prim(str(v)) for k, v in result["info"]["idToLabels"].items()}
            table = np.full(max(lut, default=0) + 2, -1, dtype=np.int32)
            for key, value in lut.items():
                table[key] = value
            frame.instance = table[np.clip(ids, 0, len(table) - 1)]
        return frame

    def cast_rays(self, origins: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self._require("scene")
        from omni.physx import get_physx_scene_query_interface

        query = get_physx_scene_query_interface()
        origins = np.asarray(origins, dtype=np.float64).reshape(-1, 3)
        ends = np.asarray(ends, dtype=np.float64).reshape(-1, 3)
        fraction = np.ones(len(origins))
        prims = np.full(len(origins), -1, dtype=np.int32)
        for i, (start, end) in enumerate(zip(origins, ends, strict=True)):
            segment = end - start
            length = float(np.linalg.norm(segment))
            if length == 0.0:
                continue
            direction = segment / length
            travelled = 0.0
            for _ in range(4):  # skip through the agent's own collider
                origin = start + direction * travelled
                hit = query.raycast_closest(tuple(origin), tuple(direction), length - travelled)
                if not hit["hit"]:
                    break
                path = str(hit.get("collision") or hit.get("rigidBody") or "")
                if path.startswith(AGENT_PATH):
                    travelled += float(hit["distance"]) + 1e-4
                    continue
                fraction[i] = (travelled + float(hit["distance"])) / length
                prims[i] = self._resolve_prim(path)
                break
        return fraction, prims
