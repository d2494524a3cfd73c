"""The compiled kernels of :mod:`vlnverse.sim.gl.reproject` (importing this module imports
numba, so :mod:`~vlnverse.sim.gl.reproject` imports it on first use).

:func:`lookup` runs on runs of rays (a piece of the views' rows) and releases the GIL, so
two threads look up two pieces at once (see :mod:`vlnverse.sim.gl.overlap`); each pixel is
computed alone, in the same float64 operations whichever thread runs it, so the frames are
the same bytes however the rays are split. Calls are serialized by the GL context's lock.
"""

from __future__ import annotations

import numba
import numpy as np

#: Columns of :func:`prepare`'s per-triangle table.
EDGE1, EDGE2, TO_EYE, Q, HIT, NORMAL, PLANE, WIDTH = 0, 3, 6, 9, 12, 13, 16, 17

def _jit(**options):
    """``numba.njit``, cached where numba finds a writable cache folder."""
    def compile_(function):
        try:
            return numba.njit(cache=True, nogil=True, error_model="numpy", **options)(function)
        except RuntimeError:  # "no locator available": read-only install and no writable cache dir
            return numba.njit(nogil=True, error_model="numpy", **options)(function)
    return compile_


@_jit()
def prepare(eye, corner, edge1, edge2, normal):
    """(T, WIDTH) float64: per triangle, its edges, ``eye - corner``, that vector × edge 1,
    edge 2 · that product (the ray-independent parts of Möller-Trumbore), its normal and
    ``normal · (corner - eye)`` (a ray ``d`` meets its plane at that over ``normal · d``)."""
    table = np.empty((len(corner), WIDTH))
    for tri in range(len(corner)):
        e1x, e1y, e1z = edge1[tri, 0], edge1[tri, 1], edge1[tri, 2]
        e2x, e2y, e2z = edge2[tri, 0], edge2[tri, 1], edge2[tri, 2]
        tx, ty, tz = eye[0] - corner[tri, 0], eye[1] - corner[tri, 1], eye[2] - corner[tri, 2]
        qx, qy, qz = ty * e1z - tz * e1y, tz * e1x - tx * e1z, tx * e1y - ty * e1x
        nx, ny, nz = normal[tri, 0], normal[tri, 1], normal[tri, 2]
        row = table[tri]
        row[EDGE1], row[EDGE1 + 1], row[EDGE1 + 2] = e1x, e1y, e1z
        row[EDGE2], row[EDGE2 + 1], row[EDGE2 + 2] = e2x, e2y, e2z
        row[TO_EYE], row[TO_EYE + 1], row[TO_EYE + 2] = tx, ty, tz
        row[Q], row[Q + 1], row[Q + 2] = qx, qy, qz
        row[HIT] = e2x * qx + e2y * qy + e2z * qz
        row[NORMAL], row[NORMAL + 1], row[NORMAL + 2] = nx, ny, nz
        row[PLANE] = nx * -tx + ny * -ty + nz * -tz
    return table


@_jit()
def outside(vertices, eye, cos_yaw, sin_yaw, across, up, slack):
    """(views, T) bool: per view (a level frustum at ``eye`` along the yaw whose sides have
    the tangents ``across`` and ``up``), whether all three vertices of a triangle lie more
    than ``slack`` beyond one of its sides."""
    out = np.zeros((len(cos_yaw), len(vertices)), np.bool_)
    for tri in range(len(vertices)):
        for view in range(len(cos_yaw)):
            c, s = cos_yaw[view], sin_yaw[view]
            beyond = 15  # one bit per side: right, left, top, bottom
            for corner in range(3):
                x, y, z = vertices[tri, corner, 0] - eye[0], vertices[tri, corner, 1] - eye[1], vertices[tri, corner, 2] - eye[2]
                forward, right = x * c + y * s, x * s - y * c
                sides = ((right > across * forward + slack) | (-right > across * forward + slack) << 1
                         | (z > up * forward + slack) << 2 | (-z > up * forward + slack) << 3)
                beyond &= sides
            out[view, tri] = beyond != 0
    return out


@_jit()
def _add(candidates, count, triangle, listed, ray):
    """``triangle`` appended to the first ``count`` candidates of ``ray`` unless ``listed``
    (the last ray that listed each triangle) says it is among them; the new count."""
    if listed[triangle] == ray:
        return count
    listed[triangle] = ray
    candidates[count] = triangle
    return count + 1


@_jit()
def _bilinear(colour, b, wx, wy, columns):
    """The RGB between texel ``b`` and its right, lower and lower-right neighbours at
    offsets ``wx``, ``wy`` (256ths), two channels per integer product."""
    w00 = ((256 - wx) * (256 - wy) + 128) >> 8
    w01 = (wx * (256 - wy) + 128) >> 8
    w10 = ((256 - wx) * wy + 128) >> 8
    taps = ((b, w00), (b + 1, w01), (b + columns, w10), (b + columns + 1, 256 - w00 - w01 - w10))
    even, odd = 128 + (128 << 16), 128 + (128 << 16)
    for tap, weight in taps:
        texel = np.int64(colour[tap])
        even += (texel & 0xFF00FF) * weight
        odd += ((texel >> 8) & 0xFF00FF) * weight
    return (even >> 8) & 255, (odd >> 8) & 255, (even >> 24) & 255


@_jit()
def _nearest(drawn, b, columns, reach, wx, wy, dx, dy, dz, near, far, sky, table, neighbour_start, neighbours,
             candidates, listed, ray):
    """(triangle or -1 for the sky, depth, missed) of the ray ``d`` at an edge (see
    :mod:`vlnverse.sim.gl.reproject`): the nearest of the candidates it hits."""
    side = 2 + 2 * reach
    first = b - reach * (columns + 1)
    count, sky_seen = 0, False
    for row in range(first, first + side * columns, columns):
        for texel in range(row, row + side):
            t = drawn[texel]
            if t == 0:
                sky_seen = True
            else:
                count = _add(candidates, count, t - 1, listed, ray)
    for k in range(count):  # and the triangles next to them (thin ones may fall between texels)
        for n in range(neighbour_start[candidates[k]], neighbour_start[candidates[k] + 1]):
            count = _add(candidates, count, neighbours[n], listed, ray)
    best, best_depth = -1, np.inf
    for k in range(count):
        tri = candidates[k]
        row = table[tri]
        e2x, e2y, e2z = row[EDGE2], row[EDGE2 + 1], row[EDGE2 + 2]
        px, py, pz = dy * e2z - dz * e2y, dz * e2x - dx * e2z, dx * e2y - dy * e2x
        det = row[EDGE1] * px + row[EDGE1 + 1] * py + row[EDGE1 + 2] * pz
        if det == 0.0:
            continue
        inverse = 1.0 / det
        alpha = (row[TO_EYE] * px + row[TO_EYE + 1] * py + row[TO_EYE + 2] * pz) * inverse
        if alpha < 0.0 or alpha > 1.0:
            continue
        beta = (dx * row[Q] + dy * row[Q + 1] + dz * row[Q + 2]) * inverse
        if beta < 0.0 or alpha + beta > 1.0:
            continue
        hit = row[HIT] * inverse
        if near <= hit <= far and (hit < best_depth or (hit == best_depth and tri < best)):
            best, best_depth = tri, hit
    if best >= 0:
        return best, best_depth, False
    if sky_seen:
        return -1, sky, False
    # A miss: the plane of the nearest texel's triangle.
    best = max(drawn[b + (columns if wy >= 128 else 0) + (1 if wx >= 128 else 0)], 1) - 1
    along = table[best, NORMAL] * dx + table[best, NORMAL + 1] * dy + table[best, NORMAL + 2] * dz
    return best, min(max(table[best, PLANE] / along, near), far) if along != 0.0 else far, True


@_jit()
def lookup(colour, drawn, table, prims, neighbour_start, neighbours, base, fx, fy, columns, reach, cos_yaw,
           sin_yaw, focal, near, far, sky, want_rgb, want_geometry, runs, rgb, depth, ids):
    """Fill ``rgb``, ``depth``, ``ids`` (views, H, W[, 3]) for the rays of ``runs`` (rows
    ``(line, first, stop)``: pixels ``first`` to ``stop - 1`` of row ``line % H`` of view
    ``line // H``); returns their misses. Edges take their candidates from the
    ``(2 + 2·reach)²`` texels around the ray."""
    height, width = base.shape[1], base.shape[2]
    most = 0
    for tri in range(len(prims)):
        most = max(most, neighbour_start[tri + 1] - neighbour_start[tri])
    candidates = np.empty((2 + 2 * reach) ** 2 * (1 + most), np.int64)
    listed = np.full(len(prims), -1, np.int64)
    misses = 0
    for line, first, stop in runs:
        i, v = line // height, line % height
        c, s = cos_yaw[i], sin_yaw[i]
        down = (v + 1.0 - height / 2.0) / focal
        for u in range(first, stop):
            b, wx, wy = np.int64(base[i, v, u]), np.int64(fx[i, v, u]), np.int64(fy[i, v, u])
            if want_rgb:
                rgb[i, v, u, 0], rgb[i, v, u, 1], rgb[i, v, u, 2] = _bilinear(colour, b, wx, wy, columns)
            if not want_geometry:
                continue
            # The ray (1, right, -down) of view i's camera, turned by its yaw: its forward
            # component is 1, so a hit's distance along it is the view's depth.
            right = (u - width / 2.0) / focal
            dx, dy, dz = c + right * s, s - right * c, -down
            t = drawn[b]
            if t != 0 and drawn[b + 1] == t and drawn[b + columns] == t and drawn[b + columns + 1] == t:
                tri = t - 1  # inside the four texels' triangle: the hit is on its plane
                along = table[tri, NORMAL] * dx + table[tri, NORMAL + 1] * dy + table[tri, NORMAL + 2] * dz
                if along != 0.0:
                    hit = table[tri, PLANE] / along
                    if near <= hit <= far:
                        depth[i, v, u], ids[i, v, u] = hit, prims[tri]
                        continue
            tri, hit, missed = _nearest(drawn, b, columns, reach, wx, wy, dx, dy, dz, near, far, sky, table,
                                        neighbour_start, neighbours, candidates, listed, line * width + u)
            depth[i, v, u], ids[i, v, u] = hit, prims[tri] if tri >= 0 else -1
            misses += missed
    return misses
