"""Frame conversions between our Z-up world and habitat's Y-up world (VLN-CE).

Positions: Z-up ``(x, y, z)`` ↔ Y-up ``(x, z, -y)`` (the inverse of the public VLNVerse
code's habitat→Isaac ``(x, -z, y)``). Rotations: habitat agents face ``-Z``, ours face
``+X``, so an agent rotation ``q`` (w, x, y, z) becomes ``C·q·C⁻¹·F`` in habitat, where ``C``
is the frame change (−90° about X) and ``F`` turns habitat's forward onto ``+X``
(−90° about Y); habitat stores it as (x, y, z, w). A yaw ``ψ`` maps to a rotation of
``ψ − 90°`` about habitat's +Y, as in the public code (which adds +90° on the way back).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

_H = math.sqrt(0.5)
FRAME = np.array([_H, -_H, 0.0, 0.0])  # -90° about X: Z-up → Y-up
FORWARD_FIX = np.array([_H, 0.0, -_H, 0.0])  # -90° about Y: habitat -Z forward → +X


def qmul(a: Sequence[float], b: Sequence[float]) -> np.ndarray:
    """Hamilton product of (w, x, y, z) quaternions."""
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([
        w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
        w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
        w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
        w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
    ])


def qconj(q: Sequence[float]) -> np.ndarray:
    return np.array([q[0], -q[1], -q[2], -q[3]])


def _canonical(q: np.ndarray) -> np.ndarray:
    q = q / np.linalg.norm(q)
    return -q if q[0] < 0 or (q[0] == 0 and next((v for v in q[1:] if v != 0), 0) < 0) else q


def zup_to_yup_position(p: Sequence[float]) -> list[float]:
    x, y, z = (float(v) for v in p)
    return [x, z, -y]


def yup_to_zup_position(p: Sequence[float]) -> list[float]:
    x, y, z = (float(v) for v in p)
    return [x, -z, y]


def zup_to_habitat_rotation(q_wxyz: Sequence[float]) -> list[float]:
    """Our agent rotation (w, x, y, z) → habitat agent rotation (x, y, z, w)."""
    h = _canonical(qmul(qmul(qmul(FRAME, q_wxyz), qconj(FRAME)), FORWARD_FIX))
    return [float(h[1]), float(h[2]), float(h[3]), float(h[0])]


def habitat_to_zup_rotation(q_xyzw: Sequence[float]) -> list[float]:
    """Habitat agent rotation (x, y, z, w) → our agent rotation (w, x, y, z)."""
    x, y, z, w = (float(v) for v in q_xyzw)
    h = np.array([w, x, y, z])
    q = _canonical(qmul(qmul(qconj(FRAME), qmul(h, qconj(FORWARD_FIX))), FRAME))
    return [float(v) for v in q]
