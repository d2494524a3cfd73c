"""Room segmentation of a free-space map with no room annotations.

Rooms are split at door-width constrictions: the *cores* of rooms are the connected
regions farther from any wall than half the widest doorway (a doorway, being narrower,
separates cores); cores too small to be a room are dropped; a watershed on the negated
distance transform then grows the cores over all free space.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage
from skimage.segmentation import watershed

MAX_DOOR_WIDTH_M = 1.2  # doorways up to this wide separate rooms
MIN_CORE_AREA_M2 = 0.5


def segment_rooms(free: np.ndarray, resolution: float, max_door_width: float = MAX_DOOR_WIDTH_M) -> np.ndarray:
    """Label each free cell with a room index (0..K-1, raster order); -1 elsewhere."""
    labels = np.full(free.shape, -1, dtype=np.int32)
    if not free.any():
        return labels
    distance = ndimage.distance_transform_edt(free) * resolution
    cores, count = ndimage.label(distance > max_door_width / 2 + resolution)
    if count:
        areas = ndimage.sum_labels(np.ones_like(distance), cores, index=np.arange(1, count + 1)) * resolution**2
        small = np.nonzero(areas < MIN_CORE_AREA_M2)[0] + 1
        cores[np.isin(cores, small)] = 0
    # free regions with no core (narrow corridors, closets) become rooms of their own
    regions, region_count = ndimage.label(free)
    next_label = int(cores.max()) + 1
    for region in range(1, region_count + 1):
        mask = regions == region
        if not cores[mask].any():
            cores[mask] = next_label
            next_label += 1
    grown = watershed(-distance, cores, mask=free)
    _, inverse = np.unique(grown[free], return_inverse=True)
    labels[free] = inverse.astype(np.int32)
    return labels
