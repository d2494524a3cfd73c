"""Exact dynamic time warping (DTW) between point sequences, and polyline resampling.

DTW here is the textbook recurrence of Ilharco et al. (2019) (the r4r reference):
``D[0, 0] = 0``, ``D[i, 0] = D[0, j] = inf`` and
``D[i, j] = d(q_i, r_j) + min(D[i-1, j], D[i, j-1], D[i-1, j-1])`` with ``d`` the
Euclidean distance; ``DTW(Q, R) = D[|Q|, |R|]``. Nothing is approximated (no FastDTW,
no band): both kernels fill every cell of the ``|Q| x |R|`` table.

Two kernels, which the tests check against each other and against a plain double loop:

- :func:`dtw_distance` (one pair) walks the points of the shorter sequence and fills
  each row (along the longer one) in a few numpy calls: unrolling ``D[i, j] = c_j +
  min(a_j, D[i, j-1])`` gives ``D[i, j] = P_j + min_{k<=j}(a_k - P_{k-1})`` with ``P``
  the prefix sums of the row's costs, i.e. a ``cumsum`` and a ``minimum.accumulate``.
- :func:`dtw_distance_batch` (many pairs) walks anti-diagonals, whose cells depend only
  on the two previous anti-diagonals, so each step is a handful of element-wise numpy
  operations over ``(cells on the diagonal) x (episodes)`` with no scan at all. This is
  what makes scoring ~10^4 episodes per second possible without compiled code.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vlnverse.errors import MetricsError

# Padding for unused reference slots in the batch kernel: large enough that any cell
# touching it is never the minimum, small enough that squaring it does not overflow.
_FAR = 1e150


def resample_polyline(points: np.ndarray, spacing: float | None) -> np.ndarray:
    """Points at a fixed arc-length spacing along a polyline.

    The result starts at the first point, steps ``spacing`` metres along the path and
    always ends at the last point. Zero-length segments (turning in place) vanish, so a
    discrete agent that turns and a continuous one that glides give the same sequence
    density. A path of zero length becomes its single start point.

    Args:
        points: ``(N, D)`` polyline vertices, ``N >= 1``.
        spacing: metres between samples; ``None`` returns ``points`` unchanged.

    Returns:
        ``(K, D)`` float array.
    """
    return resample_polylines([points], spacing)[1][0]


def resample_polylines(
    polylines: Sequence[np.ndarray], spacing: float | None
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Lengths of many polylines and their resampling (see :func:`resample_polyline`).

    All polylines are laid end to end on one arc-length axis (separated by a gap that is
    never sampled), so the whole batch costs a few numpy calls instead of a dozen per
    polyline.

    Args:
        polylines: ``(N_i, D)`` arrays with ``N_i >= 1`` and one common ``D``.
        spacing: metres between samples; ``None`` keeps the points as they are.

    Returns:
        ``(lengths (P,), resampled list)``.
    """
    arrays = [np.asarray(p, dtype=np.float64) for p in polylines]
    if not arrays:
        return np.zeros(0), []
    sizes = np.array([len(a) for a in arrays])
    pts = np.concatenate(arrays, axis=0)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    delta = pts[1:] - pts[:-1]
    seg = np.sqrt(np.einsum("ij,ij->i", delta, delta))
    seg[starts[1:] - 1] = 0.0  # the jump from one polyline to the next is not a segment
    cum_all = np.concatenate(([0.0], np.cumsum(seg)))
    base = cum_all[starts]
    lengths = cum_all[starts + sizes - 1] - base
    if spacing is None:
        return lengths, arrays
    # Global arc axis: polyline i occupies [offset_i, offset_i + length_i]; a unit gap
    # between polylines keeps the axis increasing and is never sampled.
    offsets = base + np.arange(len(arrays), dtype=np.float64)
    gaps = np.zeros(len(pts))
    gaps[starts[1:]] = 1.0
    axis = cum_all + np.cumsum(gaps)
    regular = np.floor(lengths / spacing)
    append_end = lengths - regular * spacing >= 1e-9 * np.maximum(1.0, lengths)
    counts = regular.astype(np.int64) + 1 + append_end
    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    owner = np.repeat(np.arange(len(arrays)), counts)
    local = (np.arange(int(counts.sum())) - first[owner]) * spacing
    local[first + counts - 1] = lengths  # every resampled path ends at its last point
    targets = offsets[owner] + local
    out = np.empty((targets.shape[0], pts.shape[1]))
    # Repeated arc positions (zero-length segments) join equal points, so
    # interpolating through them is well defined.
    for d in range(pts.shape[1]):
        out[:, d] = np.interp(targets, axis, pts[:, d])
    return lengths, np.split(out, first[1:])


def dtw_distance(query: np.ndarray, reference: np.ndarray) -> float:
    """Exact DTW between two point sequences with Euclidean point cost.

    Args:
        query: ``(N, D)`` points (e.g. the agent's resampled trajectory).
        reference: ``(M, D)`` points (e.g. the resampled reference path).

    Returns:
        ``D[N, M]`` of the DTW recurrence (metres summed along the best alignment).
    """
    q = np.asarray(query, dtype=np.float64)
    r = np.asarray(reference, dtype=np.float64)
    if q.ndim != 2 or r.ndim != 2 or q.shape[1] != r.shape[1] or len(q) == 0 or len(r) == 0:
        raise MetricsError(
            f"DTW needs two non-empty (N, D) point arrays of the same D, got {q.shape} and {r.shape}"
        )
    # DTW is symmetric; loop over the shorter sequence, vectorize along the longer.
    if len(q) > len(r):
        q, r = r, q
    cost = np.sqrt(np.sum(np.square(q[:, None, :] - r[None, :, :]), axis=2))  # (N, M)
    prefix = np.cumsum(cost, axis=1)
    m = r.shape[0]
    prev = np.full(m + 1, np.inf)
    prev[0] = 0.0
    row = np.empty(m + 1)
    row[0] = np.inf
    for i in range(cost.shape[0]):
        p = prefix[i]
        best_above = np.minimum(prev[1:], prev[:-1])  # min(D[i-1, j], D[i-1, j-1])
        np.minimum.accumulate(best_above - (p - cost[i]), out=row[1:])
        row[1:] += p
        prev, row = row, prev
        row[0] = np.inf
    return float(prev[m])


def dtw_distance_batch(
    queries: Sequence[np.ndarray], references: Sequence[np.ndarray], *, chunk_size: int = 256
) -> np.ndarray:
    """Exact DTW for many (query, reference) pairs at once.

    Pairs are sorted by size and processed in chunks of similar shapes so that padding
    wastes little work; results come back in input order.

    Args:
        queries: ``B`` arrays of shape ``(N_b, D)``.
        references: ``B`` arrays of shape ``(M_b, D)`` (same ``D`` throughout).
        chunk_size: pairs per vectorized chunk (256 keeps the working set in cache).

    Returns:
        ``(B,)`` DTW distances.
    """
    if len(queries) != len(references):
        raise MetricsError(f"{len(queries)} queries but {len(references)} references")
    n_pairs = len(queries)
    out = np.empty(n_pairs)
    if n_pairs == 0:
        return out
    qs = [np.asarray(q, dtype=np.float64) for q in queries]
    rs = [np.asarray(r, dtype=np.float64) for r in references]
    dims = {a.shape[1] for a in qs + rs if a.ndim == 2}
    if len(dims) != 1 or any(a.ndim != 2 or len(a) == 0 for a in qs + rs):
        raise MetricsError("DTW needs non-empty (N, D) point arrays with one common D")
    # Put the longer sequence of each pair on the "row" axis (DTW is symmetric).
    rows, cols = [], []
    for q, r in zip(qs, rs, strict=True):
        if len(r) > len(q):
            q, r = r, q
        rows.append(q)
        cols.append(r)
    n_rows = np.array([len(a) for a in rows])
    n_cols = np.array([len(a) for a in cols])
    order = np.lexsort((n_rows, n_cols))
    for start in range(0, n_pairs, chunk_size):
        sel = order[start : start + chunk_size]
        out[sel] = _dtw_diagonal_chunk([rows[i] for i in sel], [cols[i] for i in sel])
    return out


def _dtw_diagonal_chunk(rows: list[np.ndarray], cols: list[np.ndarray]) -> np.ndarray:
    """Anti-diagonal DTW over one chunk of pairs (rows longer or equal to cols).

    Two trims keep the work close to ``sum(N_b * M_b)``: each diagonal only visits the
    cells ``1 <= i <= N, 1 <= j <= M`` of the chunk's bounding table, and pairs are
    ordered by the diagonal they finish on so finished pairs drop out of the arrays.
    """
    n_r = np.array([len(a) for a in rows])
    n_c = np.array([len(a) for a in cols])
    finish = n_r + n_c
    order = np.argsort(finish, kind="stable")
    b = len(rows)
    dim = rows[0].shape[1]
    big_n, big_m = int(n_r.max()), int(n_c.max())
    # Row points padded with +inf (cost inf => cell inf) so cells past a pair's end
    # never win a minimum; layout (dim, index, pair) keeps pairs contiguous.
    row_pts = np.full((dim, big_n, b), np.inf)
    col_pts = np.full((dim, big_m, b), _FAR)
    for slot, k in enumerate(order):
        row_pts[:, : n_r[k], slot] = rows[k].T
        col_pts[:, : n_c[k], slot] = cols[k].T
    n_c_sorted = n_c[order]
    finish_sorted = finish[order]
    result = np.empty(b)
    diag_km2 = np.full((big_m + 1, b), np.inf)  # anti-diagonal k-2, starting at k=0
    diag_km2[0] = 0.0
    diag_km1 = np.full((big_m + 1, b), np.inf)  # k-1 (k=1: only boundary cells)
    diag_k = np.full((big_m + 1, b), np.inf)
    cost_buf = np.empty((big_m, b))
    tmp_buf = np.empty((big_m, b))
    lo = 0  # pairs [0, lo) have finished
    for k in range(2, big_n + big_m + 1):
        # Cells (i, j) with i + j = k inside the table: j in [j_lo, j_hi].
        j_lo, j_hi = max(1, k - big_n), min(big_m, k - 1)
        width = j_hi - j_lo + 1
        # Row point index i - 1 = k - 1 - j, descending as j ascends.
        seg = row_pts[:, k - 1 - j_hi : k - j_lo, lo:][:, ::-1]
        cols_here = col_pts[:, j_lo - 1 : j_hi, lo:]
        cost = cost_buf[:width, : b - lo]
        tmp = tmp_buf[:width, : b - lo]
        np.subtract(cols_here[0], seg[0], out=cost)
        np.multiply(cost, cost, out=cost)
        for d in range(1, dim):
            np.subtract(cols_here[d], seg[d], out=tmp)
            np.multiply(tmp, tmp, out=tmp)
            cost += tmp
        np.sqrt(cost, out=cost)
        body = diag_k[j_lo : j_hi + 1, lo:]
        np.minimum(diag_km1[j_lo : j_hi + 1, lo:], diag_km1[j_lo - 1 : j_hi, lo:], out=body)
        np.minimum(body, diag_km2[j_lo - 1 : j_hi, lo:], out=body)  # D[i-1, j-1]
        body += cost
        # The buffer last held diagonal k-3; the next two diagonals read one cell past
        # each end of this one, so those must be outside-the-table infinities.
        diag_k[j_lo - 1, lo:] = np.inf
        if j_hi < big_m:
            diag_k[j_hi + 1, lo:] = np.inf
        while lo < b and finish_sorted[lo] == k:
            result[order[lo]] = diag_k[n_c_sorted[lo], lo]
            lo += 1
        if lo == b:
            break
        diag_km2, diag_km1, diag_k = diag_km1, diag_k, diag_km2
    return result
