"""Episode schema validation, canonical JSON, JSONL(.gz) shards and the manifest."""

from __future__ import annotations

import gzip
import json
import math

import pytest

from vlnverse.errors import DatasetError
from vlnverse.tasks.dataset import EpisodeDataset, EpisodeIterator
from vlnverse.tasks.episode import Episode, Goal, Instruction, quaternion_to_yaw, yaw_to_quaternion
from vlnverse.tasks.storage import (
    encode_jsonl,
    read_episodes,
    verify_dataset,
    write_dataset,
    write_episodes,
)


def make_episode(k: int = 0, task: str = "fine", split: str = "train", scene: str = "s0") -> Episode:
    return Episode(
        episode_id=f"{scene}-e{k}-{task}", trajectory_id=f"{scene}-e{k}", scene_id=scene, scene_path=f"{scene}/scene.usda",
        split=split, task=task, start_position=(1.0, 2.0, 0.0), start_rotation=yaw_to_quaternion(0.3 * k),
        goals=(Goal((4.123456789, 2.0, 0.0), object_id="cup_0", room_id="kitchen_0", category="cup"),),
        reference_path=((1.0, 2.0, 0.0), (4.123456789, 2.0, 0.0)), geodesic_distance=3.123456789,
        instruction=Instruction("Walk forward. Stop in front of the cup.", landmarks=("cup_0",)))


def test_yaw_quaternion_round_trip():
    for yaw in (-3.0, -1.0, 0.0, 0.7, 3.1):
        assert math.isclose(quaternion_to_yaw(yaw_to_quaternion(yaw)), yaw, abs_tol=1e-9)


def test_canonical_json_rounds_and_round_trips():
    episode = make_episode()
    data = episode.to_dict()
    assert data["goals"][0]["position"] == [4.1235, 2.0, 0.0]
    assert data["geodesic_distance"] == 3.1235
    assert Episode.from_dict(json.loads(json.dumps(data))) == episode


@pytest.mark.parametrize("change, message", [
    ({"task": "flying"}, "task must be one of"),
    ({"split": "dev"}, "split must be one of"),
    ({"start_rotation": [1, 1, 0, 0]}, "unit quaternion"),
    ({"goals": []}, "at least one goal"),
    ({"colour": "red"}, "unknown field(s) colour"),
    ({"start_position": [0, "x", 0]}, "start_position"),
])
def test_invalid_episodes_name_the_problem(change, message):
    data = make_episode().to_dict()
    data.update(change)
    with pytest.raises(DatasetError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Episode.from_dict(data)


def test_missing_field_is_named():
    data = make_episode().to_dict()
    del data["instruction"]
    with pytest.raises(DatasetError, match="missing field 'instruction'"):
        Episode.from_dict(data)


def test_gzip_shards_are_deterministic_and_readable(tmp_path):
    episodes = [make_episode(k) for k in range(5)]
    a = encode_jsonl(episodes)
    assert a == encode_jsonl(episodes)  # no timestamp in the gzip header
    digest = write_episodes(tmp_path / "x.jsonl.gz", episodes)
    assert len(digest) == 64
    assert read_episodes(tmp_path / "x.jsonl.gz") == episodes
    write_episodes(tmp_path / "x.jsonl", episodes)
    assert (tmp_path / "x.jsonl").read_bytes() == gzip.decompress(a)


def test_bad_line_names_file_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(make_episode().to_dict()) + "\n{not json\n")
    with pytest.raises(DatasetError, match=r"bad.jsonl:2: not valid JSON"):
        read_episodes(path)


def test_dataset_manifest_checksums_and_loader(tmp_path):
    episodes = [make_episode(k, task=t, split=s, scene=sc) for k, (t, s, sc) in enumerate(
        [("fine", "train", "a"), ("coarse", "train", "a"), ("coarse", "test", "b"), ("fine", "val_seen", "a")])]
    manifest = write_dataset(tmp_path / "ds", episodes)
    assert manifest["total_episodes"] == 4
    assert manifest["splits"]["train"]["coarse"] == {"episodes": 1, "scenes": 1}
    assert verify_dataset(tmp_path / "ds") == []
    ds = EpisodeDataset.open(tmp_path / "ds")
    assert [e.episode_id for e in ds.episodes(split="train", task="fine")] == ["a-e0-fine"]
    with pytest.raises(DatasetError, match="no dialogue episodes in split test"):
        ds.episodes(split="test", task="dialogue")
    with pytest.raises(DatasetError, match=r"^no episodes in split val_unseen in "):
        ds.episodes(split="val_unseen")
    with pytest.raises(DatasetError, match="unknown task"):
        ds.episodes(task="nope")
    shard = tmp_path / "ds" / "shards" / "a.jsonl.gz"
    shard.write_bytes(shard.read_bytes()[:-3])
    assert verify_dataset(tmp_path / "ds") == ["shards/a.jsonl.gz"]
    with pytest.raises(DatasetError, match="duplicate episode ids"):
        write_dataset(tmp_path / "dup", episodes + episodes[:1])


def test_episode_iterator_is_deterministic_and_cycles():
    episodes = [make_episode(k) for k in range(6)]
    a = [next(it).episode_id for it in [EpisodeIterator(episodes, shuffle=True, seed=3)] for _ in range(12)]
    b = [next(it).episode_id for it in [EpisodeIterator(episodes, shuffle=True, seed=3)] for _ in range(12)]
    assert a == b and sorted(a[:6]) == sorted(e.episode_id for e in episodes)
    it = EpisodeIterator(episodes, cycle=False)
    assert [e.episode_id for e in it] == [e.episode_id for e in episodes]
