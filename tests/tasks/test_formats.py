"""Import/export of VLN-CE and the public VLNVerse release format."""

from __future__ import annotations

import gzip
import json
import math

import numpy as np
import pytest

from tests.tasks.test_episode_storage import make_episode
from vlnverse.errors import ConfigError, DatasetError
from vlnverse.tasks.episode import Episode, Goal, Instruction, yaw_to_quaternion
from vlnverse.tasks.formats import export_episodes, import_episodes
from vlnverse.tasks.formats.frames import (
    habitat_to_zup_rotation,
    zup_to_habitat_rotation,
)


def sample_episodes() -> list[Episode]:
    fine = [make_episode(k, "fine", s) for k, s in enumerate(["train", "val_seen", "val_unseen", "test"])]
    coarse = Episode(
        episode_id="s1-c0-coarse", trajectory_id="s1-c0", scene_id="s1", scene_path="s1/scene.usda", split="val_seen",
        task="coarse", start_position=(0.5, -1.25, 0.0), start_rotation=yaw_to_quaternion(-2.0),
        goals=(Goal((3.0, 1.0, 0.0), object_id="cup_0", room_id="kitchen_0", category="cup"),),
        reference_path=((0.5, -1.25, 0.0), (3.0, 1.0, 0.0)), geodesic_distance=3.3634,
        instruction=Instruction("Go to the kitchen and locate the red cup.", style="formal",
                                styles={"formal": "Go to the kitchen and locate the red cup.",
                                        "natural": "Please find the red cup in the kitchen.", "casual": "Kitchen. Red cup."},
                                landmarks=("cup_0",), rooms=("kitchen_0",)))
    long_horizon = Episode(
        episode_id="s1-l0-long_horizon", trajectory_id="s1-l0", scene_id="s1", scene_path="s1/scene.usda", split="test",
        task="long_horizon", start_position=(0.0, 0.0, 0.0), start_rotation=yaw_to_quaternion(1.0),
        goals=(Goal((1.0, 0.0, 0.0), object_id="a"), Goal((1.0, 2.0, 0.0), object_id="b")),
        reference_path=((0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (1.0, 2.0, 0.0)), geodesic_distance=3.0,
        instruction=Instruction("First, find a. Finally, find b.", subgoals=("Find a.", "Find b.")),
        subgoal_distances=(1.0, 2.0))
    visual = Episode(**{**coarse.__dict__, "episode_id": "s1-c0-visual_reference", "task": "visual_reference",
                        "reference_image": "images/s1/s1-c0.png"})
    dialogue = Episode(**{**coarse.__dict__, "episode_id": "s1-c0-dialogue", "task": "dialogue", "question_budget": 3})
    return fine + [coarse, long_horizon, visual, dialogue]


def _without_provenance(e: Episode) -> dict:
    data = e.to_dict()
    data.pop("provenance")
    return data


def test_release_round_trip_is_lossless(tmp_path):
    episodes = sample_episodes()
    files = export_episodes(episodes, "vlnverse", tmp_path / "rel")
    names = sorted(f.name for f in files)
    assert "coarse_val.json.gz" in names and "fine_val_unseen.json.gz" in names and "long_horizon_test.json.gz" in names
    data = json.loads(gzip.decompress((tmp_path / "rel/final_splits/coarse_val.json.gz").read_bytes()))
    record = data["episodes"][0]
    assert record["scan"] == "s1" and isinstance(record["goals"], dict) and record["goals"]["radius"] == 3.0
    assert set(record["instruction"]["instruction_text"]) == {"formal", "natural", "casual"}
    assert np.allclose(record["start_rotation"], yaw_to_quaternion(-2.0), atol=1e-4)
    assert data["instruction_vocab"]["word_list"][:2] == ["<pad>", "<unk>"]
    back = {e.episode_id: e for e in import_episodes(tmp_path / "rel", "vlnverse")}
    for e in episodes:
        assert _without_provenance(back[e.episode_id]) == _without_provenance(e)
        assert back[e.episode_id].provenance.instruction_source == "import:vlnverse"
    # exporting the import again gives the same bytes
    export_episodes(list(back.values()), "vlnverse", tmp_path / "rel2")
    for f in files:
        assert (tmp_path / "rel2/final_splits" / f.name).read_bytes() == f.read_bytes()


def test_release_can_withhold_test_paths(tmp_path):
    export_episodes(sample_episodes(), "vlnverse", tmp_path, withhold_test_paths=True)
    data = json.loads(gzip.decompress((tmp_path / "final_splits/fine_test.json.gz").read_bytes()))
    assert all("reference_path" not in e for e in data["episodes"])


def test_vlnce_round_trip_and_conventions(tmp_path):
    fine = [e for e in sample_episodes() if e.task == "fine"]
    export_episodes(fine, "vlnce", tmp_path / "ce")
    data = json.loads(gzip.decompress((tmp_path / "ce/val_seen/val_seen.json.gz").read_bytes()))
    record = data["episodes"][0]
    source = next(e for e in fine if e.split == "val_seen")
    assert source.start_position == (1.0, 2.0, 0.0)  # Z-up (x, y, z) → Y-up (x, z, -y)
    assert record["start_position"] == [1.0, 0.0, -2.0]
    assert isinstance(record["goals"], list) and record["goals"][0]["radius"] == 3.0
    assert len(record["instruction"]["instruction_tokens"]) == 200
    gt = json.loads(gzip.decompress((tmp_path / "ce/val_seen/val_seen_gt.json.gz").read_bytes()))
    assert gt[source.episode_id]["locations"] == record["reference_path"]
    back = {e.episode_id: e for e in import_episodes(tmp_path / "ce", "vlnce", task="fine")}
    for e in fine:
        b = back[e.episode_id]
        assert np.allclose(b.start_position, e.start_position) and np.allclose(b.start_rotation, e.start_rotation, atol=1e-4)
        assert np.allclose(b.reference_path, e.reference_path) and b.instruction.text == e.instruction.text
        assert b.goals[0].position == e.goals[0].position and b.split == e.split and b.scene_id == e.scene_id
    export_episodes(list(back.values()), "vlnce", tmp_path / "ce2")
    for name in ("train/train.json.gz", "test/test_gt.json.gz"):
        assert (tmp_path / "ce2" / name).read_bytes() == (tmp_path / "ce" / name).read_bytes()


def test_habitat_rotation_convention():
    # a habitat agent with the identity rotation faces -Z (Y-up), which is our +Y: yaw 90°
    assert np.allclose(zup_to_habitat_rotation(yaw_to_quaternion(math.pi / 2)), [0, 0, 0, 1], atol=1e-12)
    for yaw in (-3.0, -0.4, 0.0, 2.2):
        q = yaw_to_quaternion(yaw)
        assert np.allclose(habitat_to_zup_rotation(zup_to_habitat_rotation(q)), q, atol=1e-12)


def test_bad_inputs(tmp_path):
    with pytest.raises(ConfigError, match="unknown dataset format"):
        export_episodes(sample_episodes(), "r2r", tmp_path)
    with pytest.raises(ConfigError, match="one task per folder"):
        export_episodes(sample_episodes(), "vlnce", tmp_path)
    with pytest.raises(DatasetError, match="no VLN-CE split files"):
        import_episodes(tmp_path, "vlnce")
    (tmp_path / "final_splits").mkdir()
    (tmp_path / "final_splits" / "weird_train.json.gz").write_bytes(gzip.compress(b'{"episodes": []}'))
    with pytest.raises(DatasetError, match="expected <task>_<split>"):
        import_episodes(tmp_path, "vlnverse")
