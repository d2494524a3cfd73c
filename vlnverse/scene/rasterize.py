"""Conservative rasterization of 3D triangles onto a 2D grid by dense surface sampling."""

from __future__ import annotations

import numpy as np

SAMPLES_PER_CELL = 2.0  # sample spacing = resolution / this; every crossed cell gets a sample
INSET = 1e-4  # metres: samples are pulled into the triangle and into the solid behind it
MAX_POINTS_PER_BATCH = 2_000_000


def _barycentric_template(n: int) -> np.ndarray:
    """(P, 3) barycentric weights of a regular grid with ``n`` subdivisions per edge."""
    i, j = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    keep = i + j <= n
    a, b = i[keep] / n, j[keep] / n
    return np.stack([1.0 - a - b, a, b], axis=1)


def sample_triangles(triangles: np.ndarray, spacing: float, into_solid: bool) -> list[np.ndarray]:
    """Points covering each triangle at ``spacing`` (list of (P,3) batches).

    Points are inset slightly toward the triangle's centroid, so a face lying exactly on a
    cell border does not claim the neighbouring cell; with ``into_solid`` they are also
    pushed against the outward normal, into the solid the face bounds.
    """
    if len(triangles) == 0:
        return []
    edges = np.stack([triangles[:, 1] - triangles[:, 0], triangles[:, 2] - triangles[:, 1],
                      triangles[:, 0] - triangles[:, 2]], axis=1)
    longest = np.linalg.norm(edges, axis=2).max(axis=1)
    subdivisions = np.maximum(1, np.ceil(longest / spacing)).astype(np.int64)
    normals = np.cross(edges[:, 0], -edges[:, 2])
    lengths = np.linalg.norm(normals, axis=1, keepdims=True)
    normals = np.divide(normals, lengths, out=np.zeros_like(normals), where=lengths > 0)
    centroids = triangles.mean(axis=1)
    batches = []
    for n in np.unique(subdivisions):
        members = np.nonzero(subdivisions == n)[0]
        template = _barycentric_template(int(n))
        per_batch = max(1, MAX_POINTS_PER_BATCH // len(template))
        for start in range(0, len(members), per_batch):
            idx = members[start:start + per_batch]
            pts = np.einsum("pk,tkd->tpd", template, triangles[idx])
            toward = centroids[idx, None, :] - pts
            dist = np.linalg.norm(toward, axis=2, keepdims=True)
            pts += np.divide(toward, dist, out=np.zeros_like(toward), where=dist > 0) * np.minimum(dist, INSET)
            if into_solid:
                pts -= normals[idx, None, :] * INSET
            batches.append(pts.reshape(-1, 3))
    return batches


def rasterize(triangles: np.ndarray, grid: np.ndarray, origin: np.ndarray, resolution: float,
              z_range: tuple[float, float] | None = None, into_solid: bool = False) -> None:
    """Set ``grid[r, c] = True`` for every cell a triangle covers (within ``z_range`` if given)."""
    for pts in sample_triangles(triangles, resolution / SAMPLES_PER_CELL, into_solid):
        if z_range is not None:
            pts = pts[(pts[:, 2] >= z_range[0]) & (pts[:, 2] <= z_range[1])]
        cols = np.floor((pts[:, 0] - origin[0]) / resolution).astype(np.int64)
        rows = np.floor((pts[:, 1] - origin[1]) / resolution).astype(np.int64)
        inside = (rows >= 0) & (rows < grid.shape[0]) & (cols >= 0) & (cols < grid.shape[1])
        grid[rows[inside], cols[inside]] = True
