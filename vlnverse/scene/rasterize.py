"""Conservative rasterization of 3D triangles onto a 2D grid by dense surface sampling."""

from __future__ import annotations

import numpy as np

SAMPLES_PER_CELL = 2.0  # xy sample spacing = resolution / this; every crossed cell gets a sample
SHRINK = 1e-5  # samples move this fraction toward the centroid: a face lying exactly on a cell
#                border must not claim the neighbouring cell
INSET = 1e-4  # metres: with ``into_solid``, samples move this far into the solid behind the face
MAX_POINTS_PER_BATCH = 2_000_000


def _barycentric_template(n: int) -> np.ndarray:
    """(P, 3) barycentric weights of a regular grid with ``n`` subdivisions, shrunk slightly
    toward the centroid."""
    i, j = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    keep = i + j <= n
    a, b = i[keep] / n, j[keep] / n
    weights = np.stack([1.0 - a - b, a, b], axis=1)
    return weights * (1.0 - SHRINK) + SHRINK / 3.0


def sample_triangles(triangles: np.ndarray, spacing: float, into_solid: bool,
                     z_spacing: float | None = None) -> list[np.ndarray]:
    """Points covering each triangle (list of (P,3) batches).

    Samples are at most ``spacing`` apart in xy (and ``z_spacing`` apart in z, if given:
    enough to land inside a height slab of twice that thickness). With ``into_solid`` they
    are pushed against the outward normal, into the solid the face bounds.
    """
    if len(triangles) == 0:
        return []
    edges = np.stack([triangles[:, 1] - triangles[:, 0], triangles[:, 2] - triangles[:, 1],
                      triangles[:, 0] - triangles[:, 2]], axis=1)
    needed = np.abs(edges[:, :, :2]).max(axis=(1, 2)) / spacing
    if z_spacing is not None:
        needed = np.maximum(needed, np.abs(edges[:, :, 2]).max(axis=1) / z_spacing)
    subdivisions = np.maximum(1, np.ceil(needed)).astype(np.int64)
    normals = None
    if into_solid:
        normals = np.cross(edges[:, 0], -edges[:, 2])
        lengths = np.linalg.norm(normals, axis=1, keepdims=True)
        normals = np.divide(normals, lengths, out=np.zeros_like(normals), where=lengths > 0) * INSET
    batches = []
    for n in np.unique(subdivisions):
        members = np.nonzero(subdivisions == n)[0]
        template = _barycentric_template(int(n))
        per_batch = max(1, MAX_POINTS_PER_BATCH // len(template))
        for start in range(0, len(members), per_batch):
            idx = members[start:start + per_batch]
            tri = triangles[idx]
            pts = (template[None, :, 0, None] * tri[:, None, 0] + template[None, :, 1, None] * tri[:, None, 1]
                   + template[None, :, 2, None] * tri[:, None, 2])
            if normals is not None:
                pts -= normals[idx, None, :]
            batches.append(pts.reshape(-1, 3))
    return batches


def rasterize(triangles: np.ndarray, grid: np.ndarray, origin: np.ndarray, resolution: float,
              z_range: tuple[float, float] | None = None, into_solid: bool = False) -> None:
    """Set ``grid[r, c] = True`` for every cell a triangle covers (within ``z_range`` if given)."""
    z_spacing = None if z_range is None else max((z_range[1] - z_range[0]) / 2.0, 1e-3)
    for pts in sample_triangles(triangles, resolution / SAMPLES_PER_CELL, into_solid, z_spacing):
        if z_range is not None:
            pts = pts[(pts[:, 2] >= z_range[0]) & (pts[:, 2] <= z_range[1])]
        cols = np.floor((pts[:, 0] - origin[0]) / resolution).astype(np.int64)
        rows = np.floor((pts[:, 1] - origin[1]) / resolution).astype(np.int64)
        inside = (rows >= 0) & (rows < grid.shape[0]) & (cols >= 0) & (cols < grid.shape[1])
        grid[rows[inside], cols[inside]] = True
