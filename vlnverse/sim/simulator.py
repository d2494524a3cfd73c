"""The simulator: one agent with a sensor rig in one scene, on any backend.

This is where the Strict / Slide / Tel-Hop rules live, once for every backend:
:meth:`Simulator.execute` runs an action through the physics-aware controller (or, in
Tel-Hop, teleports), measures how far the reached pose is from the commanded motion,
and reports collisions in scene terms (object ids and categories).

Strict / Slide: the paper's collision is "an obstacle displacing the agent by 0.1 m"
(§5.3). The deviation from the commanded motion (a planar vector: reached minus commanded
position) is accumulated over consecutive actions in contact, whatever the action space: an agent pushed slowly against a wall
(0.15 m/s for 0.5 s, 0.075 m short per action) collides on its second push, exactly as a
discrete 0.25 m step into the wall does at once, while contact jitter (turning in place
against a wall) cancels out. The sum starts again after a collision event, after an
action without contact, after a teleport and on reset.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np
from gymnasium import spaces

from vlnverse.errors import ConfigError, SimulationError
from vlnverse.scene.types import Scene
from vlnverse.sim.actions import MotionCommand
from vlnverse.sim.agent import AgentSpec
from vlnverse.sim.backend import Backend, create_backend, resolve_backend
from vlnverse.sim.controller import MotionController
from vlnverse.sim.physics import PhysicsConfig
from vlnverse.sim.rig import SensorRig
from vlnverse.sim.semantics import InstanceTable, build_instance_table
from vlnverse.sim.sensors import (
    CameraSpec,
    DepthSensor,
    LidarSensor,
    PoseSensor,
    RGBSensor,
    SemanticSensor,
    SensorSpec,
)
from vlnverse.sim.types import CameraRequest, Contact, ContactReport, Pose, StepReport

logger = logging.getLogger(__name__)

#: Zero-velocity ticks that let the physics push a teleported agent out of a penetration.
SETTLE_TICKS = 3


class Simulator:
    """An agent in a scene: act with motion commands, observe through the rig.

    Args:
        scene: The loaded scene.
        agent: The agent body and limits.
        sensors: Anything :meth:`SensorRig.from_spec` accepts (default: RGB + depth).
        physics: Physics settings, including the mode.
        backend: ``"bullet"``, ``"isaac"`` or ``"auto"``.
        renderer: The embedded backend's camera renderer: ``"gl"`` (textured, lit OpenGL on
            the CPU), ``"tiny"`` (PyBullet's TinyRenderer) or ``"auto"`` (gl where headless
            EGL works, else tiny; see :mod:`vlnverse.sim.gl`).
        panorama: How the GL renderer draws a level rig of cameras at one eye (the 12-view
            panorama): ``"one_pass"`` (default: wide views drawn once, every view looked up
            in them ray by ray, see :mod:`vlnverse.sim.gl.panorama`) or ``"direct"`` (each
            view its own pass).
        occupancy: The scene's occupancy map for this agent; built on first need
            (Tel-Hop snapping) when not given.
        pose: Initial agent pose (default: centre of the scene at its lowest floor).
    """

    def __init__(
        self,
        scene: Scene,
        *,
        agent: AgentSpec | None = None,
        sensors: Any = ("rgb", "depth"),
        physics: PhysicsConfig | None = None,
        backend: str = "bullet",
        renderer: str = "auto",
        panorama: str = "one_pass",
        occupancy: Any = None,
        pose: Pose | None = None,
    ) -> None:
        self.scene = scene
        self.agent = agent or AgentSpec()
        self.physics = physics or PhysicsConfig()
        self.rig = SensorRig.from_spec(sensors)
        self.backend_name = resolve_backend(backend)
        self.instances: InstanceTable = build_instance_table(scene)
        self._occupancy = occupancy
        self.controller = MotionController(self.agent, self.physics)
        self.time = 0.0
        self.collisions = 0
        self._pushed = np.zeros(2)  # deviation carried over consecutive in-contact actions (m)
        self._cache: dict[str, tuple[float, np.ndarray]] = {}
        self._groups_version = -1
        self._groups: list[tuple[CameraRequest, list[tuple[str, CameraSpec]]]] = []
        self._lidar_dirs: dict[str, np.ndarray] = {}
        self._backend: Backend | None = create_backend(self.backend_name, self.physics, renderer, panorama)
        try:
            self._backend.load_scene(scene)
            self._backend.spawn_agent(self.agent, pose or self._default_pose())
        except BaseException:
            self.close()
            raise

    # -- lifecycle ---------------------------------------------------------------------

    @property
    def backend(self) -> Backend:
        if self._backend is None:
            raise SimulationError("the simulator is closed")
        return self._backend

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._backend is None

    def close(self) -> None:
        """Release the backend (idempotent)."""
        if self._backend is not None:
            backend, self._backend = self._backend, None
            backend.close()

    def __enter__(self) -> Simulator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _default_pose(self) -> Pose:
        low, high = self.scene.bounds
        return Pose(float(low[0] + high[0]) / 2.0, float(low[1] + high[1]) / 2.0,
                    float(np.clip(0.0, low[2], high[2])), 0.0)

    @property
    def occupancy(self):
        """The occupancy map for this agent (built from the scene on first use)."""
        if self._occupancy is None:
            from vlnverse.scene.occupancy import build_occupancy

            self._occupancy = build_occupancy(
                self.scene, agent_radius=self.agent.radius, agent_height=self.agent.height,
                step_height=self.agent.step_height,
            )
        return self._occupancy

    def reset(self, pose: Pose) -> None:
        """Start over: movable objects back in place, the agent at ``pose`` at rest."""
        backend = self.backend
        backend.reset_objects()
        backend.set_agent_pose(pose)
        self.controller.reset()
        self.time = 0.0
        self.collisions = 0
        self._pushed = np.zeros(2)
        self._cache.clear()

    @property
    def pose(self) -> Pose:
        return self.backend.agent_pose()

    # -- sensors -----------------------------------------------------------------------

    def attach_sensor(self, name: str, spec: SensorSpec) -> None:
        """Attach (or replace) a sensor; the observation space changes accordingly."""
        self.rig.attach(name, spec)
        self._cache.pop(name, None)

    def detach_sensor(self, name: str) -> SensorSpec:
        """Detach a sensor; it disappears from observations and the observation space."""
        self._cache.pop(name, None)
        return self.rig.detach(name)

    def observation_space(self) -> spaces.Dict:
        return self.rig.observation_space(self.instances.max_id)

    def _camera_groups(self) -> list[tuple[CameraRequest, list[tuple[str, CameraSpec]]]]:
        if self._groups_version == self.rig.version:
            return self._groups
        by_key: dict[tuple, list[tuple[str, CameraSpec]]] = {}
        for name, spec in self.rig.items():
            if isinstance(spec, CameraSpec):
                by_key.setdefault(spec.camera_key(), []).append((name, spec))
        self._groups = []
        for members in by_key.values():
            cam = members[0][1]
            request = CameraRequest(
                position=(0.0, 0.0, 0.0), yaw=0.0, pitch=math.radians(cam.pitch_deg),
                width=cam.width, height=cam.height, hfov_deg=cam.hfov_deg, near=cam.near, far=cam.far,
                rgb=any(isinstance(s, RGBSensor) for _, s in members),
                depth=any(isinstance(s, DepthSensor) for _, s in members),
                instance=any(isinstance(s, SemanticSensor) for _, s in members),
            )
            self._groups.append((request, members))
        self._groups_version = self.rig.version
        return self._groups

    def _mount(self, spec: SensorSpec, pose: Pose) -> tuple[tuple[float, float, float], float]:
        """World position and yaw of a sensor mounted on the agent at ``pose``."""
        c, s = math.cos(pose.yaw), math.sin(pose.yaw)
        height = self.agent.camera_height if spec.mount_height is None else spec.mount_height
        x = pose.x + c * spec.mount_forward - s * spec.mount_left
        y = pose.y + s * spec.mount_forward + c * spec.mount_left
        return (x, y, pose.z + height), pose.yaw + math.radians(spec.yaw_deg)

    def _due(self, name: str, spec: SensorSpec) -> bool:
        cached = self._cache.get(name)
        return cached is None or spec.rate_hz is None or self.time - cached[0] >= 1.0 / spec.rate_hz - 1e-9

    def observe(self) -> dict[str, np.ndarray]:
        """Read every attached sensor (sensors with a rate reuse their last reading between samples)."""
        pose = self.pose
        obs: dict[str, np.ndarray] = {}
        due = [[(n, s) for n, s in members if self._due(n, s)] for _, members in self._camera_groups()]
        readings = self._render_cameras(pose, due)
        for name, value in readings.items():
            self._cache[name] = (self.time, value)
        fresh = set(readings)
        for name, spec in self.rig.items():
            if isinstance(spec, LidarSensor) and self._due(name, spec):
                self._cache[name] = (self.time, self._scan(name, spec, pose))
                fresh.add(name)
            elif isinstance(spec, PoseSensor) and self._due(name, spec):
                self._cache[name] = (self.time, pose.as_array().astype(np.float32))
                fresh.add(name)
            value = self._cache[name][1]
            obs[name] = value if name in fresh else value.copy()  # never hand out one buffer twice
        return obs

    def render_cameras(self, pose: Pose) -> dict[str, np.ndarray]:
        """Every camera sensor's reading from the agent at ``pose``, without moving the agent
        or touching the sensors' rates (e.g. to draw the poses of a walk made elsewhere)."""
        return self._render_cameras(pose, [members for _, members in self._camera_groups()])

    def view(self, camera: CameraSpec, pose: Pose | None = None) -> np.ndarray:
        """The RGB image of ``camera`` mounted on the agent at ``pose`` (default: where it
        stands), without attaching it to the rig (e.g. to show people what an agent without
        an RGB camera was facing)."""
        position, yaw = self._mount(camera, self.pose if pose is None else pose)
        request = CameraRequest(position=position, yaw=yaw, pitch=math.radians(camera.pitch_deg),
                                width=camera.width, height=camera.height, hfov_deg=camera.hfov_deg,
                                near=camera.near, far=camera.far, rgb=True, depth=False, instance=False)
        return self.backend.render([request])[0].rgb

    def _render_cameras(self, pose: Pose, due: list[list[tuple[str, CameraSpec]]]) -> dict[str, np.ndarray]:
        """The readings of the ``due`` sensors of each camera group (same order as
        :meth:`_camera_groups`) from ``pose``, in one backend render call."""
        requests, pending = [], []
        for (request, members), sensors in zip(self._camera_groups(), due, strict=True):
            if not sensors:
                continue
            position, yaw = self._mount(members[0][1], pose)
            requests.append(CameraRequest(
                position=position, yaw=yaw, pitch=request.pitch, width=request.width,
                height=request.height, hfov_deg=request.hfov_deg, near=request.near, far=request.far,
                rgb=any(isinstance(s, RGBSensor) for _, s in sensors),
                depth=any(isinstance(s, DepthSensor) for _, s in sensors),
                instance=any(isinstance(s, SemanticSensor) for _, s in sensors),
            ))
            pending.append(sensors)
        readings = {}
        for frame, sensors in zip(self.backend.render(requests), pending, strict=True):
            for name, spec in sensors:
                if isinstance(spec, RGBSensor):
                    readings[name] = frame.rgb
                elif isinstance(spec, DepthSensor):
                    readings[name] = spec.convert(frame.depth)
                else:
                    readings[name] = self.instances.ids_of_prims(frame.instance)
        return readings

    def _scan(self, name: str, spec: LidarSensor, pose: Pose) -> np.ndarray:
        local = self._lidar_dirs.get(name)
        if local is None or local.shape[:2] != (spec.channels, spec.n_rays):
            local = spec.ray_directions()
            pitch = math.radians(spec.pitch_deg)
            if pitch:
                cp, sp = math.cos(pitch), math.sin(pitch)
                local = local @ np.array([[cp, 0.0, sp], [0.0, 1.0, 0.0], [-sp, 0.0, cp]])
            self._lidar_dirs[name] = local
        position, yaw = self._mount(spec, pose)
        c, s = math.cos(yaw), math.sin(yaw)
        rotation = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
        directions = local.reshape(-1, 3) @ rotation.T
        origins = np.broadcast_to(np.asarray(position), directions.shape)
        fraction, _ = self.backend.cast_rays(origins, origins + directions * spec.max_range)
        ranges = (fraction * spec.max_range).astype(np.float32)
        ranges[ranges < spec.min_range] = spec.max_range
        return ranges.reshape(spec.channels, spec.n_rays)

    # -- acting ------------------------------------------------------------------------

    def execute(self, command: MotionCommand) -> StepReport:
        """Run one motion command under the physics mode's rules."""
        start = self.pose
        if self.physics.teleports:
            report = self._hop(command, start)
        else:
            report = self._drive(command, start)
        self.collisions += int(report.collision)
        return report

    def _drive(self, command: MotionCommand, start: Pose) -> StepReport:
        plan = self.controller.plan(command, start)
        if plan.ticks == 0:
            return StepReport(plan.commanded_pose, start, 0.0, False)
        result = self.backend.move(plan.velocities)
        offsets = self._pushed + (result.poses[:, :2] - plan.poses[:, :2])
        deviation = float(np.max(np.hypot(offsets[:, 0], offsets[:, 1])))
        collision = deviation >= self.physics.collision_threshold
        self._pushed = offsets[-1] if result.contacts and not collision else np.zeros(2)
        sim_time = plan.ticks * self.physics.control_dt
        self.time += sim_time
        return StepReport(
            commanded_pose=plan.commanded_pose,
            reached_pose=self.pose,
            displacement=deviation,
            collision=collision,
            contacts=self.resolve_contacts(result.contacts),
            sim_time=sim_time,
        )

    def _hop(self, command: MotionCommand, start: Pose) -> StepReport:
        plan = self.controller.plan(command, start)
        self.controller.reset()
        self._pushed = np.zeros(2)
        target = plan.commanded_pose
        backend = self.backend
        backend.set_agent_pose(target)
        touching = backend.contacts()
        penetrating = any(c.depth > self.physics.contact_tolerance for c in touching)
        occupancy = self.occupancy
        component = self._component(start)
        nearest = np.asarray(occupancy.nearest_navigable(target.position), dtype=np.float64)
        # Physically free and on the start's navigable floor (up to grid discretization).
        on_floor = (
            math.hypot(nearest[0] - target.x, nearest[1] - target.y) <= 2.0 * occupancy.resolution
            and occupancy.component_of(nearest) == component
        )
        reached = target
        if penetrating or not on_floor:
            snapped = np.asarray(occupancy.nearest_navigable(target.position, component=component), dtype=np.float64)
            reached = Pose(float(snapped[0]), float(snapped[1]), float(snapped[2]), target.yaw)
            backend.set_agent_pose(reached)
            if any(c.depth > self.physics.contact_tolerance for c in backend.contacts()):
                backend.move(np.zeros((SETTLE_TICKS, 3)))
            reached = self.pose
        displacement = target.distance_xy(reached)
        return StepReport(
            commanded_pose=target,
            reached_pose=reached,
            displacement=displacement,
            collision=displacement >= self.physics.collision_threshold,
            contacts=self.resolve_contacts(touching),
            snapped=displacement > 0.0,
        )

    def _component(self, pose: Pose) -> int:
        """The navigable component the agent is in (or nearest to)."""
        occupancy = self.occupancy
        component = occupancy.component_of(pose.position)
        if component < 0:
            nearest = occupancy.nearest_navigable(pose.position)
            component = occupancy.component_of(nearest)
        if component < 0:
            raise ConfigError(f"no navigable floor near the agent at ({pose.x:.2f}, {pose.y:.2f})")
        return int(component)

    def resolve_contacts(self, contacts: list[Contact]) -> ContactReport:
        """Contacts → sorted unique object ids and categories."""
        if not contacts:
            return ContactReport()
        ids = self.instances.ids_of_prims(np.array([c.prim_index for c in contacts]))
        touched = sorted({int(i) for i in ids if i > 0})
        found = [self.instances.instances[i] for i in touched]
        order = sorted(range(len(found)), key=lambda k: found[k].object_id)
        return ContactReport(
            object_ids=tuple(found[k].object_id for k in order),
            categories=tuple(found[k].category for k in order),
            max_depth=max(c.depth for c in contacts),
        )
