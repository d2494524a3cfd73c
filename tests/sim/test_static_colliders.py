"""Convex colliders for closed convex static prims; triangle meshes for the rest."""

from __future__ import annotations

import numpy as np

from vlnverse.sim.backends.bullet_scene import convex_parts, convex_vertices


def box(lo, hi) -> np.ndarray:
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    corners = np.array([[(hi if (i >> k) & 1 else lo)[k] for k in range(3)] for i in range(8)])
    faces = [[0, 2, 3], [0, 3, 1], [4, 5, 7], [4, 7, 6], [0, 1, 5], [0, 5, 4],
             [2, 6, 7], [2, 7, 3], [0, 4, 6], [0, 6, 2], [1, 3, 7], [1, 7, 5]]
    return corners[np.array(faces)]


def l_prism() -> np.ndarray:
    """A closed L-shaped prism (concave), triangulated as one watertight surface."""
    outline = np.array([[0, 0], [2, 0], [2, 1], [1, 1], [1, 2], [0, 2]], float)
    bottom = np.c_[outline, np.zeros(6)]
    top = np.c_[outline, np.ones(6)]
    caps = [(0, 1, 2), (0, 2, 3), (0, 3, 5), (3, 4, 5)]
    tris = [bottom[list(f[::-1])] for f in caps] + [top[list(f)] for f in caps]
    for i in range(6):
        j = (i + 1) % 6
        tris += [np.array([bottom[i], bottom[j], top[j]]), np.array([bottom[i], top[j], top[i]])]
    return np.array(tris)


def test_box_is_convex_and_l_shape_is_not():
    vertices = convex_vertices(box([0, 0, 0], [2, 0.1, 2.5]))
    assert vertices is not None and len(vertices) == 8
    tris = l_prism()
    assert convex_vertices(tris) is None
    hulls, rest = convex_parts(tris)
    assert hulls == [] and rest.all()


def test_open_box_is_not_convex():
    assert convex_vertices(box([0, 0, 0], [1, 1, 1])[:10]) is None


def test_box_built_wall_splits_into_exact_pieces():
    wall = np.concatenate([box([0, 0, 0], [1, 0.1, 2]), box([1, 0, 1.5], [2, 0.1, 2]), l_prism() + [5, 0, 0]])
    hulls, rest = convex_parts(wall)
    assert len(hulls) == 2 and rest.sum() == len(l_prism()) and not rest[:24].any()
    assert np.allclose(np.sort(hulls[1], axis=0)[[0, -1]], [[1, 0, 1.5], [2, 0.1, 2]])
