"""The backend protocol: primitive simulation operations, and the backend registry.

A backend owns one physics world and renderer. It knows nothing of actions, episodes or
the Strict/Slide/Tel-Hop rules; those live once in :class:`vlnverse.sim.Simulator`,
so every backend scores an agent the same way.

Lifecycle::

    backend = create_backend("bullet", physics)   # connect; nothing loaded yet
    backend.load_scene(scene)                     # once: static + movable geometry
    backend.spawn_agent(agent_spec, pose)         # once: the agent body at a pose
    (backend.move(...) | backend.set_agent_pose(...) | backend.agent_pose()
     | backend.contacts() | backend.render(...) | backend.cast_rays(...)
     | backend.reset_objects())*
    backend.close()                               # idempotent; frees everything

Calls out of this order raise :class:`vlnverse.errors.SimulationError`.

Conventions: world Z-up, metres, yaw about +Z; velocities are world-frame ``(vx, vy, wz)``
(rad/s); images are row-major top-to-bottom; geometry is identified by its index in
``Scene.prims`` (a representative prim of its semantic instance, see
:mod:`vlnverse.sim.semantics`), -1 for none.

Mapping to Isaac Sim (PhysX): ``move`` = per-physics-step rigid-body/articulation velocity
targets + ``world.step(render=False)``; ``contacts`` = PhysX contact reports; ``render`` =
replicator ``rgb`` / ``distance_to_image_plane`` / ``instance_id_segmentation``
annotators; ``cast_rays`` = PhysX scene-query raycasts; ``set_agent_pose`` = a world-pose
write with zeroed velocities.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from vlnverse.errors import ConfigError, DependencyNotInstalled, RegistryError
from vlnverse.registry import Registry
from vlnverse.scene.types import Scene
from vlnverse.sim.agent import AgentSpec
from vlnverse.sim.physics import PhysicsConfig
from vlnverse.sim.types import CameraFrame, CameraRequest, Contact, Pose

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class MoveResult:
    """The outcome of :meth:`Backend.move`.

    Attributes:
        poses: (T, 3) reached ``(x, y, yaw)`` at the end of each control tick.
        contacts: Agent contacts seen at the end of any tick (deepest per prim).
    """

    poses: np.ndarray
    contacts: list[Contact] = field(default_factory=list)


@runtime_checkable
class Backend(Protocol):
    """Primitive operations every simulator backend provides (see the module docs)."""

    name: str
    physics: PhysicsConfig

    @classmethod
    def available(cls) -> tuple[bool, str]:
        """Whether this backend can run here, and why not (used by ``"auto"``)."""
        ...

    def load_scene(self, scene: Scene) -> None:
        """Build the world from ``scene``: static geometry as exact triangle meshes,
        movable objects as dynamic bodies, with display colours for rendering."""
        ...

    def spawn_agent(self, spec: AgentSpec, pose: Pose) -> None:
        """Create the agent body (an upright cylinder that cannot tip) at ``pose``."""
        ...

    def set_agent_pose(self, pose: Pose) -> None:
        """Teleport the agent to ``pose`` with zero velocity (no physics in transit)."""
        ...

    def agent_pose(self) -> Pose:
        """The agent's current pose."""
        ...

    def move(self, velocities: np.ndarray) -> MoveResult:
        """Drive the agent with one world-frame ``(vx, vy, wz)`` target per control tick.

        Each target is held for ``physics.substeps`` physics steps of
        ``1 / physics.physics_hz`` seconds, under the agent's force limits, so obstacles
        block and deflect it. Stops commanding (zero velocity) afterwards.
        """
        ...

    def contacts(self) -> list[Contact]:
        """The agent's current contacts with scene geometry (penetrating ones included)."""
        ...

    def render(self, requests: Sequence[CameraRequest]) -> list[CameraFrame]:
        """Render each camera request (RGB, metric depth, prim-index segmentation)."""
        ...

    def cast_rays(self, origins: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """First hits of the segments ``origins[i] → ends[i]`` (N, 3), ignoring the agent.

        Returns:
            ``(fraction, prim_index)``: hit fraction along each segment (1.0 for no
            hit) and the prim index hit (-1 for none).
        """
        ...

    def reset_objects(self) -> None:
        """Put movable objects back where the scene placed them, at rest."""
        ...

    def close(self) -> None:
        """Release the world; safe to call twice."""
        ...


BACKENDS: Registry[type] = Registry("simulator backend")
BACKENDS.register("bullet", "vlnverse.sim.backends.bullet:BulletBackend")
BACKENDS.register("isaac", "vlnverse.sim.backends.isaac:IsaacBackend")

#: Order in which ``"auto"`` tries backends: the full-fidelity one first.
AUTO_ORDER = ("isaac", "bullet")


def backend_class(name: str) -> type:
    """The backend class registered as ``name`` (imports it)."""
    return BACKENDS.get(name)


def resolve_backend(name: str) -> str:
    """Resolve ``"auto"`` to the first available backend; check other names exist.

    ``"auto"`` prefers Isaac Sim and falls back to the embedded PyBullet backend,
    logging why.

    Raises:
        ConfigError: Unknown name, or no available backend.
    """
    if name != "auto":
        if name not in BACKENDS:
            raise ConfigError(f"unknown backend {name!r}; valid: auto, {', '.join(BACKENDS.names())}")
        return name
    reasons = []
    for candidate in AUTO_ORDER:
        try:
            ok, why = backend_class(candidate).available()
        except (ImportError, DependencyNotInstalled, RegistryError) as exc:
            ok, why = False, f"cannot import: {exc}"
        if ok:
            if reasons:
                logger.info("backend 'auto' → %r (%s)", candidate, "; ".join(reasons))
            return candidate
        reasons.append(f"{candidate} unavailable: {why}")
        logger.info("backend 'auto': %s unavailable (%s); trying the next one", candidate, why)
    raise ConfigError("backend 'auto': no backend is available (" + "; ".join(reasons) + ")")


def prepare_backend(name: str) -> str:
    """Resolve ``name`` and let its backend set the process up before any scene is loaded
    (Isaac Sim starts Kit here, so the scene loader imports Kit's own ``pxr``)."""
    resolved = resolve_backend(name)
    prepare = getattr(backend_class(resolved), "prepare_process", None)
    if prepare is not None:
        prepare()
    return resolved


def require_backend(name: str) -> str:
    """Resolve ``name`` and check that its backend can run here.

    Raises:
        ConfigError: Unknown name, or the backend is not available (the message says
            what to install).
    """
    resolved = resolve_backend(name)
    ok, why = backend_class(resolved).available()
    if not ok:
        raise ConfigError(f"backend {resolved!r} is not available: {why}")
    return resolved


def create_backend(name: str, physics: PhysicsConfig, renderer: str = "auto", panorama: str = "one_pass") -> Backend:
    """Instantiate the backend ``name`` (or ``"auto"``) with ``physics`` settings.

    ``renderer`` (``"auto"``, ``"gl"``, ``"tiny"``) picks the embedded backend's camera
    renderer and ``panorama`` (``"one_pass"``, ``"direct"``) how its GL renderer draws a
    level camera rig (see :mod:`vlnverse.sim.gl.panorama`); other backends have their own
    renderer and accept only the defaults.
    """
    resolved = require_backend(name)
    cls = backend_class(resolved)
    if resolved == "bullet":
        return cls(physics, renderer=renderer, panorama=panorama)
    if renderer != "auto" or panorama != "one_pass":
        raise ConfigError(f"renderer={renderer!r}, panorama={panorama!r} apply to the 'bullet' backend; "
                          f"{resolved!r} renders itself")
    return cls(physics)
