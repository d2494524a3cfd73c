"""The 12-view panorama in one pass (wide views drawn once, resampled) against the direct
render of every view, on the bundled scene: what each view holds changes only by resampling."""

import math

import numpy as np
import pytest

from tests.sim.test_gl_renderer import VIEWS, bundled  # noqa: F401 - the scene fixture
from vlnverse.errors import ConfigError
from vlnverse.sim import DepthSensor, Pose, SensorRig, Simulator
from vlnverse.sim.gl import context
from vlnverse.sim.gl.panorama import resample_map, wide_request, worth_it
from vlnverse.sim.types import CameraRequest

needs_gl = pytest.mark.skipif(context.resolve_renderer("auto") != "gl", reason="no headless EGL here")


def panoramas(scene, mode: str) -> list[dict]:
    rig = SensorRig.panoramic(kinds=("rgb", "semantic"))
    rig.add_panorama(DepthSensor(width=224, height=224, max_depth=30.0, normalize=False), prefix="depth_pano")
    with Simulator(scene, sensors=rig, renderer="gl", panorama=mode) as sim:
        out = []
        for x, y, yaw in VIEWS:
            sim.backend.set_agent_pose(Pose(x, y, 0.0, yaw))
            out.append(sim.observe())
        return out


@needs_gl
def test_one_pass_panorama_matches_the_direct_views(bundled):  # noqa: F811
    one, direct = panoramas(bundled, "one_pass"), panoramas(bundled, "direct")
    depth_ok, ids_ok, pixels = 0, 0, 0
    for a, b in zip(one, direct, strict=True):
        for i in range(12):
            rgb = np.abs(a[f"rgb_pano_{i:02d}"].astype(int) - b[f"rgb_pano_{i:02d}"].astype(int)).mean()
            assert rgb <= 3.0, f"view {i}: RGB mean abs diff {rgb:.2f}/255"
            depth_ok += int((np.abs(a[f"depth_pano_{i:02d}"] - b[f"depth_pano_{i:02d}"]) <= 0.01).sum())
            ids_ok += int((a[f"semantic_pano_{i:02d}"] == b[f"semantic_pano_{i:02d}"]).sum())
            pixels += 224 * 224
    assert depth_ok / pixels >= 0.99
    assert ids_ok / pixels >= 0.99


def test_the_resampling_map_sends_each_view_centre_to_its_own_ray():
    views = [CameraRequest(position=(0.0, 0.0, 1.0), yaw=0.3 + i * math.pi / 6, pitch=0.0, width=64, height=48,
                           hfov_deg=90.0, near=0.05, far=30.0) for i in range(12)]
    assert worth_it(views) and not worth_it(views[:2])
    table = resample_map(views).reshape(12, 48, 64, 4)
    wide = wide_request(views[0], 0.0)
    for i in range(12):
        column, row, scale = table[i, 23, 32, :3]  # the centre pixel: tangents (0, 0)
        # The wide view nearest in azimuth (views 30°, wide views 60° apart; odd views halfway).
        k = int(column // wide.width)
        assert k in {(i // 2) % 6, ((i + 1) // 2) % 6}
        if i % 2 == 0:
            assert column == pytest.approx(k * wide.width + wide.width / 2)
            assert row == pytest.approx(wide.height / 2 - 1)
            assert scale == pytest.approx(1.0)
        else:
            assert scale == pytest.approx(1.0 / math.cos(math.radians(30.0)))
    assert np.all((table[..., 1] >= 1) & (table[..., 1] <= wide.height - 2))


def test_tilted_rigs_are_drawn_view_by_view_and_modes_are_checked(bundled):  # noqa: F811
    tilted = [CameraRequest(position=(0.0, 0.0, 1.0), yaw=i * math.pi / 6, pitch=0.2, width=64, height=64,
                            hfov_deg=90.0, near=0.05, far=30.0) for i in range(12)]
    assert not worth_it(tilted)
    with pytest.raises(ConfigError, match="panorama"):
        Simulator(bundled, sensors=("rgb",), renderer="tiny", panorama="cubemap")
