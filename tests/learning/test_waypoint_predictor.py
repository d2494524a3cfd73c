"""The trained waypoint predictor: targets from the navigable map, the network, peak picking,
``vlnverse train waypoints`` and the shipped checkpoint on a scene it never saw."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from tests.bundled import BUNDLED_SCENES, REPO
from vlnverse.agents.config import PanoramaConfig, WaypointConfig
from vlnverse.errors import DependencyNotInstalled
from vlnverse.learning.waypoints.targets import (
    HEADINGS,
    TargetConfig,
    polar_to_xy,
    reach_peaks,
    targets_at,
    to_world,
)

#: README "Waypoint predictor": recall / precision within 0.5 m of the shipped checkpoint on
#: 40 poses of the bundled val_unseen scene (scene_0000, seed 5), not a scene it was trained on.
PUBLISHED_RECALL = 0.81
PUBLISHED_NAVIGABLE = 0.90
TOLERANCE = 0.05


def test_targets_are_the_peaks_of_the_reach_profile():
    reach = np.full(HEADINGS, 0.4)  # walls all around, nearer than the nearest target
    reach[10:15] = 3.0          # a corridor 30-42 degrees to the left: a plateau, its middle heading
    reach[60] = 2.0             # a doorway behind
    reach[90:93] = 1.0          # an alcove to the right
    reach[95] = 1.5             # ... whose far end is less than 30 degrees from it: only the farther one
    found = reach_peaks(reach, TargetConfig())
    assert np.degrees(found[:, 0]).round(6).tolist() == [36.0, -180.0, -75.0]
    assert found[:, 1].tolist() == [3.0, 2.0, 1.5]
    assert reach_peaks(np.full(HEADINGS, 3.0), TargetConfig()).tolist() == [[0.0, 3.0]]  # open field: one
    assert len(reach_peaks(np.zeros(HEADINGS), TargetConfig())) == 0


def test_targets_on_a_scene_are_navigable_and_seen_over_free_floor():
    from vlnverse.scene.loading import scene_with_occupancy

    _, occupancy = scene_with_occupancy(BUNDLED_SCENES / "scene_0000" / "scene.usdc")
    rng = np.random.default_rng(1)
    counts = []
    for x, y in occupancy.sample_navigable(rng, 20)[:, :2]:
        yaw = float(rng.uniform(-math.pi, math.pi))
        found = targets_at(occupancy, x, y, yaw, TargetConfig())
        counts.append(len(found))
        for heading, distance in found:
            end = to_world(polar_to_xy(np.array(heading), np.array(distance)), x, y, yaw)
            assert occupancy.is_navigable(end) and 0.5 <= distance <= 2.5  # 0.5 m short of a reach <= 3 m
            line = to_world(polar_to_xy(np.full(30, heading), np.linspace(0.05, distance, 30)), x, y, yaw)
            assert occupancy.is_free(line).all()
    assert 2 <= np.mean(counts) <= 6


def test_the_network_turns_with_the_panorama_and_peaks_are_suppressed():
    torch = pytest.importorskip("torch")
    from vlnverse.agents.waypoints.learned.net import WaypointNetConfig, build_net, pick_peaks

    torch.manual_seed(0)
    net = build_net(WaypointNetConfig()).eval()
    depth = torch.rand(1, 12, 64, 64) * 5
    with torch.inference_mode():
        out, turned = net(depth), net(torch.roll(depth, 1, dims=1))
    assert out.shape == (1, 120, 12)
    assert torch.allclose(torch.roll(out, 10, dims=1), turned, atol=1e-5)  # one view (30 deg) = 10 bins
    heat = np.zeros((120, 12))
    heat[0, 3], heat[2, 5], heat[119, 1], heat[40, 11], heat[80, 0] = 0.9, 0.8, 0.7, 0.6, 0.2
    assert pick_peaks(heat, 0.3, 15.0, 8) == [(0, 3, 0.9), (40, 11, 0.6)]
    assert pick_peaks(heat, 0.3, 15.0, 1) == [(0, 3, 0.9)]


def test_the_shipped_predictor_gives_letter_ids_within_the_caps():
    pytest.importorskip("torch")
    from vlnverse.agents.panorama import Panorama
    from vlnverse.agents.waypoints.learned.predictor import LearnedWaypoints

    panorama = _panoramas(1, size=64)[0]
    capped = LearnedWaypoints(WaypointConfig(max_candidates=2)).predict(panorama)
    every = LearnedWaypoints(WaypointConfig()).predict(panorama)
    assert 1 <= len(capped) <= 2 and len(every) >= len(capped)
    ids = [c.id for c in every]
    assert len(set(ids)) == len(ids) and ids == sorted(ids)
    for c in every:
        assert c.id == "ABCDEFGHIJKL"[round(math.degrees(c.heading) / 30.0) % 12]
        assert 0.4 <= c.distance <= 3.0 and c.view == Panorama.view_toward(panorama, c.heading)


def test_the_shipped_checkpoint_keeps_its_published_recall_on_an_unseen_scene(tmp_path):
    pytest.importorskip("torch")
    from vlnverse.agents.waypoints.learned.net import PeakConfig
    from vlnverse.agents.waypoints.learned.predictor import load_predictor_checkpoint
    from vlnverse.learning.waypoints.samples import load_samples, render_scene
    from vlnverse.learning.waypoints.trainer import predict_probabilities, score

    net, state = load_predictor_checkpoint(REPO / "vlnverse" / "data" / "waypoints" / "waypoint_predictor.pt")
    assert "scene_0000" not in json.dumps(state["train_config"])
    render_scene(BUNDLED_SCENES / "scene_0000" / "scene.usdc", [], tmp_path / "s.npz", count=40, seed=5,
                 input_size=32, panorama=PanoramaConfig(), targets=TargetConfig())
    samples = load_samples([tmp_path / "s.npz"])
    figures = score(predict_probabilities(net, samples["depth"]), samples["targets"], samples["navigable"],
                    PeakConfig(**state["peaks"]), 0.5)
    assert figures["recall"] >= PUBLISHED_RECALL - TOLERANCE
    assert figures["navigable"] >= PUBLISHED_NAVIGABLE - TOLERANCE


def test_without_torch_the_default_predictor_names_the_extra_and_the_depth_option(monkeypatch):
    from vlnverse.agents.waypoints.learned.predictor import LearnedWaypoints

    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(DependencyNotInstalled, match=r"waypoint_predictor: depth.*vlnverse\[train\]"):
        LearnedWaypoints(WaypointConfig())


@pytest.mark.slow
def test_train_waypoints_writes_its_outputs_and_resumes(fine_dataset, tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "wp"

    def train(epochs: int) -> dict:
        done = subprocess.run(
            [sys.executable, "-m", "vlnverse", "train", "waypoints", "--dataset", str(fine_dataset), "--out", str(out),
             "--poses-per-scene", "8", "--epochs", str(epochs), "--batch-size", "4", "--json"],
            capture_output=True, text=True, timeout=300, check=True)
        return json.loads(done.stdout)

    first = train(1)
    assert [e["epoch"] for e in first["history"]] == [1]
    samples = sorted((out / "samples").rglob("*.npz"))
    stamps = [p.stat().st_mtime_ns for p in samples]
    second = train(2)  # resumes: one more epoch, no sample rendered again
    assert [e["epoch"] for e in second["history"]] == [1, 2]
    assert second["history"][0] == first["history"][0]
    assert [p.stat().st_mtime_ns for p in samples] == stamps
    history = json.loads((out / "history.json").read_text())
    assert {"recall", "precision", "navigable"} <= set(history[-1]) and history[-1]["recall"] is not None
    assert (out / "curves.png").stat().st_size > 0 and any((out / "tb").iterdir())
    import yaml

    agent = yaml.safe_load((out / "agent.yaml").read_text())
    assert agent["waypoint_predictor"] == "learned"
    from vlnverse.agents.waypoints.learned.predictor import LearnedWaypoints

    LearnedWaypoints(WaypointConfig(), agent["waypoint_checkpoint"]).predict(_panoramas(1, size=32)[0])


def _panoramas(count: int, size: int):
    from vlnverse.agents.panorama import Panorama, make_rig
    from vlnverse.scene.loading import scene_with_occupancy
    from vlnverse.sim.simulator import Simulator
    from vlnverse.sim.types import Pose

    config = PanoramaConfig(image_size=size)
    scene, occupancy = scene_with_occupancy(BUNDLED_SCENES / "scene_0000" / "scene.usdc")
    points = occupancy.sample_navigable(np.random.default_rng(3), count)
    with Simulator(scene, sensors=make_rig(config, ("depth",)), occupancy=occupancy) as sim:
        return [Panorama.from_observation(sim.render_cameras(Pose(float(x), float(y), occupancy.floor_height, 0.3)),
                                          config) for x, y in points[:, :2]]
