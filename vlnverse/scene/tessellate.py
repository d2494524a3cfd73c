"""Triangles for USD geometry: fan-triangulated meshes and tessellated implicit prims.

All functions return ``(vertices (V,3), triangles (T,3) int)`` in the prim's local frame,
wound counter-clockwise seen from outside (right-handed).
"""

from __future__ import annotations

import numpy as np

SEGMENTS = 16  # around the axis of round prims; fine enough for 5 cm occupancy cells
RINGS = 8  # latitude bands of spheres and capsule caps


def fan_triangulate(counts: np.ndarray, indices: np.ndarray, left_handed: bool) -> np.ndarray:
    """Fan-triangulate polygons given USD ``faceVertexCounts``/``faceVertexIndices``."""
    counts = np.asarray(counts, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    if counts.size == 0:
        return np.zeros((0, 3), dtype=np.int64)
    valid = counts >= 3
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    counts, starts = counts[valid], starts[valid]
    n_tris = counts - 2
    face_of_tri = np.repeat(np.arange(counts.size), n_tris)
    k = np.arange(n_tris.sum()) - np.repeat(np.cumsum(n_tris) - n_tris, n_tris)
    base = starts[face_of_tri]
    tris = np.stack([indices[base], indices[base + k + 1], indices[base + k + 2]], axis=1)
    return tris[:, ::-1] if left_handed else tris


def _axis_frame(axis: str) -> np.ndarray:
    """Rotation taking a Z-axis shape to one along ``axis`` (columns = new x, y, z)."""
    if axis == "X":
        return np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    if axis == "Y":
        return np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    return np.eye(3)


def cube(size: float) -> tuple[np.ndarray, np.ndarray]:
    h = size / 2.0
    v = np.array([[x, y, z] for x in (-h, h) for y in (-h, h) for z in (-h, h)], dtype=np.float64)
    # vertex index = 4*ix + 2*iy + iz
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    tris = []
    for a, b, c, d in quads:
        tris += [(a, b, c), (a, c, d)]
    return v, np.array(tris, dtype=np.int64)


def _revolve(profile: np.ndarray, axis: str) -> tuple[np.ndarray, np.ndarray]:
    """Surface of revolution about Z of a (radius, z) profile ordered bottom to top."""
    angles = np.linspace(0.0, 2.0 * np.pi, SEGMENTS, endpoint=False)
    rings = []
    for r, z in profile:
        rings.append(np.stack([r * np.cos(angles), r * np.sin(angles), np.full(SEGMENTS, z)], 1))
    verts = np.concatenate(rings)
    tris = []
    for i in range(len(profile) - 1):
        a0, b0 = i * SEGMENTS, (i + 1) * SEGMENTS
        for j in range(SEGMENTS):
            j1 = (j + 1) % SEGMENTS
            if profile[i][0] > 0:
                tris.append((a0 + j, a0 + j1, b0 + j1))
            if profile[i + 1][0] > 0 or profile[i][0] == 0:
                tris.append((a0 + j, b0 + j1, b0 + j))
    tris = np.array(tris, dtype=np.int64)
    return verts @ _axis_frame(axis).T, tris


def _with_caps(verts: np.ndarray, tris: np.ndarray, bottom_ring: int, top_ring: int,
               z0: float, z1: float, axis: str) -> tuple[np.ndarray, np.ndarray]:
    """Close a revolved surface with flat discs at both ends."""
    frame = _axis_frame(axis)
    centers = np.array([[0.0, 0.0, z0], [0.0, 0.0, z1]]) @ frame.T
    c0, c1 = len(verts), len(verts) + 1
    caps = []
    for j in range(SEGMENTS):
        j1 = (j + 1) % SEGMENTS
        caps.append((c0, bottom_ring * SEGMENTS + j1, bottom_ring * SEGMENTS + j))
        caps.append((c1, top_ring * SEGMENTS + j, top_ring * SEGMENTS + j1))
    return np.concatenate([verts, centers]), np.concatenate([tris, np.array(caps, dtype=np.int64)])


def cylinder(radius: float, height: float, axis: str) -> tuple[np.ndarray, np.ndarray]:
    h = height / 2.0
    v, t = _revolve(np.array([[radius, -h], [radius, h]]), axis)
    return _with_caps(v, t, 0, 1, -h, h, axis)


def cone(radius: float, height: float, axis: str) -> tuple[np.ndarray, np.ndarray]:
    h = height / 2.0
    v, t = _revolve(np.array([[radius, -h], [0.0, h]]), axis)
    frame = _axis_frame(axis)
    c0 = len(v)
    caps = [(c0, (j + 1) % SEGMENTS, j) for j in range(SEGMENTS)]
    v = np.concatenate([v, (np.array([[0.0, 0.0, -h]]) @ frame.T)])
    return v, np.concatenate([t, np.array(caps, dtype=np.int64)])


def sphere(radius: float) -> tuple[np.ndarray, np.ndarray]:
    return capsule(radius, 0.0, "Z")


def capsule(radius: float, height: float, axis: str) -> tuple[np.ndarray, np.ndarray]:
    """A capsule of cylinder length ``height`` (0 gives a sphere) along ``axis``."""
    lat = np.linspace(-np.pi / 2, np.pi / 2, RINGS + 1)
    h = height / 2.0
    profile = [[radius * np.cos(a), (h if a > 0 else -h) + radius * np.sin(a)] for a in lat]
    if height > 0:
        mid = RINGS // 2
        profile.insert(mid + 1, [radius, h])
        profile[mid] = [radius, -h]
    profile = np.array(profile)
    profile[0, 0] = profile[-1, 0] = 0.0
    v, t = _revolve(profile, axis)
    # poles are rings of coincident vertices; drop their degenerate triangles
    tri_pts = v[t]
    area2 = np.linalg.norm(np.cross(tri_pts[:, 1] - tri_pts[:, 0], tri_pts[:, 2] - tri_pts[:, 0]), axis=1)
    return v, t[area2 > 1e-12]


def plane(width: float, length: float, axis: str) -> tuple[np.ndarray, np.ndarray]:
    """A double-faced rectangle normal to ``axis`` (both windings, so it blocks from both sides)."""
    half_w, half_l = width / 2.0, length / 2.0
    v = np.array([[-half_w, -half_l, 0.0], [half_w, -half_l, 0.0], [half_w, half_l, 0.0], [-half_w, half_l, 0.0]]) @ _axis_frame(axis).T
    return v, np.array([[0, 1, 2], [0, 2, 3], [0, 2, 1], [0, 3, 2]], dtype=np.int64)
