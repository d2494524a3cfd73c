"""The waypoint predictor's polar grid: :data:`HEADINGS` headings (3° apart, bin ``h`` at
``h * 3°`` counter-clockwise from straight ahead) × :data:`DISTANCES` distances (0.25 m to
3.0 m, 0.25 m apart), the layout of the discrete-to-continuous predictor of Hong et al.
(CVPR 2022). The predictor reads its output on it; training writes its targets on it."""

from __future__ import annotations

import math

import numpy as np

HEADINGS = 120
DISTANCES = 12
DISTANCE_STEP = 0.25
HEADING_STEP = 2.0 * math.pi / HEADINGS


def heading_of(bin_index) -> np.ndarray:
    """Relative heading (radians, in (-pi, pi]) of heading bins."""
    return np.remainder(np.asarray(bin_index) * HEADING_STEP + math.pi, 2.0 * math.pi) - math.pi


def distance_of(bin_index) -> np.ndarray:
    """Distance (m) of distance bins (0 -> 0.25 m, 11 -> 3.0 m)."""
    return (np.asarray(bin_index) + 1) * DISTANCE_STEP
