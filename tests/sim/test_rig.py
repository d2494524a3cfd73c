"""The sensor rig: attach/detach, the panoramic helper and shared renders."""

import numpy as np
import pytest
from gymnasium import spaces

from vlnverse.errors import ConfigError
from vlnverse.sim import DepthSensor, Pose, RGBSensor, SensorRig, Simulator
from vlnverse.sim.testing import Box, box_room


def test_attach_and_detach_change_the_observation_space():
    rig = SensorRig.from_spec(("rgb", "depth"))
    assert set(rig.observation_space(3).spaces) == {"rgb", "depth"}
    rig.attach("lidar", SensorRig.from_spec(("lidar",))["lidar"])
    assert "lidar" in rig.observation_space(3).spaces
    rig.detach("depth")
    assert set(rig.observation_space(3).spaces) == {"rgb", "lidar"}
    with pytest.raises(ConfigError, match="no sensor 'depth'"):
        rig.detach("depth")
    with pytest.raises(ConfigError, match="invalid sensor name"):
        rig.attach("instruction", RGBSensor())


def test_rig_from_mapping_with_parameters():
    rig = SensorRig.from_spec({"front": {"kind": "rgb", "width": 64, "height": 48, "hfov_deg": 60}})
    space = rig.observation_space(1)["front"]
    assert isinstance(space, spaces.Box) and space.shape == (48, 64, 3)
    assert rig["front"].vfov_deg < 60


def test_panorama_is_twelve_views_thirty_degrees_apart():
    rig = SensorRig.panoramic()
    assert len(rig) == 12
    yaws = [rig[name].yaw_deg for name in rig]
    assert yaws == [30.0 * i for i in range(12)]
    assert all((rig[n].width, rig[n].height, rig[n].hfov_deg) == (224, 224, 90.0) for n in rig)


def test_panorama_views_look_around():
    scene = box_room(6.0, 4.0, furniture=[Box("cabinet_0", (1.6, 3.2, 0.0), (2.4, 3.8, 1.8), (0.7, 0.1, 0.1), "cabinet")])
    rig = SensorRig.panoramic(width=64, height=64)
    rig.attach("depth", DepthSensor(width=64, height=64, normalize=False))
    with Simulator(scene, sensors=rig, pose=Pose(2.0, 2.0, 0.0, 0.0)) as sim:
        obs = sim.observe()
        depth = sim.observe()["depth"]
    assert depth[32, 32, 0] == pytest.approx(4.0, abs=0.03)  # the x = 6 wall, straight ahead
    # View 3 looks 90° left, at the red cabinet (y = 3.2) in front of the wall.
    centre = obs["rgb_pano_03"][32, 32].astype(int)
    assert centre[0] > centre[1] + 50
    assert not np.array_equal(obs["rgb_pano_00"], obs["rgb_pano_06"])


def test_rgb_and_depth_with_one_camera_render_once(monkeypatch):
    scene = box_room()
    rig = {"rgb": RGBSensor(width=32, height=32), "depth": DepthSensor(width=32, height=32)}
    with Simulator(scene, sensors=rig, pose=Pose(1.0, 2.0, 0.0, 0.0)) as sim:
        calls = []
        original = sim.backend.render
        monkeypatch.setattr(sim.backend, "render", lambda requests: calls.append(len(requests)) or original(requests))
        obs = sim.observe()
    assert calls == [1]
    assert obs["rgb"].shape == (32, 32, 3) and obs["depth"].shape == (32, 32, 1)


def test_the_paper_panorama_rig_has_one_name():
    rig = SensorRig.from_spec("panorama")
    names = rig.names()
    assert len(names) == 24 and names[0] == "rgb_pano_00" and names[-1] == "depth_pano_11"
    assert [rig[f"rgb_pano_{i:02d}"].yaw_deg for i in range(12)] == [30.0 * i for i in range(12)]
    depth = rig["depth_pano_05"]
    assert (depth.width, depth.height, depth.hfov_deg, depth.normalize, depth.max_depth) == (224, 224, 90.0, True, 10.0)
