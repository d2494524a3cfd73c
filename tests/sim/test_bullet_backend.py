"""The PyBullet backend: lifecycle, rendering (colour, depth, segmentation, intrinsics), LiDAR."""

import logging
import math
import sys

import numpy as np
import pytest

from vlnverse.errors import ConfigError, SimulationError
from vlnverse.sim import (
    AgentSpec,
    Backend,
    DepthSensor,
    LidarSensor,
    PhysicsConfig,
    Pose,
    RGBSensor,
    SemanticSensor,
    Simulator,
    resolve_backend,
)
from vlnverse.sim.backends.bullet import BulletBackend
from vlnverse.sim.testing import Box, box_room

PILLAR = Box("pillar_0", (3.95, 2.95, 0.0), (4.05, 3.05, 2.0), (0.1, 0.6, 0.1), "pillar")
CABINET = Box("cabinet_0", (3.0, 1.7, 0.0), (3.6, 2.3, 1.6), (0.7, 0.1, 0.1), "cabinet")


@pytest.fixture(scope="module")
def scene():
    return box_room(6.0, 4.0, furniture=[PILLAR])


@pytest.fixture()
def sim(scene):
    rig = {
        "rgb": RGBSensor(),
        "depth": DepthSensor(width=224, height=224, max_depth=10.0, normalize=False),
        "semantic": SemanticSensor(),
        "lidar": LidarSensor(h_resolution_deg=1.0),
    }
    with Simulator(scene, sensors=rig, pose=Pose(1.0, 2.0, 0.0, 0.0)) as simulator:
        yield simulator


def test_backend_satisfies_the_protocol_and_its_lifecycle():
    backend = BulletBackend(PhysicsConfig())
    assert isinstance(backend, Backend)
    with pytest.raises(SimulationError, match="before load_scene"):
        backend.spawn_agent(AgentSpec(), Pose(0, 0))
    backend.load_scene(box_room())
    with pytest.raises(SimulationError, match="once"):
        backend.load_scene(box_room())
    with pytest.raises(SimulationError, match="no agent"):
        backend.agent_pose()
    backend.spawn_agent(AgentSpec(), Pose(1.0, 1.0, 0.0, 0.5))
    assert backend.agent_pose().yaw == pytest.approx(0.5)
    backend.close()
    backend.close()
    with pytest.raises(SimulationError):
        backend.agent_pose()


def test_depth_of_a_wall_at_a_known_distance(sim):
    depth = sim.observe()["depth"]
    assert depth.shape == (224, 224, 1) and depth.dtype == np.float32
    # The far wall (x = 6) is 5 m in front of the camera at x = 1; depth is planar, so
    # every pixel of that wall reads 5 m, not only the centre one.
    assert depth[112, 112, 0] == pytest.approx(5.0, abs=0.02)
    assert depth[100, 140, 0] == pytest.approx(5.0, abs=0.02)


def test_depth_clips_and_normalizes(scene):
    rig = {"depth": DepthSensor(width=64, height=64, max_depth=3.0, normalize=True)}
    with Simulator(scene, sensors=rig, pose=Pose(1.0, 2.0, 0.0, 0.0)) as simulator:
        depth = simulator.observe()["depth"]
    assert depth.max() <= 1.0 and depth.min() >= 0.0
    assert depth[32, 32, 0] == pytest.approx(1.0)  # 5 m clipped at 3 m → 1


def test_depth_is_normalized_over_10_m_by_default_as_in_the_paper(scene):
    """Appendix C.2.1: pixels beyond 10 m are clipped and depth normalized; metres on request."""
    assert DepthSensor().normalize and DepthSensor().max_depth == 10.0
    rig = {"depth": DepthSensor(width=64, height=64), "metres": DepthSensor(width=64, height=64, normalize=False)}
    with Simulator(scene, sensors=rig, pose=Pose(1.0, 2.0, 0.0, 0.0)) as simulator:
        obs = simulator.observe()
    assert obs["depth"][32, 32, 0] == pytest.approx(0.5, abs=0.003)  # the wall 5 m ahead
    assert obs["metres"][32, 32, 0] == pytest.approx(5.0, abs=0.03)


def test_semantic_id_at_the_image_centre_is_the_object_in_front(scene):
    scene2 = box_room(6.0, 4.0, furniture=[CABINET, PILLAR])
    with Simulator(scene2, sensors={"semantic": SemanticSensor()}, pose=Pose(1.0, 2.0, 0.0, 0.0)) as sim:
        ids = sim.observe()["semantic"]
        centre = sim.instances.instances[ids[112, 112]]
        assert (centre.object_id, centre.category) == ("cabinet_0", "cabinet")
        floor = sim.instances.instances[ids[223, 112]]
        assert floor.category == "floor"
        assert ids.dtype == np.int32 and ids.max() <= sim.instances.max_id


def test_intrinsics_place_a_pillar_where_the_pinhole_model_says(sim):
    spec = sim.rig["semantic"]
    k = spec.intrinsics()
    assert k[0, 0] == pytest.approx(112.0) and k[0, 2] == pytest.approx(112.0)
    ids = sim.observe()["semantic"]
    pillar = next(i.instance_id for i in sim.instances.instances if i.object_id == "pillar_0")
    columns = np.flatnonzero((ids == pillar).any(axis=0))
    # Pillar centre: 3 m ahead, 1 m to the left → u = cx - f * 1/3.
    assert columns.mean() == pytest.approx(112.0 - 112.0 / 3.0, abs=1.5)


def test_rgb_shows_scene_colours(sim):
    rgb = sim.observe()["rgb"]
    assert rgb.shape == (224, 224, 3) and rgb.dtype == np.uint8
    floor = rgb[215, 112].astype(int)
    assert floor[0] > floor[1] > floor[2]  # wood brown
    pillar_column = int(round(112 - 112 / 3))
    pillar = rgb[112, pillar_column].astype(int)
    assert pillar[1] > pillar[0] + 40 and pillar[1] > pillar[2] + 40  # green pillar
    assert len({tuple(rgb[y, x]) for y in (20, 112, 215) for x in (5, 112, 218)}) >= 4


def test_lidar_ranges_match_the_room(sim):
    scan = sim.observe()["lidar"]
    assert scan.shape == (1, 360) and scan.dtype == np.float32
    # Rays start at -180°: index 0 looks back (x = 0 wall, 1 m), 180 forward (x = 6, 5 m),
    # 270 to the left (y = 4 wall, 2 m).
    assert scan[0, 0] == pytest.approx(1.0, abs=0.01)
    assert scan[0, 180] == pytest.approx(5.0, abs=0.01)
    assert scan[0, 270] == pytest.approx(2.0, abs=0.01)
    assert scan[0, 90] == pytest.approx(2.0, abs=0.01)


def test_lidar_batches_beyond_the_ray_limit(scene):
    lidar = LidarSensor(h_resolution_deg=0.1, channels=8, vfov_deg=20.0)
    assert lidar.channels * lidar.n_rays > 16384
    with Simulator(scene, sensors={"lidar": lidar}, pose=Pose(1.0, 2.0, 0.0, 0.0)) as sim:
        scan = sim.observe()["lidar"]
    assert scan.shape == (8, 3600)
    assert np.all(scan <= 10.0) and np.all(scan > 0.5)


def test_sensor_rate_reuses_readings_between_samples(scene):
    rig = {"rgb": RGBSensor(width=64, height=64, rate_hz=1.0), "fast": RGBSensor(width=64, height=64, yaw_deg=1.0)}
    from vlnverse.sim import Displacement

    with Simulator(scene, sensors=rig, pose=Pose(1.0, 2.0, 0.0, 0.0)) as sim:
        first = sim.observe()
        sim.execute(Displacement(turn=math.radians(45)))
        second = sim.observe()
        assert sim.time < 1.0
        assert np.array_equal(first["rgb"], second["rgb"]) and second["rgb"] is not first["rgb"]
        assert not np.array_equal(first["fast"], second["fast"])


def test_auto_backend_falls_back_to_bullet_and_logs_why(caplog, monkeypatch):
    monkeypatch.setitem(sys.modules, "isaacsim", None)  # as where Isaac Sim is not installed
    with caplog.at_level(logging.INFO, logger="vlnverse.sim.backend"):
        assert resolve_backend("auto") == "bullet"
    assert any("isaac unavailable" in record.getMessage() and "isaacsim is not installed" in record.getMessage()
               for record in caplog.records)


def test_auto_backend_picks_isaac_sim_when_it_is_importable(tmp_path, monkeypatch):
    (tmp_path / "isaacsim").mkdir()
    (tmp_path / "isaacsim" / "__init__.py").write_text("")  # found, never imported
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "isaacsim", raising=False)
    assert resolve_backend("auto") == "isaac"
    assert "isaacsim" not in sys.modules


def test_unknown_backend_lists_valid_names():
    with pytest.raises(ConfigError, match="valid: auto, bullet, isaac"):
        resolve_backend("mujoco")


def test_importing_pybullet_prints_nothing_and_leaves_stderr_working():
    import subprocess
    import sys

    probe = ("import sys\n"
             "from vlnverse.sim.backends.bullet import BulletBackend\n"
             "BulletBackend().close()\n"
             "print('stderr still works', file=sys.stderr)\n"
             "print('stdout still works')\n")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "pybullet build time" not in result.stdout + result.stderr
    assert result.stderr.splitlines()[-1] == "stderr still works"  # other lines (a warning) are allowed
    assert result.stdout == "stdout still works\n"
