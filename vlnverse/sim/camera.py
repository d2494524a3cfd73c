"""Camera math shared by the renderers: the view matrix of a camera pose (Z-up world, yaw
about +Z with 0 facing +X, pitch up positive), as both PyBullet's TinyRenderer and our
OpenGL renderer take it."""

from __future__ import annotations

import math
from collections.abc import Sequence


def view_matrix(position: Sequence[float], yaw: float, pitch: float) -> list[float]:
    """The OpenGL view matrix (column-major, 16 floats) of a camera at ``position``.

    Rows of the rotation are the camera's right, up and backward axes in world frame.
    """
    cy, sy, cp, sp = math.cos(yaw), math.sin(yaw), math.cos(pitch), math.sin(pitch)
    fx, fy, fz = cp * cy, cp * sy, sp  # forward
    ux, uy, uz = -sp * cy, -sp * sy, cp  # up
    rx, ry, rz = fy * uz - fz * uy, fz * ux - fx * uz, fx * uy - fy * ux  # forward × up
    ex, ey, ez = position
    return [
        rx, ux, -fx, 0.0,
        ry, uy, -fy, 0.0,
        rz, uz, -fz, 0.0,
        -(rx * ex + ry * ey + rz * ez), -(ux * ex + uy * ey + uz * ez), fx * ex + fy * ey + fz * ez, 1.0,
    ]
