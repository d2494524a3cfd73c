"""Building a PyBullet world from a :class:`~vlnverse.scene.types.Scene`.

Static geometry is exact (mass 0): a prim whose triangles bound a closed convex polyhedron
(walls, floor slabs, boxes) gets a convex collider of its vertices, which PyBullet's hull
reproduces exactly and which collides far cheaper than a triangle mesh; every other static
prim keeps a concave triangle-mesh collider. Each labelled movable object becomes one
dynamic body (convex hull collider, one visual link per colour). Prims sharing a semantic
instance and colour are merged into one visual body, so contacts and segmentation resolve
to instances while the number of bodies stays small; a group's visual chunks share
bodies with its colliders.

Building takes two steps: :func:`world_plan` turns the scene into plain data (the convex
decomposition, the flat-shaded meshes, the masses), which :func:`cached_world_plan` keeps
per scene in memory and on disk; :func:`build_world` creates a plan's bodies in a client.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from vlnverse.cache import ProcessMemo, cached, content_digest
from vlnverse.scene.types import Scene
from vlnverse.sim.semantics import InstanceTable

#: Triangles per PyBullet mesh shape (PyBullet caps vertices per shape).
MAX_TRIANGLES_PER_SHAPE = 8000
#: Largest prim (triangles) tested for convexity; bigger ones keep a triangle mesh.
MAX_CONVEX_TRIANGLES = 2048
#: Tolerance of the convexity test, relative to the prim's bounding-box diagonal.
CONVEX_TOLERANCE = 1e-6
#: Longest run of consecutive triangles tried as one convex piece of a non-convex prim.
MAX_PIECE_TRIANGLES = 64
#: Density used to give movable objects a mass (kg/m³ of convex-hull volume).
MOVABLE_DENSITY = 150.0
MOVABLE_MASS_RANGE = (0.5, 120.0)
#: Collision filter groups: the agent and awake movables, static geometry, dormant movables
#: (PyBullet pairs two bodies when either group matches the other's mask, so static geometry masks dormant out).
GROUP_DYNAMIC, GROUP_STATIC, GROUP_DORMANT = 1, 2, 4
#: Static geometry pairs with neither dormant movables nor other static geometry.
STATIC_MASK = ~(GROUP_DORMANT | GROUP_STATIC)
#: World plans a process keeps in memory (the worlds of one scene share one).
PLANS_KEPT = 4
_plans = ProcessMemo(PLANS_KEPT)


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


def _weld(points: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """Points closer than ``tol`` (on a grid of that step) welded: the index of each weld
    group's first point, and each point's group."""
    keys = np.round((points - points.min(axis=0)) / max(tol, 1e-12)).astype(np.int64)
    base = int(keys.max()) + 1
    if base ** 3 >= 2**62:  # too fine a grid for one integer code per point
        _, first, group = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    else:
        codes = (keys[:, 0] * base + keys[:, 1]) * base + keys[:, 2]
        _, first, group = np.unique(codes, return_index=True, return_inverse=True)
    return first, group.reshape(-1)


def convex_vertices(triangles: np.ndarray, tolerance: float = CONVEX_TOLERANCE) -> np.ndarray | None:
    """The distinct vertices of ``triangles`` if they bound a closed convex polyhedron, else None.

    Closed: after welding vertices closer than the tolerance, every undirected edge is shared
    by exactly two triangles. Convex: every vertex lies on or on one side of every
    non-degenerate face's plane (within ``tolerance`` × bounding-box diagonal), and the
    vertices span a volume. The convex hull of the returned vertices is then the solid itself.
    """
    tris = np.asarray(triangles, dtype=np.float64)
    if not 4 <= len(tris) <= MAX_CONVEX_TRIANGLES:
        return None
    points = tris.reshape(-1, 3)
    size = float(np.linalg.norm(points.max(axis=0) - points.min(axis=0)))
    if size <= 0.0:
        return None
    tol = tolerance * size
    first, weld = _weld(points, tol)
    weld = weld.reshape(-1, 3)
    vertices = points[first]
    if len(vertices) < 4 or np.any((weld[:, 0] == weld[:, 1]) | (weld[:, 1] == weld[:, 2]) | (weld[:, 0] == weld[:, 2])):
        return None
    edges = np.sort(np.concatenate([weld[:, [0, 1]], weld[:, [1, 2]], weld[:, [2, 0]]]), axis=1)
    _, counts = np.unique(edges[:, 0] * len(vertices) + edges[:, 1], return_counts=True)
    if np.any(counts != 2):
        return None
    normals = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
    length = np.linalg.norm(normals, axis=1)
    valid = length > (tol * size)
    if not np.any(valid):
        return None
    normals = normals[valid] / length[valid, None]
    offsets = np.einsum("ij,ij->i", normals, tris[valid, 0])
    for start in range(0, len(normals), 256):
        signed = normals[start : start + 256] @ vertices.T - offsets[start : start + 256, None]
        if np.any((signed.max(axis=1) > tol) & (signed.min(axis=1) < -tol)):
            return None
    centred = vertices - vertices.mean(axis=0)
    if np.linalg.svd(centred, compute_uv=False)[-1] <= tol:
        return None
    return vertices


def convex_parts(triangles: np.ndarray, tolerance: float = CONVEX_TOLERANCE) -> tuple[list[np.ndarray], np.ndarray]:
    """Split a prim into closed convex pieces and the triangles that are in none.

    The whole prim is tried first; otherwise consecutive runs of triangles (authoring tools
    and procedural generators write a box-built wall or floor one box after another) are
    closed off as soon as they bound a closed convex polyhedron. Each piece's vertex set has
    that piece as its exact hull. Returns the vertex sets and a boolean mask of the rest.
    """
    tris = np.asarray(triangles, dtype=np.float64)
    rest = np.ones(len(tris), dtype=bool)
    if len(tris) < 4:
        return [], rest
    whole = convex_vertices(tris, tolerance)
    if whole is not None:
        return [whole], np.zeros(len(tris), dtype=bool)
    points = tris.reshape(-1, 3)
    size = float(np.linalg.norm(points.max(axis=0) - points.min(axis=0)))
    weld = _weld(points, tolerance * size)[1].reshape(-1, 3).tolist()
    hulls: list[np.ndarray] = []
    start = 0
    while start < len(tris):
        counts: dict[tuple[int, int], int] = {}
        unpaired = 0
        found = None
        for end in range(start, min(len(tris), start + MAX_PIECE_TRIANGLES)):
            a, b, c = weld[end]
            for edge in ((a, b), (b, c), (c, a)):
                key = (edge[0], edge[1]) if edge[0] < edge[1] else (edge[1], edge[0])
                count = counts.get(key, 0) + 1
                counts[key] = count
                unpaired += -1 if count == 2 else (1 if count in (1, 3) else 0)
            if unpaired == 0 and end - start >= 3:
                found = convex_vertices(tris[start : end + 1], tolerance)
                if found is not None:
                    hulls.append(found)
                    rest[start : end + 1] = False
                    start = end + 1
                    break
        if found is None:
            start += 1
    return hulls, rest


def _prim_triangles(scene: Scene, prims: list[int]) -> np.ndarray:
    parts = [scene.triangles[scene.prims[i].triangle_slice] for i in prims]
    parts = [p for p in parts if len(p)]
    return np.concatenate(parts) if parts else np.zeros((0, 3, 3))


@dataclass(frozen=True)
class VisualMesh:
    """A flat-shaded visual shape: unshared vertices, indices, normals and an sRGB colour."""

    vertices: np.ndarray
    indices: np.ndarray
    normals: np.ndarray
    rgba: tuple[float, float, float, float]


@dataclass(frozen=True)
class StaticBody:
    """A sleeping static body at ``position`` with a collider, a visual chunk or both.

    Attributes:
        hull: Convex collider: its vertices relative to ``position`` (PyBullet takes their hull).
        trimesh: Concave collider: (vertices, indices) of a triangle mesh.
    """

    position: np.ndarray
    prim: int
    hull: np.ndarray | None = None
    trimesh: tuple[np.ndarray, np.ndarray] | None = None
    visual: VisualMesh | None = None


@dataclass(frozen=True)
class MovableBody:
    """A dynamic body centred at ``centre``: a convex-hull collider (``hull`` points, if the
    object collides) and one visual per colour (the first on the base, the others on fixed links)."""

    centre: np.ndarray
    prim: int
    mass: float
    hull: np.ndarray | None
    visuals: tuple[VisualMesh, ...]


@dataclass(frozen=True)
class WorldPlan:
    """Every body of a scene's PyBullet world, as plain data (cached per scene: it takes the
    convex decomposition, about half the time of building a world)."""

    statics: tuple[StaticBody, ...]
    movables: tuple[MovableBody, ...]


def cached_world_plan(scene: Scene, table: InstanceTable) -> WorldPlan:
    """:func:`world_plan` of ``scene``, shared by the worlds of one process and kept in the
    disk cache (:mod:`vlnverse.cache`), keyed by everything the plan is made from."""
    key = content_digest(scene.triangles, scene.prims, [o.movable for o in scene.objects], table.prim_instance)
    return _plans.get(key, lambda: cached("bullet-world-plan", (key,), lambda: world_plan(scene, table)))


def world_plan(scene: Scene, table: InstanceTable) -> WorldPlan:
    """The bodies of ``scene``: static groups (see the module docs), then movable objects."""
    statics: list[StaticBody] = []
    for (_instance, colour, collides), prims in sorted(_triangle_groups(scene, table).items()):
        statics.extend(_static_group(scene, prims, colour, collides))
    movables = []
    for object_index, obj in enumerate(scene.objects):
        if obj.movable:
            prims = [i for i, pr in enumerate(scene.prims) if pr.object_index == object_index and pr.movable]
            body = _movable(scene, prims)
            if body is not None:
                movables.append(body)
    return WorldPlan(tuple(statics), tuple(movables))


def _static_colliders(scene: Scene, prims: list[int]) -> list[tuple[np.ndarray, np.ndarray | None, tuple | None]]:
    """Colliders of a static group as (body position, hull, trimesh): one convex collider per
    closed convex piece, concave triangle meshes for the rest."""
    hulls: list[np.ndarray] = []
    rest = []
    for i in prims:
        triangles = scene.triangles[scene.prims[i].triangle_slice]
        pieces, mask = convex_parts(triangles)
        hulls.extend(pieces)
        rest.append(triangles[mask])
    colliders = []
    for vertices in hulls:
        origin = (vertices.min(axis=0) + vertices.max(axis=0)) / 2.0
        colliders.append((origin, vertices - origin, None))
    tris = np.concatenate(rest)
    for start in range(0, len(tris), MAX_TRIANGLES_PER_SHAPE):
        vertices, indices, _normals = flat_mesh(tris[start : start + MAX_TRIANGLES_PER_SHAPE])
        colliders.append((np.zeros(3), None, (vertices, indices)))
    return colliders


def _static_group(scene: Scene, prims: list[int], colour: tuple, collides: bool) -> list[StaticBody]:
    """Static bodies of one (instance, colour) group: visual chunks share bodies with colliders.

    Static bodies are plain rigid bodies (maximal coordinates), asleep, and as few as
    possible: PyBullet steps every multibody and refreshes every awake body's bounding box
    each physics step, which would make the cost of a step grow with the size of the scene.
    """
    colliders = _static_colliders(scene, prims) if collides else []
    tris = _prim_triangles(scene, prims)
    chunks = [tris[start : start + MAX_TRIANGLES_PER_SHAPE] for start in range(0, len(tris), MAX_TRIANGLES_PER_SHAPE)]
    rgba = (*linear_to_srgb(colour).tolist(), 1.0)
    bodies = []
    for k in range(max(len(colliders), len(chunks))):
        position, hull, trimesh = colliders[k] if k < len(colliders) else (np.zeros(3), None, None)
        visual = VisualMesh(*flat_mesh(chunks[k], position), rgba) if k < len(chunks) else None
        bodies.append(StaticBody(position, prims[0], hull, trimesh, visual))
    return bodies


def _movable(scene: Scene, prims: list[int]) -> MovableBody | None:
    tris = _prim_triangles(scene, prims)
    if not len(tris):
        return None
    points = tris.reshape(-1, 3)
    centre = (points.min(axis=0) + points.max(axis=0)) / 2.0
    colliding = [i for i in prims if scene.prims[i].collides]
    hull_points = _prim_triangles(scene, colliding).reshape(-1, 3) - centre if colliding else None
    mass = _hull_mass(hull_points) if hull_points is not None else MOVABLE_MASS_RANGE[0]
    by_colour: dict[tuple, list[int]] = defaultdict(list)
    for i in prims:
        by_colour[tuple(round(float(c), 3) for c in scene.prims[i].color)].append(i)
    visuals = tuple(
        VisualMesh(*flat_mesh(_prim_triangles(scene, members)[:MAX_TRIANGLES_PER_SHAPE], centre),
                   (*linear_to_srgb(colour).tolist(), 1.0))
        for colour, members in sorted(by_colour.items())
    )
    return MovableBody(centre, prims[0], mass, hull_points, visuals)


def build_world(p, client: int, plan: WorldPlan, static_visuals: bool = True) -> BulletWorld:
    """Create the bodies of ``plan`` in the PyBullet client ``client`` (``p`` is the module).

    Without ``static_visuals`` the static bodies get no visual shape (about half the time of
    building a world): only PyBullet's TinyRenderer draws them, and a visual shape changes
    nothing in the physics. Movable bodies keep theirs, which shape their links."""
    world = BulletWorld()
    for body in plan.statics:
        _create_static(p, client, body, world, static_visuals)
    for body in plan.movables:
        _create_movable(p, client, body, world)
    return world


def _visual_shape(p, client: int, mesh: VisualMesh) -> int:
    # PyBullet reads Python lists about 6x faster than numpy arrays.
    return p.createVisualShape(p.GEOM_MESH, vertices=mesh.vertices.tolist(), indices=mesh.indices.tolist(),
                               normals=mesh.normals.tolist(), rgbaColor=list(mesh.rgba), physicsClientId=client)


def _create_static(p, client: int, body: StaticBody, world: BulletWorld, visuals: bool) -> None:
    collision = -1
    if body.hull is not None:
        collision = p.createCollisionShape(p.GEOM_MESH, vertices=body.hull.tolist(), physicsClientId=client)
    elif body.trimesh is not None:
        vertices, indices = body.trimesh
        collision = p.createCollisionShape(p.GEOM_MESH, vertices=vertices.tolist(), indices=indices.tolist(),
                                           flags=p.GEOM_FORCE_CONCAVE_TRIMESH, physicsClientId=client)
    visual = _visual_shape(p, client, body.visual) if visuals and body.visual is not None else -1
    uid = p.createMultiBody(0.0, collision, visual, basePosition=body.position.tolist(),
                            useMaximalCoordinates=True, physicsClientId=client)
    # Asleep, a static body's bounding box is not refreshed every physics step; the
    # awake agent still collides with it, and static bodies are never woken by contact.
    p.changeDynamics(uid, -1, activationState=p.ACTIVATION_STATE_SLEEP, physicsClientId=client)
    if collision >= 0:
        # Static pieces never pair with each other (touching convex pieces would
        # otherwise cost a narrow-phase test per pair every tick).
        p.setCollisionFilterGroupMask(uid, -1, GROUP_STATIC, STATIC_MASK, physicsClientId=client)
    world.body_prim[uid] = body.prim


def _create_movable(p, client: int, body: MovableBody, world: BulletWorld) -> None:
    visuals = [_visual_shape(p, client, mesh) for mesh in body.visuals]
    collision = -1
    if body.hull is not None:
        collision = p.createCollisionShape(p.GEOM_MESH, vertices=body.hull.tolist(), physicsClientId=client)
    extra = len(visuals) - 1
    uid = p.createMultiBody(
        baseMass=body.mass, baseCollisionShapeIndex=collision, baseVisualShapeIndex=visuals[0],
        basePosition=body.centre.tolist(),
        linkMasses=[1e-3] * extra, linkCollisionShapeIndices=[-1] * extra,
        linkVisualShapeIndices=visuals[1:], linkPositions=[[0, 0, 0]] * extra,
        linkOrientations=[[0, 0, 0, 1]] * extra, linkInertialFramePositions=[[0, 0, 0]] * extra,
        linkInertialFrameOrientations=[[0, 0, 0, 1]] * extra, linkParentIndices=[0] * extra,
        linkJointTypes=[p.JOINT_FIXED] * extra, linkJointAxis=[[0, 0, 1]] * extra,
        useMaximalCoordinates=True, physicsClientId=client,
    )
    p.changeDynamics(uid, -1, activationState=p.ACTIVATION_STATE_ENABLE_SLEEPING, physicsClientId=client)
    world.body_prim[uid] = body.prim
    world.movable[uid] = (tuple(body.centre.tolist()), (0.0, 0.0, 0.0, 1.0))
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
