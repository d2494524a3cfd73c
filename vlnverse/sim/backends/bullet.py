"""The embedded backend: PyBullet in DIRECT mode, rendered on the CPU (no display, no GPU).

Cameras are drawn by the textured, lit OpenGL renderer of :mod:`vlnverse.sim.gl` (headless
EGL on Mesa's llvmpipe) where it can run, else by PyBullet's TinyRenderer (``renderer``:
``"auto"``, ``"gl"`` or ``"tiny"``); LiDAR is ray-cast by PyBullet either way.

The agent is a multibody whose links are joined by a prismatic X, a prismatic Y and a
revolute Z joint; the last link carries the cylinder collider. Velocity motors with
force limits drive the joints, so the agent cannot tip, slides along walls it brushes,
and is stopped or deflected by obstacles according to its mass and speed. The collider
starts ``step_height`` above the floor, so the agent steps over low clutter as the
occupancy map assumes.

Movable objects at rest out of the agent's reach are *dormant*: static (mass 0) and
filtered out of collisions with static geometry, so resting contacts with the concave
house meshes cost nothing. Before each motion, every movable the agent could touch
(within its radius, the action's travel and a margin), and everything within reach of
those or of a moving object, is woken as a full dynamic body; awake objects at rest and
out of reach fall dormant again where they lie.

Gliding: when only the agent can move and no contact can begin, the agent's velocity
motors (with force to spare for the speed profile's accelerations) track the commanded
profile exactly, so the move is integrated directly, without physics steps: the joints
are set to the end of the profile, and the contacts are those at the end. That holds for
a turn in place (a frictionless cylinder spinning about its own axis touches exactly
what it touched) and for a motion whose whole path keeps ``COARSE_MARGIN`` clear of every
other body. It never holds while a movable is awake or the agent is penetrating
something, so pushes, slides and contact resolution always run at the full physics rate.
"""

from __future__ import annotations

import logging
import math
import sys
from collections.abc import Sequence

import numpy as np

from vlnverse.errors import ConfigError, DependencyNotInstalled, SimulationError
from vlnverse.scene.types import Scene
from vlnverse.sim.agent import AgentSpec
from vlnverse.sim.backend import MoveResult
from vlnverse.sim.backends.bullet_scene import (
    GROUP_DORMANT,
    GROUP_DYNAMIC,
    BulletWorld,
    build_world,
    cached_world_plan,
)
from vlnverse.sim.camera import view_matrix
from vlnverse.sim.physics import PhysicsConfig
from vlnverse.sim.semantics import build_instance_table
from vlnverse.sim.types import CameraFrame, CameraRequest, Contact, Pose, rgb_of
from vlnverse.stdio import c_stderr_to_log

#: PyBullet's limit on rays per ``rayTestBatch`` call.
MAX_RAYS_PER_BATCH = 16384
#: Motor force headroom over ``mass * max_accel`` (tight tracking of the speed profile).
MOTOR_HEADROOM = 3.0
#: Renderer lighting: a fixed sun from above, mostly ambient so colours stay true.
LIGHT_DIRECTION = (0.5, 0.8, 1.0)
LIGHT_AMBIENT, LIGHT_DIFFUSE, LIGHT_SPECULAR = 0.7, 0.4, 0.0
#: Extra distance (metres) beyond radius and travel at which movables are woken.
WAKE_MARGIN = 0.25
#: Further distance an awake movable must be out of reach before it falls dormant.
DORMANT_HYSTERESIS = 0.25
#: Speeds below which an awake movable counts as at rest (m/s, rad/s).
REST_SPEED, REST_SPIN = 0.01, 0.05
#: Clearance (metres) beyond a motion's travel that every other body must keep for coarse ticks.
COARSE_MARGIN = 0.05
#: Constraint-solver iterations per physics step (PyBullet's default is 50). At 120 Hz the
#: agent's contacts converge well before 20: a contact-heavy walk ends at the same poses
#: (within 2 mm after 300 actions) with the same collisions, at half the physics cost.
SOLVER_ITERATIONS = 20


def _pybullet():
    if "pybullet" in sys.modules:
        return sys.modules["pybullet"]
    try:
        with c_stderr_to_log(logging.getLogger(__name__)):  # its build-date banner, once per process
            import pybullet
    except ImportError as exc:  # pragma: no cover - pybullet is a core dependency
        raise DependencyNotInstalled("pybullet", purpose="the embedded simulator backend") from exc
    return pybullet


def _keep_deepest(deepest: dict[int, tuple], points: Sequence[tuple]) -> None:
    """Update ``deepest`` (prim index → (depth, raw contact point) of its deepest contact so
    far) with ``points``, the ``(prim index, depth, raw point)`` of contacts as read."""
    for prim, depth, point in points:
        best = deepest.get(prim)
        if best is None or depth > best[0]:
            deepest[prim] = (depth, point)


def _contacts(deepest: dict[int, tuple]) -> list[Contact]:
    """The deepest contact of each prim, in prim order."""
    return [Contact(prim_index=prim, position=tuple(deepest[prim][1][6]), normal=tuple(deepest[prim][1][7]),
                    depth=deepest[prim][0]) for prim in sorted(deepest)]


class BulletBackend:
    """PyBullet DIRECT backend (see :mod:`vlnverse.sim.backend` for the lifecycle)."""

    name = "bullet"

    def __init__(self, physics: PhysicsConfig | None = None, renderer: str = "auto", panorama: str = "one_pass") -> None:
        from vlnverse.sim.gl.context import resolve_renderer
        from vlnverse.sim.gl.panorama import PANORAMA_MODES

        if panorama not in PANORAMA_MODES:
            raise ConfigError(f"unknown panorama mode {panorama!r}; valid: {', '.join(PANORAMA_MODES)}")
        self.renderer = resolve_renderer(renderer)
        self.panorama = panorama
        self._p = _pybullet()
        self.physics = physics or PhysicsConfig()
        self._client = self._p.connect(self._p.DIRECT)
        p, c = self._p, self._client
        p.setGravity(0.0, 0.0, -self.physics.gravity, physicsClientId=c)
        p.setPhysicsEngineParameter(
            fixedTimeStep=self.physics.control_dt, numSubSteps=self.physics.substeps,
            numSolverIterations=SOLVER_ITERATIONS, deterministicOverlappingPairs=1, physicsClientId=c,
        )
        self._world: BulletWorld | None = None
        self._gl = None  # the GLRenderer of the loaded scene with renderer "gl"
        self._gl_bodies: list[int] = []  # its movable bodies' uids, in pose-row order
        self._gl_matrices = np.zeros((0, 4, 4))  # their world transforms as last handed to it
        self._gl_stale = np.zeros(0, dtype=bool)  # rows that may have moved since
        self._gl_row = np.zeros(0, dtype=np.int64)  # the row of each managed movable
        self._agent: int | None = None
        self._spec: AgentSpec | None = None
        self._forces: list[float] = []
        self._base_z = 0.0
        self._lut = np.full(1, -1, dtype=np.int32)
        self._projections: dict[tuple, list[float]] = {}
        self._contacts_fresh = False
        self._pose: Pose | None = None  # the agent's pose as last read (None: moved since)
        self._managed = np.zeros(0, dtype=np.int64)  # movable uids that may fall dormant
        self._boxes = np.zeros((0, 2, 2))  # their xy AABBs (min, max)
        self._box_gaps: np.ndarray | None = None  # (M, M) gaps between those boxes; None: stale
        self._awake = np.zeros(0, dtype=bool)
        self._probes: dict[float, int] = {}  # reach → probe collision shape
        self.coarse_moves = 0  # moves that glided, without physics steps (diagnostics)

    @property
    def client_id(self) -> int:
        """The PyBullet physics client of this backend (for benchmarks and debugging)."""
        if self._client is None:
            raise SimulationError("bullet backend is closed")
        return self._client

    @property
    def gl_renderer(self):
        """The :class:`~vlnverse.sim.gl.renderer.GLRenderer` drawing the cameras (None with ``tiny``)."""
        return self._gl

    @classmethod
    def available(cls) -> tuple[bool, str]:
        try:
            _pybullet()
        except DependencyNotInstalled as exc:
            return False, str(exc)
        return True, "pybullet is installed"

    # -- lifecycle ---------------------------------------------------------------------

    def load_scene(self, scene: Scene) -> None:
        if self._client is None:
            raise SimulationError("bullet backend is closed")
        if self._world is not None:
            raise SimulationError("bullet backend: load_scene may be called once")
        plan = cached_world_plan(scene, build_instance_table(scene))
        self._world = build_world(self._p, self._client, plan, static_visuals=self.renderer != "gl")
        if self.renderer == "gl":
            from vlnverse.sim.gl.renderer import GLRenderer

            self._gl = GLRenderer(scene, [(scene.prims[b.prim].object_index, b.centre) for b in plan.movables],
                                  panorama=self.panorama)
            self._gl_bodies = list(self._world.movable)
            self._gl_matrices = np.tile(np.eye(4), (len(self._gl_bodies), 1, 1))
            self._gl_stale = np.ones(len(self._gl_bodies), dtype=bool)
        self._lut = self._world.lookup_table(extra=4)
        self._managed = np.array(sorted(self._world.dynamics), dtype=np.int64)
        if self._gl is not None:
            self._gl_row = np.array([self._gl_bodies.index(uid) for uid in self._managed], dtype=np.int64)
        self._boxes = np.zeros((len(self._managed), 2, 2))
        self._awake = np.ones(len(self._managed), dtype=bool)
        for i in range(len(self._managed)):
            self._set_dormant(i)

    def spawn_agent(self, spec: AgentSpec, pose: Pose) -> None:
        if self._world is None:
            raise SimulationError("bullet backend: spawn_agent before load_scene")
        if self._agent is not None:
            raise SimulationError("bullet backend: the agent is already spawned")
        p, c = self._p, self._client
        body_height = spec.height - spec.step_height
        cylinder = p.createCollisionShape(p.GEOM_CYLINDER, radius=spec.radius, height=body_height, physicsClientId=c)
        self._agent = p.createMultiBody(
            baseMass=0.0, basePosition=[0.0, 0.0, pose.z],
            linkMasses=[0.01, 0.01, spec.mass],
            linkCollisionShapeIndices=[-1, -1, cylinder], linkVisualShapeIndices=[-1, -1, -1],
            linkPositions=[[0, 0, 0], [0, 0, 0], [0, 0, spec.step_height + body_height / 2.0]],
            linkOrientations=[[0, 0, 0, 1]] * 3, linkInertialFramePositions=[[0, 0, 0]] * 3,
            linkInertialFrameOrientations=[[0, 0, 0, 1]] * 3, linkParentIndices=[0, 1, 2],
            linkJointTypes=[p.JOINT_PRISMATIC, p.JOINT_PRISMATIC, p.JOINT_REVOLUTE],
            linkJointAxis=[[1, 0, 0], [0, 1, 0], [0, 0, 1]], physicsClientId=c,
        )
        # The agent never sleeps: sleeping static geometry only collides with awake bodies.
        p.changeDynamics(self._agent, -1, activationState=p.ACTIVATION_STATE_DISABLE_SLEEPING, physicsClientId=c)
        for link in range(3):
            p.changeDynamics(self._agent, link, linearDamping=0.0, angularDamping=0.0,
                             jointDamping=0.0, physicsClientId=c)
            p.changeVisualShape(self._agent, link, rgbaColor=[0, 0, 0, 0], physicsClientId=c)
        p.changeDynamics(self._agent, 2, lateralFriction=spec.friction, spinningFriction=0.0,
                         rollingFriction=0.0, physicsClientId=c)
        force = MOTOR_HEADROOM * (spec.mass + 0.02) * spec.max_linear_accel
        torque = MOTOR_HEADROOM * 0.5 * spec.mass * spec.radius**2 * spec.max_angular_accel
        self._forces = [force, force, torque]
        self._spec = spec
        self._base_z = pose.z
        self.set_agent_pose(pose)

    def close(self) -> None:
        if self._gl is not None:
            self._gl, gl = None, self._gl
            gl.release()
        if self._client is not None:
            try:
                self._p.disconnect(physicsClientId=self._client)
            finally:
                self._client = None
                self._agent = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    # -- agent -------------------------------------------------------------------------

    def _require_agent(self) -> int:
        if self._agent is None:
            raise SimulationError("bullet backend: no agent (call spawn_agent first, and not after close)")
        return self._agent

    def set_agent_pose(self, pose: Pose) -> None:
        agent, p, c = self._require_agent(), self._p, self._client
        if pose.z != self._base_z:
            p.resetBasePositionAndOrientation(agent, [0.0, 0.0, pose.z], [0, 0, 0, 1], physicsClientId=c)
            self._base_z = pose.z
        for joint, value in enumerate((pose.x, pose.y, pose.yaw)):
            p.resetJointState(agent, joint, value, 0.0, physicsClientId=c)
        self._pose = None
        self._command((0.0, 0.0, 0.0))
        self._contacts_fresh = False
        self._update_dormancy(pose.x, pose.y, 0.0, 0.0)

    def agent_pose(self) -> Pose:
        agent = self._require_agent()
        if self._pose is None:  # read once per change: a step asks for it several times
            states = self._p.getJointStates(agent, (0, 1, 2), physicsClientId=self._client)
            self._pose = Pose(states[0][0], states[1][0], self._base_z, math.remainder(states[2][0], 2 * math.pi))
        return self._pose

    def _command(self, velocity: Sequence[float]) -> None:
        self._p.setJointMotorControlArray(
            self._agent, (0, 1, 2), self._p.VELOCITY_CONTROL, targetVelocities=velocity,
            forces=self._forces, physicsClientId=self._client,
        )

    def move(self, velocities: np.ndarray) -> MoveResult:
        agent, p, c = self._require_agent(), self._p, self._client
        velocities = np.asarray(velocities, dtype=np.float64).reshape(-1, 3)
        deepest: dict[int, tuple] = {}
        dt = self.physics.control_dt
        travel = float(np.hypot(velocities[:, 0], velocities[:, 1]).sum()) * dt
        turn_only = travel == 0.0 and bool(np.any(velocities[:, 2]))
        if len(self._managed):
            states = p.getJointStates(agent, (0, 1), physicsClientId=c)
            self._update_dormancy(states[0][0], states[1][0], travel, len(velocities) * dt,
                                  agent_reach=not turn_only)
        if self._can_coarsen(travel, turn_only):
            self.coarse_moves += 1
            return self._glide(velocities)
        self._pose = None
        motors, step, joint_states, read = p.setJointMotorControlArray, p.stepSimulation, p.getJointStates, self._contact_points
        control, forces, joints = p.VELOCITY_CONTROL, self._forces, (0, 1, 2)
        rows = []
        for velocity in velocities.tolist():  # the per-tick loop of every physics move: kept lean
            motors(agent, joints, control, targetVelocities=velocity, forces=forces, physicsClientId=c)
            step(physicsClientId=c)
            x, y, yaw = joint_states(agent, joints, physicsClientId=c)
            rows.append((x[0], y[0], yaw[0]))
            _keep_deepest(deepest, read())
        self._command((0.0, 0.0, 0.0))
        self._contacts_fresh = True
        return MoveResult(np.array(rows, dtype=np.float64).reshape(-1, 3), _contacts(deepest))

    def _glide(self, velocities: np.ndarray) -> MoveResult:
        """A move along its speed profile without physics steps (see the module docstring):
        the joints end where the motors' semi-implicit ticks would put them, moving at the
        last tick's velocity."""
        p, c, agent = self._p, self._client, self._agent
        start = [state[0] for state in p.getJointStates(agent, (0, 1, 2), physicsClientId=c)]
        poses = start + np.cumsum(velocities, axis=0) * self.physics.control_dt
        for joint in range(3):
            p.resetJointState(agent, joint, poses[-1, joint], velocities[-1, joint], physicsClientId=c)
        self._pose = None
        self._command((0.0, 0.0, 0.0))
        self._contacts_fresh = False
        self._detect()
        deepest: dict[int, tuple] = {}
        _keep_deepest(deepest, self._contact_points())
        return MoveResult(poses, _contacts(deepest))

    def _can_coarsen(self, travel: float, turn_only: bool) -> bool:
        """Whether a motion may glide (see the module docstring).

        Only the agent may be dynamic, and it must not be penetrating anything; then a
        turn in place qualifies, and so does a motion of ``travel`` metres when no other
        body overlaps a probe as tall as the collider and ``travel + COARSE_MARGIN`` wider.
        """
        if self.physics.substeps == 1 or np.any(self._awake):
            return False
        tolerance = self.physics.contact_tolerance
        self._detect()
        if any(depth > tolerance for _, depth, _ in self._contact_points()):
            return False
        if turn_only:
            return True
        p, c, agent, spec = self._p, self._client, self._agent, self._spec
        reach = math.ceil((travel + COARSE_MARGIN) * 100.0) / 100.0
        probe = self._probes.get(reach)
        if probe is None:
            probe = p.createCollisionShape(p.GEOM_CYLINDER, radius=spec.radius + reach,
                                           height=spec.height - spec.step_height, physicsClientId=c)
            self._probes[reach] = probe
        centre = p.getLinkState(agent, 2, physicsClientId=c)[0]
        half = spec.radius + reach
        nearby = p.getOverlappingObjects([centre[0] - half, centre[1] - half, -1e9],
                                         [centre[0] + half, centre[1] + half, 1e9], physicsClientId=c) or ()
        for uid in sorted({uid for uid, _ in nearby if uid != agent}):
            if p.getClosestPoints(-1, uid, 0.0, collisionShapeA=probe, collisionShapePositionA=centre,
                                  physicsClientId=c):
                return False
        return True

    def contacts(self) -> list[Contact]:
        self._require_agent()
        self._detect()
        return [Contact(prim_index=prim, position=tuple(point[6]), normal=tuple(point[7]), depth=depth)
                for prim, depth, point in self._contact_points()]

    def _detect(self) -> None:
        """Run the collision detection unless the contacts are current."""
        if not self._contacts_fresh:
            self._p.performCollisionDetection(physicsClientId=self._client)
            self._contacts_fresh = True

    def _contact_points(self) -> list[tuple]:
        """``(prim index, depth, raw point)`` of the agent's contacts within the tolerance."""
        points = self._p.getContactPoints(bodyA=self._agent, physicsClientId=self._client)
        if not points:
            return []
        tolerance, lut = self.physics.contact_tolerance, self._lut
        found = []
        for point in points:
            distance = point[8]
            if distance > tolerance:
                continue
            found.append((int(lut[point[2] + 1]) if point[2] + 1 < len(lut) else -1, max(0.0, -distance), point))
        return found

    def reset_objects(self) -> None:
        if self._world is None:
            raise SimulationError("bullet backend: reset_objects before load_scene")
        for uid, (position, orientation) in self._world.movable.items():
            self._p.resetBasePositionAndOrientation(uid, position, orientation, physicsClientId=self._client)
            self._p.resetBaseVelocity(uid, [0, 0, 0], [0, 0, 0], physicsClientId=self._client)
        for i in range(len(self._managed)):
            self._set_dormant(i)
        self._gl_stale[:] = True
        self._contacts_fresh = False

    # -- dormant movables --------------------------------------------------------------

    def _set_dormant(self, i: int) -> None:
        """Freeze managed movable ``i`` where it lies: static, colliding only with dynamic bodies."""
        p, c, uid = self._p, self._client, int(self._managed[i])
        if self._awake[i]:
            p.resetBaseVelocity(uid, [0, 0, 0], [0, 0, 0], physicsClientId=c)
            p.changeDynamics(uid, -1, mass=0.0, physicsClientId=c)
            p.setCollisionFilterGroupMask(uid, -1, GROUP_DORMANT, GROUP_DYNAMIC, physicsClientId=c)
            p.changeDynamics(uid, -1, activationState=p.ACTIVATION_STATE_SLEEP, physicsClientId=c)
            self._awake[i] = False
            if len(self._gl_row):
                self._gl_stale[self._gl_row[i]] = True  # it may have moved while awake
        low, high = p.getAABB(uid, -1, physicsClientId=c)
        self._boxes[i] = (low[:2], high[:2])
        self._box_gaps = None

    def _wake(self, i: int) -> None:
        p, c, uid = self._p, self._client, int(self._managed[i])
        mass, inertia = self._world.dynamics[uid]
        p.setCollisionFilterGroupMask(uid, -1, GROUP_DYNAMIC, -1, physicsClientId=c)
        p.changeDynamics(uid, -1, mass=mass, localInertiaDiagonal=inertia,
                         activationState=p.ACTIVATION_STATE_WAKE_UP, physicsClientId=c)
        self._awake[i] = True

    def _update_dormancy(self, x: float, y: float, travel: float, duration: float, *,
                         agent_reach: bool = True) -> None:
        """Wake every movable that a motion of ``travel`` metres could reach; freeze idle ones.

        With ``agent_reach=False`` (a turn in place, which pushes nothing) the agent wakes
        nothing: only moving movables and what they may reach stay or become awake.
        """
        if not len(self._managed):
            return
        asleep = not self._awake.any()
        if asleep and not agent_reach:
            return  # nothing moves and the agent reaches nothing: nothing to wake or freeze
        p, c = self._p, self._client
        reach = np.full(len(self._managed), travel)
        moving = np.zeros(len(self._managed), dtype=bool)
        for i in np.flatnonzero(self._awake):
            uid = int(self._managed[i])
            low, high = p.getAABB(uid, -1, physicsClientId=c)
            self._boxes[i] = (low[:2], high[:2])
            self._box_gaps = None
            linear, angular = p.getBaseVelocity(uid, physicsClientId=c)
            speed = math.hypot(*linear)
            moving[i] = speed > REST_SPEED or math.hypot(*angular) > REST_SPIN or abs(linear[2]) > REST_SPEED
            reach[i] += speed * duration
        low, high = self._boxes[:, 0], self._boxes[:, 1]
        half = self._spec.radius + travel if self._spec is not None else travel
        agent_gap = np.linalg.norm(np.maximum(0.0, np.maximum(low - [x + half, y + half], [x - half, y - half] - high)), axis=1)
        if not agent_reach:
            agent_gap = np.full(len(self._managed), np.inf)
        if asleep and agent_gap.min() > WAKE_MARGIN:
            return  # all asleep and out of the agent's reach: nothing to wake or freeze
        if self._box_gaps is None:  # they only change while something is awake
            self._box_gaps = np.linalg.norm(
                np.maximum(0.0, np.maximum(low[None] - high[:, None], low[:, None] - high[None])), axis=2)
        gaps = self._box_gaps
        wake = self._within_reach(agent_gap, gaps, reach, moving, WAKE_MARGIN)
        keep = self._within_reach(agent_gap, gaps, reach, moving, WAKE_MARGIN + DORMANT_HYSTERESIS)
        for i in np.flatnonzero(wake & ~self._awake):
            self._wake(int(i))
        for i in np.flatnonzero(self._awake & ~moving & ~keep):
            self._set_dormant(int(i))

    @staticmethod
    def _within_reach(agent_gap: np.ndarray, gaps: np.ndarray, reach: np.ndarray, moving: np.ndarray,
                      margin: float) -> np.ndarray:
        """Movables the agent or a moving movable may touch, closed over pushing chains."""
        near = gaps <= (reach + margin)[:, None]  # row i: what movable i may touch
        needed = agent_gap <= margin
        sources = needed | moving
        while True:
            new = np.any(near[sources], axis=0) & ~needed
            if not new.any():
                return needed
            needed = needed | new
            sources = sources | new

    # -- perception --------------------------------------------------------------------

    def _projection(self, request: CameraRequest) -> list[float]:
        key = (request.width, request.height, request.hfov_deg, request.near, request.far)
        matrix = self._projections.get(key)
        if matrix is None:
            half_v = math.tan(math.radians(request.hfov_deg) / 2.0) * request.height / request.width
            matrix = self._p.computeProjectionMatrixFOV(
                math.degrees(2.0 * math.atan(half_v)), request.width / request.height,
                request.near, request.far, physicsClientId=self._client,
            )
            self._projections[key] = matrix
        return matrix

    def render(self, requests: Sequence[CameraRequest]) -> list[CameraFrame]:
        if self._world is None:
            raise SimulationError("bullet backend: render before load_scene")
        if self._gl is not None:
            self._sync_gl_poses()
            return self._gl.render(requests)
        p, c = self._p, self._client
        frames = []
        for request in requests:
            flags = 0 if request.instance else p.ER_NO_SEGMENTATION_MASK
            _, _, rgba, zbuffer, segmentation = p.getCameraImage(
                request.width, request.height,
                view_matrix(request.position, request.yaw, request.pitch), self._projection(request),
                renderer=p.ER_TINY_RENDERER, flags=flags, shadow=0,
                lightDirection=LIGHT_DIRECTION, lightColor=(1.0, 1.0, 1.0),
                lightAmbientCoeff=LIGHT_AMBIENT, lightDiffuseCoeff=LIGHT_DIFFUSE,
                lightSpecularCoeff=LIGHT_SPECULAR, physicsClientId=c,
            )
            frame = CameraFrame()
            shape = (request.height, request.width)
            if request.rgb:
                frame.rgb = rgb_of(np.reshape(rgba, (*shape, 4)))
            if request.depth:
                z = np.reshape(zbuffer, shape).astype(np.float32, copy=False)
                near, far = np.float32(request.near), np.float32(request.far)
                frame.depth = (far * near) / (far - (far - near) * z)
            if request.instance:
                ids = np.reshape(segmentation, shape).astype(np.int64, copy=False)
                ids = np.where((ids >= -1) & (ids < len(self._lut) - 1), ids, -1)
                frame.instance = self._lut[ids + 1]
            frames.append(frame)
        return frames

    def _sync_gl_poses(self) -> None:
        """Hand the GL renderer the movables' poses, reading from the physics only those that
        may have moved since the last frame: awake ones, and those frozen or reset since.
        (A movable moves only while awake, or when reset.)"""
        if len(self._gl_row) and self._awake.any():
            self._gl_stale[self._gl_row[self._awake]] = True
        elif not self._gl_stale.any():
            return  # nothing moved since the last frame
        rows = np.flatnonzero(self._gl_stale)
        if len(rows):
            self._gl_matrices[rows] = self._body_matrices([self._gl_bodies[row] for row in rows])
            self._gl_stale[:] = False
            self._gl.set_poses(self._gl_matrices)

    def _body_matrices(self, uids: Sequence[int]) -> np.ndarray:
        """(B, 4, 4) world transforms of the bodies ``uids``, as the physics has them now."""
        p, c = self._p, self._client
        poses = [p.getBasePositionAndOrientation(uid, physicsClientId=c) for uid in uids]
        matrices = np.tile(np.eye(4), (len(poses), 1, 1))
        if poses:  # on floats: a step syncs a few awake bodies, where numpy's per-call cost dominates
            matrices[:, :3, 3] = [position for position, _ in poses]
            matrices[:, :3, :3] = [
                ((1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)),
                 (2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)),
                 (2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)))
                for _, (x, y, z, w) in poses]
        return matrices

    def cast_rays(self, origins: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self._world is None:
            raise SimulationError("bullet backend: cast_rays before load_scene")
        origins = np.asarray(origins, dtype=np.float64).reshape(-1, 3)
        ends = np.asarray(ends, dtype=np.float64).reshape(-1, 3)
        fraction = np.ones(len(origins))
        prim = np.full(len(origins), -1, dtype=np.int32)
        for start in range(0, len(origins), MAX_RAYS_PER_BATCH):
            stop = start + MAX_RAYS_PER_BATCH
            hits = self._p.rayTestBatch(
                origins[start:stop].tolist(), ends[start:stop].tolist(), physicsClientId=self._client
            )
            for i, hit in enumerate(hits, start):
                uid = hit[0]
                if uid < 0 or uid == self._agent:
                    continue
                fraction[i] = hit[2]
                prim[i] = self._lut[uid + 1] if uid + 1 < len(self._lut) else -1
        return fraction, prim
