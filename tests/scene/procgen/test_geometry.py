import numpy as np
import pytest

from vlnverse.scene.procgen.catalog import CATEGORIES
from vlnverse.scene.procgen.geometry import box, cylinder, lathe, merge


def _signed_volume(mesh) -> float:
    vol, start = 0.0, 0
    for n in mesh.counts:
        face = mesh.points[mesh.indices[start:start + n]]
        for i in range(1, n - 1):
            vol += float(np.dot(face[0], np.cross(face[i], face[i + 1]))) / 6.0
        start += n
    return vol


def test_box_is_closed_outward_with_exact_volume():
    mesh = box((1.0, 2.0, 0.5), (2.0, 1.0, 0.5))
    assert _signed_volume(mesh) == pytest.approx(1.0)
    normals = mesh.normals()
    assert np.allclose(np.linalg.norm(normals, axis=1), 1.0)
    # each normal points away from the box centre
    corners = mesh.points[mesh.indices]
    assert np.all(np.einsum("ij,ij->i", normals, corners - np.array([1.0, 2.0, 0.5])) > 0)


def test_lathe_and_cylinder_volume_close_to_analytic():
    cyl = cylinder((0, 0, 0), 0.5, 2.0, segments=64)
    assert _signed_volume(cyl) == pytest.approx(np.pi * 0.25 * 2.0, rel=0.01)
    with pytest.raises(ValueError, match="positive radii"):
        lathe([(0.0, 0.0), (1.0, 1.0)])


def test_merge_rebases_indices():
    merged = merge([box((0, 0, 0), (1, 1, 1)), box((3, 0, 0), (1, 1, 1))])
    assert len(merged.points) == 16 and merged.indices.max() == 15
    assert _signed_volume(merged) == pytest.approx(2.0)


def test_catalog_has_40_plus_categories_and_every_part_is_closed():
    assert len(CATEGORIES) >= 40
    rng = np.random.default_rng(0)
    for cat in CATEGORIES.values():
        built = cat.build(cat.sample_size(rng))
        for slot, mesh in built.parts.items():
            assert _signed_volume(mesh) > 0, (cat.name, slot)
        assert cat.colors and cat.materials and cat.mass[0] <= cat.mass[1]


def test_built_geometry_stays_inside_the_sampled_size():
    """Parts may stick out at the front (handles) but never behind, beside or below/above."""
    rng = np.random.default_rng(1)
    for cat in CATEGORIES.values():
        for _ in range(5):
            size = cat.sample_size(rng)
            built = cat.build(size)
            pts = np.concatenate([m.points for m in built.parts.values()])
            sx, sy, sz = size
            assert pts[:, 0].min() >= -sx / 2 - 1e-6, cat.name
            assert pts[:, 0].max() <= sx / 2 + 0.05, cat.name
            assert np.abs(pts[:, 1]).max() <= sy / 2 + 1e-6, cat.name
            assert pts[:, 2].min() >= -1e-6, cat.name
            assert pts[:, 2].max() <= sz + 0.3 + 1e-6, cat.name  # taps stand above basins
