"""The ``isaac`` backend: NVIDIA Isaac Sim 5.x (PhysX + RTX) behind the Backend protocol.

Nothing here imports Isaac Sim or ``pxr`` at module import: Kit ships its own USD, and a
``pxr`` loaded before ``SimulationApp`` starts is a second USD runtime in the process
(``simulation_app.py`` 208–222). The Kit application is started once per process, or
reused when this code runs inside Kit (the ``vlnverse.isaac`` extension); see
:mod:`vlnverse.sim.backends.isaac_kit` for app ownership, the one-live-backend rule and
how each operation is driven (synchronously in a ``SimulationApp`` script, as coroutines
on Kit's loop inside the app). Everything written onto the stage comes from the plain-USD
functions of :mod:`vlnverse.sim.backends.isaac_usd` and goes into the stage's session
layer, so the scene file itself is never modified (the ``World``'s own stage writes too).

Mapping of the protocol: ``move`` sets the agent rigid body's velocity every physics
step and calls ``World.step(render=False)``; contacts come from PhysX contact reports
(``get_contact_report``) filtered to the agent, floors excluded; ``render`` uses
replicator annotators ``rgb``, ``distance_to_image_plane`` and
``instance_id_segmentation`` on cached render products, after an optional warm-up of
physics+render steps (paper C.2.1); ``cast_rays`` uses PhysX scene-query raycasts started
where each ray leaves the agent's own collider.

The module may run past the project's 600 lines per module: it is one class against one
external API (Kit, PhysX, replicator), read side by side with Isaac Sim's source, and
splitting it would scatter the protocol's mapping that this docstring lays out.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import os
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vlnverse.errors import ConfigError, DependencyNotInstalled, SimulationError
from vlnverse.scene.types import Scene
from vlnverse.sim.agent import AgentSpec
from vlnverse.sim.backend import MoveResult
from vlnverse.sim.backends import isaac_kit, isaac_usd
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
#: Captures tried before a camera with no image yet is an error (the first frames after a
#: render product is created come back empty; ``camera.py`` 1043 treats them as not ready).
CAPTURE_ATTEMPTS = 8


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

    def launch_config(self) -> dict:
        """``SimulationApp`` launch config (keys of ``DEFAULT_LAUNCHER_CONFIG``)."""
        return {
            "headless": self.headless,
            "renderer": self.renderer,
            "width": self.width,
            "height": self.height,
            "extra_args": list(self.extra_args),
        }


def isaac_available() -> tuple[bool, str]:
    """Whether Isaac Sim can be imported here (without importing it)."""
    if isaac_kit.in_kit():
        return True, "running inside Kit"
    if importlib.util.find_spec("isaacsim") is None:
        return False, f"isaacsim is not installed; install {INSTALL_HINT}"
    return True, "isaacsim is installed"


# --------------------------------------------------------------------------- Kit-free helpers


def resolve_prim(prim_index: dict[str, int], path: str) -> int:
    """Index in ``Scene.prims`` of ``path`` or of its nearest listed ancestor; -1 for none.

    Labels that are not absolute prim paths (``BACKGROUND``, ``UNLABELLED`` in replicator's
    ``idToLabels``) name no object.
    """
    path = str(path)
    if not path.startswith("/"):
        return -1
    while path not in ("", "/"):
        index = prim_index.get(path)
        if index is not None:
            return index
        path = path.rsplit("/", 1)[0]
    return -1


def contacts_from_report(
    headers: Iterable[Any],
    data: Sequence[Any],
    *,
    agent_path: str,
    path_of: Callable[[int], str],
    resolve: Callable[[str], int],
    ignore: set[int],
    tolerance: float,
) -> list[Contact]:
    """The agent's contacts in one PhysX contact report (``get_contact_report()``).

    PhysX contact normals point from the second shape of a pair to the first, so the
    normal is kept when the agent is ``actor0`` and flipped when it is ``actor1``: a
    :class:`Contact` normal points from the scene geometry towards the agent.

    Args:
        headers, data: The report (headers index into ``data`` by offset and count).
        agent_path: The agent's rigid-body prim path.
        path_of: Encoded path (``header.actor0`` ...) → prim path string.
        resolve: Prim path → index in ``Scene.prims`` (-1 unknown).
        ignore: Prim indices not reported (the floors).
        tolerance: Contacts separated by more than this (m) are not touching.
    """
    found = []
    for header in headers:
        actors = (path_of(header.actor0), path_of(header.actor1))
        if agent_path not in actors:
            continue
        agent_is_0 = actors[0] == agent_path
        index = resolve(path_of(header.collider1 if agent_is_0 else header.collider0))
        if index in ignore:
            continue
        for i in range(header.contact_data_offset, header.contact_data_offset + header.num_contact_data):
            point = data[i]
            if point.separation > tolerance:
                continue
            normal = np.asarray(point.normal, dtype=np.float64) * (1.0 if agent_is_0 else -1.0)
            found.append(Contact(index, tuple(float(v) for v in point.position), tuple(float(v) for v in normal),
                                 max(0.0, -float(point.separation))))
    return found


def exit_distance(origin: np.ndarray, direction: np.ndarray, centre: Sequence[float], radius: float,
                  z_range: tuple[float, float]) -> float:
    """How far a ray starting inside a vertical cylinder travels before leaving it (0 outside).

    Rays cast from inside a collider hit it at distance 0, so the backend starts its
    raycasts where they leave the agent's own cylinder.
    """
    offset = np.asarray(origin[:2], dtype=np.float64) - np.asarray(centre[:2], dtype=np.float64)
    low, high = z_range
    if offset @ offset >= radius * radius or not low <= origin[2] <= high:
        return 0.0
    exits = []
    planar = float(direction[:2] @ direction[:2])
    if planar > 0.0:  # |offset + t·d_xy| = radius, the positive root
        b = float(offset @ direction[:2])
        exits.append((-b + math.sqrt(b * b - planar * (offset @ offset - radius * radius))) / planar)
    if direction[2] > 0.0:
        exits.append((high - origin[2]) / direction[2])
    elif direction[2] < 0.0:
        exits.append((low - origin[2]) / direction[2])
    return float(min(exits)) if exits else 0.0


def frame_ready(data: Any) -> bool:
    """Whether annotator output holds an image (the first frames come back empty)."""
    array = np.asarray(data)
    return array.ndim >= 2 and array.size > 0


def release_render_products(cameras: Iterable[tuple]) -> None:
    """Detach every annotator from, then destroy, each camera's render product."""
    for _path, product, annotators in cameras:
        for annotator in annotators.values():
            annotator.detach()
        product.destroy()


async def _call(fn: Callable, *args: Any) -> Any:
    return fn(*args)


# --------------------------------------------------------------------------- the backend


class IsaacBackend:
    """Isaac Sim backend (see :mod:`vlnverse.sim.backend` for the lifecycle).

    One is live per process at a time (:func:`isaac_kit.claim`); creating a second while
    the first is open raises :class:`SimulationError`.
    """

    name = "isaac"

    def __init__(self, physics: PhysicsConfig | None = None, settings: IsaacSettings | None = None) -> None:
        ok, why = isaac_available()
        if not ok:
            raise DependencyNotInstalled(
                "isaacsim", extra="isaac", purpose="the 'isaac' backend: Isaac Sim 5.x, Python 3.11, an RTX GPU"
            )
        self.physics = physics or PhysicsConfig()
        self.settings = settings or IsaacSettings()
        isaac_kit.start_app(self.settings.launch_config())
        isaac_kit.claim(self)
        try:
            self._driver = isaac_kit.make_driver()
        except BaseException:
            isaac_kit.release(self)
            raise
        self._closed = False
        self._world = None
        self._stage = None
        self._session_before: set[str] = set()
        self._scene: Scene | None = None
        self._prim_index: dict[str, int] = {}
        self._floor_prims: set[int] = set()
        self._agent = None
        self._agent_spec: AgentSpec | None = None
        self._base_z = 0.0
        self._movables: list = []
        self._cameras: dict[tuple, tuple] = {}
        self._last_contacts: list[Contact] | None = None
        self._moved_since_render = True

    @classmethod
    def available(cls) -> tuple[bool, str]:
        return isaac_available()

    @classmethod
    def prepare_process(cls) -> None:
        """Start Kit now, before the scene loader imports ``pxr`` (Kit's USD must come first)."""
        if isaac_available()[0]:
            isaac_kit.start_app(IsaacSettings().launch_config())

    # -- plumbing ----------------------------------------------------------------------

    def _run(self, coro: Coroutine) -> Any:
        return self._driver.run(coro)

    def _kit(self, fn: Callable, *args: Any) -> Any:
        """Run a synchronous Kit operation where the driver runs Kit work."""
        return self._driver.run(_call(fn, *args))

    def _require(self, what: str):
        if self._closed:
            raise SimulationError("isaac backend is closed")
        if what == "scene" and self._world is None:
            raise SimulationError("isaac backend: load the scene first")
        if what == "agent" and self._agent is None:
            raise SimulationError("isaac backend: no agent (call spawn_agent first)")
        return self._agent if what == "agent" else self._world

    def _session(self):
        from pxr import Usd

        return Usd.EditContext(self._stage, self._stage.GetSessionLayer())

    def _resolve(self, path: str) -> int:
        return resolve_prim(self._prim_index, path)

    # -- lifecycle ---------------------------------------------------------------------

    def load_scene(self, scene: Scene) -> None:
        self._require("")
        if self._world is not None:
            raise SimulationError("isaac backend: load_scene may be called once")
        self._run(self._load_scene(scene))

    async def _load_scene(self, scene: Scene) -> None:
        import omni.replicator.core as rep
        import omni.usd
        from isaacsim.core.api import World
        from isaacsim.core.utils.stage import is_stage_loading

        context = omni.usd.get_context()
        current = context.get_stage()
        root = current.GetRootLayer().realPath if current is not None else ""
        if not root or os.path.realpath(root) != os.path.realpath(str(scene.path)):
            if not await self._driver.open_stage(str(scene.path)):
                raise SimulationError(f"isaac backend: Isaac Sim could not open {scene.path}")
        # load_stage.py 66-73: two updates after opening, then poll until loaded.
        await self._driver.frame()
        await self._driver.frame()
        while is_stage_loading():
            await self._driver.frame()
        self._stage = context.get_stage()
        self._session_before = isaac_usd.session_prim_paths(self._stage)
        self._scene = scene
        self._prim_index = {prim.path: i for i, prim in enumerate(scene.prims)}
        self._floor_prims = {i for i, p in enumerate(scene.prims) if structural_category(p) == "floor"}
        # Replicator would capture on every timeline frame otherwise (isaacsim.exp.base.kit 278).
        rep.orchestrator.set_capture_on_play(False)
        physics_dt = 1.0 / self.physics.physics_hz
        with self._session():  # the World's stage writes go to the session layer too
            if not isaac_usd.find_physics_scenes(self._stage):
                isaac_usd.author_physics_scene(
                    self._stage,
                    isaac_usd.PhysicsSceneSettings(physics_dt=physics_dt, gravity=self.physics.gravity),
                    path=f"{ROOT}/PhysicsScene",
                )
            self._world = World(physics_dt=physics_dt, rendering_dt=self.physics.control_dt, stage_units_in_meters=1.0)
            await self._driver.init_world(self._world)
            self._register_movables(scene)
            await self._driver.reset_world(self._world)
        self._driver.hold_physics(True)

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
        self._require("scene")
        if self._agent is not None:
            raise SimulationError("isaac backend: the agent is already spawned")
        self._run(self._spawn_agent(spec, pose))
        self._last_contacts = None

    async def _spawn_agent(self, spec: AgentSpec, pose: Pose) -> None:
        from isaacsim.core.prims import SingleRigidPrim

        with self._session():
            isaac_usd.author_agent(self._stage, spec, AGENT_PATH, (pose.x, pose.y, pose.z), pose.yaw)
            self._agent = self._world.scene.add(SingleRigidPrim(prim_path=AGENT_PATH, name="vlnverse_agent"))
            await self._driver.reset_world(self._world)
        self._agent_spec = spec
        self._place(pose)

    def close(self) -> None:
        """Stop and clear the World, free render products, remove what the backend put in
        the session layer, and let another backend go live; the Kit app stays up."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._world is not None or self._cameras:
                self._run(self._teardown())
        finally:
            self._world = self._agent = self._stage = None
            self._cameras.clear()
            self._movables.clear()
            isaac_kit.release(self)

    async def _teardown(self) -> None:
        cameras, self._cameras = list(self._cameras.values()), {}
        release_render_products(cameras)
        world = self._world
        if world is not None:
            await self._driver.stop_world(world)
            world.scene.clear(registry_only=True)  # our prims are removed below, with the session edits
            type(world).clear_instance()
            self._driver.hold_physics(False)
        if self._stage is not None:
            isaac_usd.remove_session_prims(self._stage, self._session_before)

    # -- agent -------------------------------------------------------------------------

    def _place(self, pose: Pose) -> None:
        """Teleport the agent to ``pose`` at rest (Kit side; contacts untouched)."""
        quat = isaac_usd.yaw_quaternion(pose.yaw)
        self._agent.set_world_pose(
            position=np.array([pose.x, pose.y, pose.z]),
            orientation=np.array([quat.GetReal(), *quat.GetImaginary()]),
        )
        self._agent.set_linear_velocity(np.zeros(3))
        self._agent.set_angular_velocity(np.zeros(3))
        self._base_z = pose.z
        self._moved_since_render = True

    def set_agent_pose(self, pose: Pose) -> None:
        self._require("agent")
        self._kit(self._place, pose)
        self._last_contacts = None  # the contacts at the new pose are read on demand

    def _pose(self) -> Pose:
        position, orientation = self._agent.get_world_pose()
        return Pose(float(position[0]), float(position[1]), self._base_z, isaac_usd.quaternion_yaw(orientation))

    def agent_pose(self) -> Pose:
        self._require("agent")
        return self._kit(self._pose)

    def move(self, velocities: np.ndarray) -> MoveResult:
        self._require("agent")
        commands = np.asarray(velocities, dtype=np.float64).reshape(-1, 3)
        poses, contacts = self._kit(self._move, commands)
        self._last_contacts = contacts
        self._moved_since_render = True
        return MoveResult(poses, list(contacts))

    def _move(self, commands: np.ndarray) -> tuple[np.ndarray, list[Contact]]:
        agent, world = self._agent, self._world
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
            pose = self._pose()
            poses[tick] = (pose.x, pose.y, pose.yaw)
        agent.set_linear_velocity(np.zeros(3))
        agent.set_angular_velocity(np.zeros(3))
        return poses, [deepest[k] for k in sorted(deepest)]

    def contacts(self) -> list[Contact]:
        self._require("agent")
        if self._last_contacts is None:
            self._last_contacts = self._kit(self._probe_contacts)
        return list(self._last_contacts)

    def _probe_contacts(self) -> list[Contact]:
        """One physics step at rest produces fresh reports; the pose is put back so
        depenetration cannot move the agent (and the reports are kept)."""
        pose = self._pose()
        self._world.step(render=False)
        found = self._read_contacts()
        self._place(pose)
        return found

    def _read_contacts(self) -> list[Contact]:
        from omni.physx import get_physx_simulation_interface
        from pxr import PhysicsSchemaTools

        headers, data = get_physx_simulation_interface().get_contact_report()
        return contacts_from_report(
            headers, data, agent_path=AGENT_PATH, path_of=lambda v: str(PhysicsSchemaTools.intToSdfPath(v)),
            resolve=self._resolve, ignore=self._floor_prims, tolerance=self.physics.contact_tolerance,
        )

    def reset_objects(self) -> None:
        self._require("scene")
        self._kit(self._reset_objects)
        self._last_contacts = None

    def _reset_objects(self) -> None:
        for rigid in self._movables:
            rigid.post_reset()
            rigid.set_linear_velocity(np.zeros(3))
            rigid.set_angular_velocity(np.zeros(3))

    # -- perception --------------------------------------------------------------------

    def _camera(self, request: CameraRequest) -> tuple:
        """Camera prim, render product and annotators for one image size/lens."""
        import omni.replicator.core as rep

        key = (request.width, request.height, request.hfov_deg, request.near, request.far)
        if key not in self._cameras:
            path = f"{CAMERA_ROOT}/cam_{len(self._cameras)}"
            with self._session():
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
        return self._run(self._render(list(requests)))

    async def _render(self, requests: list[CameraRequest]) -> list[CameraFrame]:
        if self._moved_since_render:
            for _ in range(self.settings.warmup_steps):
                await self._driver.warm_frame(self._world)
        self._moved_since_render = False
        frames = []
        for request in requests:
            path, _, annotators = self._camera(request)
            with self._session():
                orientation = isaac_usd.camera_local_orientation(math.degrees(request.pitch), math.degrees(request.yaw))
                isaac_usd.set_pose(self._stage.GetPrimAtPath(path), request.position, orientation)
            frame = None
            for _ in range(CAPTURE_ATTEMPTS):
                await self._driver.capture(self.settings.rt_subframes)
                frame = self._frame(request, annotators)
                if frame is not None:
                    break
            if frame is None:
                raise SimulationError(f"isaac backend: camera {path} gave no image after {CAPTURE_ATTEMPTS} captures")
            frames.append(frame)
        return frames

    def _frame(self, request: CameraRequest, annotators: dict) -> CameraFrame | None:
        """The frame from the annotators, or None while any requested one is still empty."""
        frame = CameraFrame()
        if request.rgb:
            rgb = annotators["rgb"].get_data()
            if not frame_ready(rgb):
                return None
            frame.rgb = rgb_of(np.asarray(rgb, dtype=np.uint8))
        if request.depth:
            depth = annotators["distance_to_image_plane"].get_data()
            if not frame_ready(depth):
                return None
            depth = np.asarray(depth, dtype=np.float32)
            frame.depth = np.where(np.isfinite(depth) & (depth > 0), np.minimum(depth, request.far), request.far).astype(np.float32)
        if request.instance:
            result = annotators["instance_id_segmentation"].get_data()
            if not frame_ready(result["data"]):
                return None
            ids = np.asarray(result["data"], dtype=np.int64)
            lut = {int(k): self._resolve(str(v)) for k, v in result["info"]["idToLabels"].items()}
            table = np.full(max(lut, default=0) + 2, -1, dtype=np.int32)
            for key, value in lut.items():
                table[key] = value
            frame.instance = table[np.clip(ids, 0, len(table) - 1)]
        return frame

    def cast_rays(self, origins: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self._require("scene")
        origins = np.asarray(origins, dtype=np.float64).reshape(-1, 3)
        ends = np.asarray(ends, dtype=np.float64).reshape(-1, 3)
        return self._kit(self._cast_rays, origins, ends)

    def _cast_rays(self, origins: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        from omni.physx import get_physx_scene_query_interface

        query = get_physx_scene_query_interface()
        fraction = np.ones(len(origins))
        prims = np.full(len(origins), -1, dtype=np.int32)
        body = self._agent_body()
        for i, (start, end) in enumerate(zip(origins, ends, strict=True)):
            segment = end - start
            length = float(np.linalg.norm(segment))
            if length == 0.0:
                continue
            direction = segment / length
            skip = exit_distance(start, direction, *body) + 1e-4 if body else 0.0
            if skip >= length:
                continue
            # isaacsim.core.utils collisions.py 57-60: raycast_closest(origin, dir, distance) -> dict
            hit = query.raycast_closest(tuple(start + direction * skip), tuple(direction), length - skip)
            if hit["hit"]:
                fraction[i] = (skip + float(hit["distance"])) / length
                prims[i] = self._resolve(str(hit.get("collision") or hit.get("rigidBody") or ""))
        return fraction, prims

    def _agent_body(self) -> tuple | None:
        """``(centre, radius, (z_low, z_high))`` of the agent's collision cylinder, if spawned."""
        if self._agent is None or self._agent_spec is None:
            return None
        pose, spec = self._pose(), self._agent_spec
        return (pose.x, pose.y), float(spec.radius), (pose.z + float(spec.step_height), pose.z + float(spec.height))
