"""Polygonal mesh builders (numpy) for procedural scenes.

Every builder returns a closed, outward-facing :class:`MeshData` (faces counter-clockwise
seen from outside) with face-varying normals, so the authored meshes render flat-shaded,
have consistent winding and pass the asset validator's normals/topology rules. Pieces are
assembled by :func:`merge` (a table is a top and four legs in one mesh).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

#: Vertex indices of the six quads of a box whose 8 corners are numbered x + 2y + 4z.
_BOX_FACES = np.array(
    [[0, 2, 3, 1], [4, 5, 7, 6], [0, 1, 5, 4], [2, 6, 7, 3], [0, 4, 6, 2], [1, 3, 7, 5]],
    dtype=np.int32,
)
_BOX_CORNERS = np.array(
    [[(i >> 0) & 1, (i >> 1) & 1, (i >> 2) & 1] for i in range(8)], dtype=np.float64
) - 0.5


@dataclass(frozen=True)
class MeshData:
    """A polygon mesh in the layout USD expects.

    Attributes:
        points: (P, 3) float64 vertex positions.
        counts: (F,) int32 vertices per face.
        indices: (sum(counts),) int32 vertex index per face corner.
    """

    points: np.ndarray
    counts: np.ndarray
    indices: np.ndarray

    @property
    def num_faces(self) -> int:
        return int(len(self.counts))

    def normals(self) -> np.ndarray:
        """Face-varying unit normals (one per face corner), from Newell's method."""
        pts = self.points[self.indices]
        nxt_idx = np.arange(len(self.indices)) + 1
        starts = np.concatenate([[0], np.cumsum(self.counts)[:-1]])
        ends = starts + self.counts
        face_of = np.repeat(np.arange(len(self.counts)), self.counts)
        wrap = nxt_idx == ends[face_of]
        nxt_idx[wrap] = starts[face_of[wrap]]
        cur, nxt = pts, pts[nxt_idx]
        terms = np.stack(
            [
                (cur[:, 1] - nxt[:, 1]) * (cur[:, 2] + nxt[:, 2]),
                (cur[:, 2] - nxt[:, 2]) * (cur[:, 0] + nxt[:, 0]),
                (cur[:, 0] - nxt[:, 0]) * (cur[:, 1] + nxt[:, 1]),
            ],
            axis=1,
        )
        face_normals = np.zeros((len(self.counts), 3))
        np.add.at(face_normals, face_of, terms)
        face_normals /= np.linalg.norm(face_normals, axis=1, keepdims=True)
        return face_normals[face_of]

    def extent(self) -> np.ndarray:
        """(2, 3) axis-aligned bounds of the points."""
        return np.stack([self.points.min(axis=0), self.points.max(axis=0)])

    def transformed(self, yaw: float = 0.0, offset: Sequence[float] = (0.0, 0.0, 0.0)) -> MeshData:
        """The mesh rotated by ``yaw`` (radians, about +Z) then translated by ``offset``."""
        c, s = np.cos(yaw), np.sin(yaw)
        rot = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
        pts = self.points @ rot.T + np.asarray(offset, dtype=np.float64)
        return MeshData(pts, self.counts, self.indices)


def box(center: Sequence[float], size: Sequence[float]) -> MeshData:
    """An axis-aligned box with ``center`` and full ``size`` (sx, sy, sz)."""
    size_arr = np.asarray(size, dtype=np.float64)
    if np.any(size_arr <= 0):
        raise ValueError(f"box size must be positive, got {tuple(size_arr)}")
    points = np.asarray(center, dtype=np.float64) + _BOX_CORNERS * size_arr
    return MeshData(points, np.full(6, 4, dtype=np.int32), _BOX_FACES.reshape(-1).copy())


def box_from_bounds(lo: Sequence[float], hi: Sequence[float]) -> MeshData:
    """An axis-aligned box spanning ``lo`` to ``hi``."""
    lo_a, hi_a = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    return box((lo_a + hi_a) / 2.0, hi_a - lo_a)


def lathe(profile: Sequence[tuple[float, float]], center: Sequence[float] = (0.0, 0.0, 0.0),
          segments: int = 12) -> MeshData:
    """A solid of revolution about +Z with polygonal caps.

    Args:
        profile: (radius, z) pairs from bottom to top; radii must be positive and z
            strictly increasing.
        center: Position of the axis at z = 0 of the profile.
        segments: Number of sides.
    """
    prof = np.asarray(profile, dtype=np.float64)
    if len(prof) < 2 or np.any(prof[:, 0] <= 0) or np.any(np.diff(prof[:, 1]) <= 0):
        raise ValueError("lathe profile needs >= 2 points, positive radii, increasing z")
    theta = 2.0 * np.pi * np.arange(segments) / segments
    rings = len(prof)
    points = np.empty((rings, segments, 3))
    points[:, :, 0] = prof[:, :1] * np.cos(theta)
    points[:, :, 1] = prof[:, :1] * np.sin(theta)
    points[:, :, 2] = prof[:, 1:2]
    points = points.reshape(-1, 3) + np.asarray(center, dtype=np.float64)
    ring = np.arange(segments)
    side = []
    for j in range(rings - 1):
        a, b = j * segments, (j + 1) * segments
        side.append(np.stack([a + ring, a + (ring + 1) % segments,
                              b + (ring + 1) % segments, b + ring], axis=1))
    side_idx = np.concatenate(side).reshape(-1)
    bottom = ring[::-1]
    top = (rings - 1) * segments + ring
    indices = np.concatenate([side_idx, bottom, top]).astype(np.int32)
    counts = np.concatenate([np.full((rings - 1) * segments, 4), [segments, segments]]).astype(np.int32)
    return MeshData(points, counts, indices)


def cylinder(center_bottom: Sequence[float], radius: float, height: float,
             segments: int = 12) -> MeshData:
    """An upright cylinder standing on ``center_bottom``."""
    return lathe([(radius, 0.0), (radius, height)], center_bottom, segments)


def merge(meshes: Iterable[MeshData]) -> MeshData:
    """Concatenate meshes into one (indices re-based)."""
    items = list(meshes)
    if not items:
        raise ValueError("merge needs at least one mesh")
    offsets = np.cumsum([0] + [len(m.points) for m in items[:-1]])
    return MeshData(
        np.concatenate([m.points for m in items]),
        np.concatenate([m.counts for m in items]).astype(np.int32),
        np.concatenate([m.indices + off for m, off in zip(items, offsets, strict=True)]).astype(np.int32),
    )


def slab_rects(rects: Sequence[tuple[float, float, float, float]], z_top: float,
               thickness: float) -> MeshData:
    """Boxes of ``thickness`` under ``z_top`` covering the (x0, y0, x1, y1) rectangles."""
    return merge(
        box_from_bounds((x0, y0, z_top - thickness), (x1, y1, z_top)) for x0, y0, x1, y1 in rects
    )
