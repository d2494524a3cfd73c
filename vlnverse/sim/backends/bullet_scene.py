"""Building a PyBullet world from a :class:`~vlnverse.scene.types.Scene`.

Static geometry becomes exact concave triangle meshes (mass 0); each labelled movable
object becomes one dynamic body (convex hull collider, one visual link per colour).
Prims sharing a semantic instance and colour are merged into one body, so contacts and
segmentation resolve to instances while the number of bodies stays small.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from vlnverse.scene.types import Scene
from vlnverse.sim.semantics import InstanceTable

#: Triangles per PyBullet mesh shape (PyBullet caps vertices per shape).
MAX_TRIANGLES_PER_SHAPE = 8000
#: Density used to give movable objects a mass (kg/m³ of convex-hull volume).
MOVABLE_DENSITY = 150.0
MOVABLE_MASS_RANGE = (0.5, 120.0)
#: Collision filter groups: the agent and awake movables, static geometry, dormant movables
#: (PyBullet pairs two bodies when either group matches the other's mask, so static geometry masks dormant out).
GROUP_DYNAMIC, GROUP_STATIC, GROUP_DORMANT = 1, 2, 4


def linear_to_srgb(rgb: np.ndarray) -> np.ndarray:
    """Encode linear RGB in [0, 1] as sRGB (the renderer writes its colours as-is)."""
    rgb = np.clip(np.asarray(rgb, dtype=np.float64), 0.0, 1.0)
    return np.where(rgb <= 0.0031308, 12.92 * rgb, 1.055 * rgb ** (1 / 2.4) - 0.055)


def flat_mesh(triangles: np.ndarray, origin: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unshared vertices, indices and per-vertex face normals for flat shading."""
    tris = np.asarray(triangles, dtype=np.float64)
    if origin is not None:
        tris = tris - origin
    normals = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
    length = np.linalg.norm(normals, axis=1, keepdims=True)
    normals = np.where(length > 1e-12, normals / np.maximum(length, 1e-12), [0.0, 0.0, 1.0])
    vertices = tris.reshape(-1, 3)
    return vertices, np.arange(len(vertices), dtype=np.int32), np.repeat(normals, 3, axis=0)


@dataclass
class BulletWorld:
    """The bodies created for a scene.

    Attributes:
        body_prim: uid → representative prim index (-1 for bodies that are not scene geometry).
        movable: uid → (position, orientation xyzw) where the scene placed it.
        dynamics: uid → (mass, local inertia diagonal) of each movable body with a collider.
    """

    body_prim: dict[int, int] = field(default_factory=dict)
    movable: dict[int, tuple[tuple[float, ...], tuple[float, ...]]] = field(default_factory=dict)
    dynamics: dict[int, tuple[float, tuple[float, ...]]] = field(default_factory=dict)

    def lookup_table(self, extra: int = 0) -> np.ndarray:
        """Array ``lut`` with ``lut[uid + 1]`` = prim index (-1 for background/unknown)."""
        size = max(self.body_prim, default=-1) + 2 + extra
        lut = np.full(size, -1, dtype=np.int32)
        for uid, prim in self.body_prim.items():
            lut[uid + 1] = prim
        return lut


def _triangle_groups(scene: Scene, table: InstanceTable) -> dict[tuple, list[int]]:
    """Static prims grouped by (instance, colour, collides)."""
    groups: dict[tuple, list[int]] = defaultdict(list)
    for index, prim in enumerate(scene.prims):
        if prim.movable and prim.object_index >= 0:
            continue
        colour = tuple(round(float(c), 3) for c in prim.color)
        groups[(int(table.prim_instance[index]), colour, bool(prim.collides))].append(index)
    return groups


def _prim_triangles(scene: Scene, prims: list[int]) -> np.ndarray:
    parts = [scene.triangles[scene.prims[i].triangle_slice] for i in prims]
    parts = [p for p in parts if len(p)]
    return np.concatenate(parts) if parts else np.zeros((0, 3, 3))


def build_world(p, client: int, scene: Scene, table: InstanceTable) -> BulletWorld:
    """Create every scene body in the PyBullet client ``client`` (``p`` is the module)."""
    world = BulletWorld()
    for (_instance, colour, collides), prims in sorted(_triangle_groups(scene, table).items()):
        tris = _prim_triangles(scene, prims)
        rgba = [*linear_to_srgb(colour).tolist(), 1.0]
        for start in range(0, len(tris), MAX_TRIANGLES_PER_SHAPE):
            chunk = tris[start : start + MAX_TRIANGLES_PER_SHAPE]
            vertices, indices, normals = flat_mesh(chunk)
            visual = p.createVisualShape(
                p.GEOM_MESH, vertices=vertices, indices=indices, normals=normals,
                rgbaColor=rgba, physicsClientId=client,
            )
            collision = -1
            if collides:
                collision = p.createCollisionShape(
                    p.GEOM_MESH, vertices=vertices, indices=indices,
                    flags=p.GEOM_FORCE_CONCAVE_TRIMESH, physicsClientId=client,
                )
            uid = p.createMultiBody(0.0, collision, visual, physicsClientId=client)
            if collides:
                p.setCollisionFilterGroupMask(uid, -1, GROUP_STATIC, ~GROUP_DORMANT, physicsClientId=client)
            world.body_prim[uid] = prims[0]
    for object_index, obj in enumerate(scene.objects):
        if obj.movable:
            prims = [i for i, pr in enumerate(scene.prims) if pr.object_index == object_index and pr.movable]
            if prims:
                _build_movable(p, client, scene, prims, world)
    return world


def _build_movable(p, client: int, scene: Scene, prims: list[int], world: BulletWorld) -> None:
    """One dynamic body: a convex-hull collider and one fixed visual link per colour."""
    tris = _prim_triangles(scene, prims)
    if not len(tris):
        return
    points = tris.reshape(-1, 3)
    centre = (points.min(axis=0) + points.max(axis=0)) / 2.0
    colliding = [i for i in prims if scene.prims[i].collides]
    hull_points = _prim_triangles(scene, colliding).reshape(-1, 3) - centre if colliding else None
    mass = _hull_mass(hull_points) if hull_points is not None else MOVABLE_MASS_RANGE[0]
    by_colour: dict[tuple, list[int]] = defaultdict(list)
    for i in prims:
        by_colour[tuple(round(float(c), 3) for c in scene.prims[i].color)].append(i)
    visuals = []
    for colour, members in sorted(by_colour.items()):
        vertices, indices, normals = flat_mesh(_prim_triangles(scene, members)[:MAX_TRIANGLES_PER_SHAPE], centre)
        visuals.append(p.createVisualShape(
            p.GEOM_MESH, vertices=vertices, indices=indices, normals=normals,
            rgbaColor=[*linear_to_srgb(colour).tolist(), 1.0], physicsClientId=client,
        ))
    collision = -1
    if hull_points is not None:
        collision = p.createCollisionShape(p.GEOM_MESH, vertices=hull_points, physicsClientId=client)
    extra = len(visuals) - 1
    uid = p.createMultiBody(
        baseMass=mass, baseCollisionShapeIndex=collision, baseVisualShapeIndex=visuals[0],
        basePosition=centre.tolist(),
        linkMasses=[1e-3] * extra, linkCollisionShapeIndices=[-1] * extra,
        linkVisualShapeIndices=visuals[1:], linkPositions=[[0, 0, 0]] * extra,
        linkOrientations=[[0, 0, 0, 1]] * extra, linkInertialFramePositions=[[0, 0, 0]] * extra,
        linkInertialFrameOrientations=[[0, 0, 0, 1]] * extra, linkParentIndices=[0] * extra,
        linkJointTypes=[p.JOINT_FIXED] * extra, linkJointAxis=[[0, 0, 1]] * extra,
        useMaximalCoordinates=True, physicsClientId=client,
    )
    p.changeDynamics(uid, -1, activationState=p.ACTIVATION_STATE_ENABLE_SLEEPING, physicsClientId=client)
    world.body_prim[uid] = prims[0]
    world.movable[uid] = (tuple(centre.tolist()), (0.0, 0.0, 0.0, 1.0))
    if collision >= 0:
        info = p.getDynamicsInfo(uid, -1, physicsClientId=client)
        world.dynamics[uid] = (float(info[0]), tuple(info[2]))


def _hull_mass(points: np.ndarray) -> float:
    from scipy.spatial import ConvexHull, QhullError

    try:
        volume = ConvexHull(points).volume
    except (QhullError, ValueError):
        extent = points.max(axis=0) - points.min(axis=0)
        volume = float(np.prod(np.maximum(extent, 0.01)))
    return float(np.clip(volume * MOVABLE_DENSITY, *MOVABLE_MASS_RANGE))
