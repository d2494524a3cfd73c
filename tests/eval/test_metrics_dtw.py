"""Exact DTW kernels and polyline resampling."""

from __future__ import annotations

import numpy as np
import pytest

from vlnverse.errors import MetricsError
from vlnverse.eval.scoring.dtw import (
    dtw_distance,
    dtw_distance_batch,
    resample_polyline,
    resample_polylines,
)


def naive_dtw(q, r):
    """The r4r recurrence, cell by cell."""
    d = np.full((len(q) + 1, len(r) + 1), np.inf)
    d[0, 0] = 0.0
    for i in range(1, len(q) + 1):
        for j in range(1, len(r) + 1):
            cost = float(np.linalg.norm(q[i - 1] - r[j - 1]))
            d[i, j] = cost + min(d[i - 1, j], d[i, j - 1], d[i - 1, j - 1])
    return d[len(q), len(r)]


def test_r4r_grid_example():
    prediction = np.array([(0, 0), (1, 0), (2, 0), (3, 0)], dtype=float)
    reference = np.array([(0, 0), (1, 0), (2, 1), (3, 2)], dtype=float)
    assert dtw_distance(prediction, reference) == pytest.approx(3.0, abs=1e-12)
    assert dtw_distance_batch([prediction], [reference])[0] == pytest.approx(3.0, abs=1e-12)


def test_kernels_match_the_plain_recurrence():
    rng = np.random.default_rng(3)
    qs, rs = [], []
    for _ in range(60):
        n, m = int(rng.integers(1, 25)), int(rng.integers(1, 25))
        dim = 3
        qs.append(rng.normal(0, 2, size=(n, dim)))
        rs.append(rng.normal(0, 2, size=(m, dim)))
    expected = np.array([naive_dtw(q, r) for q, r in zip(qs, rs, strict=True)])
    single = np.array([dtw_distance(q, r) for q, r in zip(qs, rs, strict=True)])
    np.testing.assert_allclose(single, expected, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(dtw_distance_batch(qs, rs), expected, rtol=1e-12, atol=1e-10)


def test_dtw_is_symmetric_and_zero_on_identical_paths():
    rng = np.random.default_rng(4)
    q, r = rng.normal(size=(9, 2)), rng.normal(size=(4, 2))
    assert dtw_distance(q, r) == pytest.approx(dtw_distance(r, q))
    assert dtw_distance(q, q) == 0.0
    assert dtw_distance_batch([q], [q])[0] == 0.0
    # Repeating points (pausing) costs nothing when they lie on the reference.
    assert dtw_distance(np.repeat(q, 3, axis=0), q) == pytest.approx(0.0)


def test_dtw_rejects_bad_input():
    with pytest.raises(MetricsError):
        dtw_distance(np.zeros((0, 2)), np.zeros((3, 2)))
    with pytest.raises(MetricsError):
        dtw_distance(np.zeros((3, 2)), np.zeros((3, 3)))
    with pytest.raises(MetricsError):
        dtw_distance_batch([np.zeros((2, 2))], [])
    assert dtw_distance_batch([], []).shape == (0,)


def test_resample_polyline_hand_values():
    path = np.array([[0, 0], [1, 0], [1, 0], [1, 2.5]], dtype=float)  # one zero-length segment
    out = resample_polyline(path, 1.0)
    np.testing.assert_allclose(out, [[0, 0], [1, 0], [1, 1], [1, 2], [1, 2.5]])
    out_half = resample_polyline(path, 0.5)
    assert len(out_half) == 8 and np.allclose(out_half[-1], [1, 2.5])
    # Exact multiple: the end is not duplicated.
    np.testing.assert_allclose(
        resample_polyline(np.array([[0.0, 0], [2.0, 0]]), 0.5)[:, 0], [0, 0.5, 1, 1.5, 2]
    )
    # Zero-length path -> its start point; single point -> itself; None -> unchanged.
    np.testing.assert_allclose(resample_polyline(np.zeros((4, 3)), 0.25), np.zeros((1, 3)))
    np.testing.assert_allclose(resample_polyline(np.ones((1, 2)), 0.25), np.ones((1, 2)))
    assert resample_polyline(path, None) is not None and len(resample_polyline(path, None)) == 4


def test_resample_polylines_batch_matches_single_and_reports_lengths():
    rng = np.random.default_rng(5)
    paths = [np.cumsum(rng.normal(size=(int(rng.integers(1, 12)), 2)), axis=0) for _ in range(30)]
    paths.append(np.zeros((3, 2)))
    lengths, out = resample_polylines(paths, 0.3)
    for p, length, o in zip(paths, lengths, out, strict=True):
        expected_len = (
            float(np.sum(np.linalg.norm(np.diff(p, axis=0), axis=1))) if len(p) > 1 else 0.0
        )
        assert length == pytest.approx(expected_len, abs=1e-9)
        np.testing.assert_allclose(o, resample_polyline(p, 0.3), atol=1e-9)
        np.testing.assert_allclose(o[0], p[0])
        np.testing.assert_allclose(o[-1], p[-1] if expected_len > 0 else p[0], atol=1e-9)
        # Consecutive samples are spacing apart along the path, so never further apart.
        if len(o) > 1:
            assert np.all(np.linalg.norm(np.diff(o, axis=0), axis=1) <= 0.3 + 1e-9)


@pytest.mark.slow
def test_batch_kernel_compiles_without_a_writable_cache(monkeypatch):
    import numba

    from vlnverse.eval.scoring import dtw

    real_njit = numba.njit

    def njit(*args, cache=False, **kwargs):
        if cache:
            raise RuntimeError("cannot cache function '_dtw_pairs': no locator available")
        return real_njit(*args, **kwargs)

    monkeypatch.setattr(numba, "njit", njit)
    dtw._compiled_kernel.cache_clear()
    try:
        prediction = np.array([(0, 0), (1, 0), (2, 0), (3, 0)], dtype=float)
        reference = np.array([(0, 0), (1, 0), (2, 1), (3, 2)], dtype=float)
        assert dtw_distance_batch([prediction], [reference])[0] == pytest.approx(3.0, abs=1e-12)
    finally:
        dtw._compiled_kernel.cache_clear()
