"""The views of a level rig looked up, ray by ray, in the wide views that drew them.

Each output pixel's ray falls between four texels of a wide view (see
:func:`vlnverse.sim.gl.panorama.atlas_coordinates`). Its colour interpolates theirs
bilinearly. Its prim id and depth are those of the triangle the ray hits, never a blend:

- where the four texels show one triangle, the ray hits it (a triangle is convex): the
  depth is where the ray meets its plane;
- elsewhere (an edge between triangles), the candidates are the triangles drawn on the
  4 × 4 texels around the ray and the triangles sharing an edge with them (a sliver may
  fall between texels); each is intersected with the ray exactly (Möller-Trumbore, both
  faces, between the near and far planes) and the nearest hit wins, ties to the triangle
  first in the vertex buffer (the direct render's drawing order). A ray that hits none
  of them sees the sky if one of those texels does; otherwise it takes the plane of the
  nearest texel's triangle, a *miss* that :meth:`Reprojection.run` counts.

Rays are cast in double precision; the depth is the hit's distance along the view's axis.
The compiled kernels are :mod:`vlnverse.sim.gl.raykernel`'s.
"""

from __future__ import annotations

import numpy as np

from vlnverse.errors import SimulationError

#: Texels around a ray, each way, beyond the two it falls between: candidates come from a
#: (2 + 2·REACH)² window.
REACH = 1
#: Metres a vertex must lie beyond a frustum side for :meth:`Triangles.outside` (the GPU
#: places vertices in float32).
CULL_SLACK = 1e-3


class Triangles:
    """The scene's triangles in the vertex buffer's order, in world coordinates, kept in
    step with the movable bodies (float64: the rays are cast in double precision)."""

    def __init__(self, local: np.ndarray, rows: np.ndarray, prims: np.ndarray) -> None:
        """``local``: (T, 3, 3) vertices relative to their body; ``rows``: each triangle's
        body row (0: static); ``prims``: each triangle's prim index."""
        self._local = np.asarray(local, dtype=np.float64)
        self._rows = np.asarray(rows)
        self._moving = np.flatnonzero(self._rows > 0)
        self.prims = np.ascontiguousarray(prims, dtype=np.int32)
        self.neighbour_start, self.neighbours = edge_neighbours(self._local, self._rows)
        self._place(self._local)

    def _place(self, world: np.ndarray) -> None:
        self.vertices = np.ascontiguousarray(world)
        self.corner = np.ascontiguousarray(world[:, 0])
        self.edge1 = np.ascontiguousarray(world[:, 1] - world[:, 0])
        self.edge2 = np.ascontiguousarray(world[:, 2] - world[:, 0])
        self.normal = np.ascontiguousarray(np.cross(self.edge1, self.edge2))
        self.centroid = world.mean(axis=1)

    def set_poses(self, matrices: np.ndarray) -> None:
        """World transforms (B, 4, 4) of the movable bodies (row ``b + 1`` is body ``b``)."""
        if not len(self._moving):
            return
        world = self._local.copy()
        m = np.asarray(matrices, dtype=np.float64)[self._rows[self._moving] - 1]  # (M, 4, 4)
        world[self._moving] = np.einsum("mij,mvj->mvi", m[:, :3, :3], self._local[self._moving]) + m[:, None, :3, 3]
        self._place(world)

    def drawing_order(self, eye) -> np.ndarray:
        """Triangle indices nearest ``eye`` first (int32): drawn in this order, most hidden
        fragments fail the depth test before they are shaded."""
        distance = np.einsum("ij,ij->i", self.centroid - eye, self.centroid - eye)
        return np.argsort(distance, kind="stable").astype(np.int32)

    def outside(self, eye, yaws: np.ndarray, tangents: tuple[float, float]) -> np.ndarray:
        """(views, T) bool: whether each triangle lies wholly beyond one side of the level
        frustum at ``eye`` looking along each of ``yaws`` whose sides have these
        ``(horizontal, vertical)`` tangents (it draws nothing there: the GPU clips to the frustum)."""
        from vlnverse.sim.gl import raykernel

        yaws = np.asarray(yaws, dtype=np.float64)
        return raykernel.outside(self.vertices, np.asarray(eye, dtype=np.float64), np.cos(yaws), np.sin(yaws),
                                 float(tangents[0]), float(tangents[1]), CULL_SLACK)


def edge_neighbours(triangles: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The triangles that share an edge with each triangle of one body (equal vertices),
    as CSR: triangle ``t``'s are ``neighbours[start[t]:start[t + 1]]``."""
    corners = np.concatenate([np.repeat(rows, 3)[:, None], triangles.reshape(-1, 3)], axis=1)
    vertex = np.unique(corners, axis=0, return_inverse=True)[1].reshape(-1, 3)
    edges = np.sort(np.stack([vertex[:, [0, 1]], vertex[:, [1, 2]], vertex[:, [2, 0]]], axis=1), axis=2).reshape(-1, 2)
    edge = np.unique(edges, axis=0, return_inverse=True)[1].reshape(-1)
    owner = np.repeat(np.arange(len(triangles)), 3)
    by_edge = np.argsort(edge, kind="stable")
    pairs = set()
    for group in np.split(owner[by_edge], np.flatnonzero(np.diff(edge[by_edge])) + 1):
        for a in group:
            pairs.update((int(a), int(b)) for b in group if b != a)
    pairs = np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)
    start = np.searchsorted(pairs[:, 0], np.arange(len(triangles) + 1)).astype(np.int64)
    return start, np.ascontiguousarray(pairs[:, 1])


def lookup_table(coordinates: np.ndarray, wide_width: int, columns: int, rows: int) -> tuple[np.ndarray, ...]:
    """The atlas coordinates (V, H, W, 2) of each pixel's ray (see
    :func:`vlnverse.sim.gl.panorama.atlas_coordinates`) in a ``rows`` × ``columns`` atlas of
    views ``wide_width`` wide, as :class:`Reprojection` reads them: the flat index of the texel at or before it in both axes, and its offsets from that texel.

    Raises:
        SimulationError: a ray's window of texels leaves its wide view (the margin is too small).
    """
    x0, y0 = np.floor(coordinates[..., 0]), np.floor(coordinates[..., 1])
    left = np.floor(x0 / wide_width) * wide_width
    if (x0 - REACH < left).any() or (x0 + 1 + REACH > left + wide_width - 1).any() or (y0 - REACH < 0).any() or (
            y0 + 1 + REACH > rows - 1).any():
        raise SimulationError("a ray's texels leave its wide view; widen the wide views' margin")
    base = (y0 * columns + x0).astype(np.int32)
    weights = np.rint((coordinates - np.stack([x0, y0], axis=-1)) * 256).astype(np.uint16)
    return base, np.ascontiguousarray(weights[..., 0]), np.ascontiguousarray(weights[..., 1])


def wide_view_runs(base: np.ndarray, columns: int, wide_width: int, views: int) -> list[np.ndarray]:
    """Per wide view of the atlas (``views`` side by side, ``wide_width`` columns each), the
    runs of rays whose texels lie in it, given their :func:`lookup_table` ``base``: int64 rows
    ``(line, first, stop)``, pixels ``first`` to ``stop - 1`` of line ``view · H + row``."""
    lines = base.shape[0] * base.shape[1]
    wide = (base.reshape(lines, -1) % columns) // wide_width
    cut = np.ones((lines, wide.shape[1] + 1), bool)
    cut[:, 1:-1] = wide[:, 1:] != wide[:, :-1]
    line, first = np.nonzero(cut[:, :-1])
    stop = np.nonzero(cut[:, 1:])[1] + 1
    runs = np.stack([line, first, stop], axis=1).astype(np.int64)
    owner = wide[line, first]
    return [np.ascontiguousarray(runs[owner == k]) for k in range(views)]


class Reprojection:
    """One render's lookup of the views' rays in the wide views' atlas, in pieces (runs of
    rays, see :func:`wide_view_runs`) that may run in two threads at once, each piece once
    the texels it reads are in the atlas.

    Args:
        colour: (rows, columns, 4) uint8, the wide views' atlas.
        drawn: (rows, columns) int32, each texel's triangle plus one (0: nothing drawn).
        table: The views' :func:`lookup_table` in this atlas.
        yaws: Each view's yaw (radians).
        sky: The depth of a ray that hits nothing.

    Attributes:
        rgb, depth, ids: The views' RGB (V, H, W, 3) uint8, depth (V, H, W) float32 and prim
            ids (V, H, W) int32 (-1: nothing), filled by :meth:`run`.
    """

    def __init__(self, colour: np.ndarray, drawn: np.ndarray, triangles: Triangles, table: tuple[np.ndarray, ...],
                 yaws: np.ndarray, eye, focal: float, near: float, far: float, sky: float, want_rgb: bool,
                 want_geometry: bool) -> None:
        from vlnverse.sim.gl import raykernel

        views, height, width = table[0].shape
        self.rgb = np.empty((views, height, width, 3), np.uint8)
        self.depth = np.empty((views, height, width), np.float32)
        self.ids = np.empty((views, height, width), np.int32)
        yaws = np.asarray(yaws, dtype=np.float64)
        per_triangle = raykernel.prepare(np.asarray(eye, dtype=np.float64), triangles.corner, triangles.edge1,
                                         triangles.edge2, triangles.normal)
        self._kernel = raykernel.lookup
        self._arguments = (colour.view(np.uint32).reshape(-1), drawn.reshape(-1), per_triangle, triangles.prims,
                           triangles.neighbour_start, triangles.neighbours, *table, drawn.shape[1], REACH,
                           np.cos(yaws), np.sin(yaws), float(focal), float(near), float(far), float(sky),
                           bool(want_rgb), bool(want_geometry))

    def run(self, runs: np.ndarray) -> int:
        """Look up the rays of ``runs`` (rows ``(line, first, stop)``); returns how many of
        them missed (see the module docstring). Releases the GIL while it works."""
        return int(self._kernel(*self._arguments, runs, self.rgb, self.depth, self.ids))
