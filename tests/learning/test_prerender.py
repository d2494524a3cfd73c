"""Pre-rendering: frames equal a fresh render at the stored poses; resume; raw chunks."""

from __future__ import annotations

import dataclasses
import json

import numpy as np

from vlnverse.learning import frames
from vlnverse.learning.frames import FrameStore
from vlnverse.learning.prerender import RECORD, PrerenderConfig, prerender


def fresh_render(config, scene_file: str, pose: np.ndarray) -> dict:
    from vlnverse.envs.nav_env import NavEnv
    from vlnverse.sim.types import Pose

    env = NavEnv(scene_file, sensors=config.sensors())
    try:
        env.reset(seed=0)
        env.sim.reset(Pose(*map(float, pose)))
        return env.sim.observe()
    finally:
        env.close()


def test_frames_equal_a_fresh_render(train_frames):
    config, summary = train_frames
    store = FrameStore(config.out, "train")
    assert summary.frames == sum(e.length for e in store.episodes) > 16  # several chunks
    assert summary.bytes > 0 and summary.frames_per_second > 0
    episode = store.episode(len(store) - 1)
    record = store.records[store.episodes[-1].scene_id]
    assert episode["actions"][-1] == 0  # the oracle's final STOP
    assert set(episode["actions"][:-1]) <= {1, 2, 3}
    for index in (0, len(episode["actions"]) // 2, len(episode["actions"]) - 1):
        fresh = fresh_render(config, record["scene_file"], episode["poses"][index])
        np.testing.assert_array_equal(episode["rgb"][index], fresh["rgb"])
        np.testing.assert_array_equal(episode["semantic"][index], fresh["semantic"])
        np.testing.assert_array_equal(episode["depth"][index], fresh["depth"].astype(np.float16))



def test_every_frame_of_an_episode_equals_an_observation_at_its_pose(train_frames):
    """The renderer draws the rig at the planned poses without moving the agent; the env's
    own observation with the agent teleported to each pose is the same, frame by frame."""
    from vlnverse.envs.nav_env import NavEnv
    from vlnverse.sim.types import Pose

    config, _ = train_frames
    store = FrameStore(config.out, "train")
    for index in (0, len(store) - 1):
        episode = store.episode(index)
        env = NavEnv(store.records[store.episodes[index].scene_id]["scene_file"], sensors=config.sensors())
        try:
            env.reset(seed=0)
            for k, pose in enumerate(episode["poses"]):
                env.sim.backend.set_agent_pose(Pose(*map(float, pose)))
                fresh = env.sim.observe()
                np.testing.assert_array_equal(episode["rgb"][k], fresh["rgb"])
                np.testing.assert_array_equal(episode["semantic"][k], fresh["semantic"])
                np.testing.assert_array_equal(episode["depth"][k], fresh["depth"].astype(np.float16))
        finally:
            env.close()

def test_rerun_resumes_and_raw_chunks_memory_map(train_frames, tmp_path, monkeypatch):
    config, first = train_frames
    again = prerender(config)
    assert [s.status for s in again.scenes] == ["resumed"] and again.frames == first.frames
    # a folder of .npz chunks (the default) is kept by a run asking for raw chunks
    assert config.compress and PrerenderConfig(dataset=config.dataset, out=config.out).compress
    kept = prerender(dataclasses.replace(config, compress=False))
    assert [s.status for s in kept.scenes] == ["resumed"] and kept.scenes[0].record["compress"]

    raw = dataclasses.replace(config, out=str(tmp_path / "raw"), compress=False, semantic=False, depth_dtype="float32")
    prerender(raw)
    compressed, plain = FrameStore(config.out, "train"), FrameStore(raw.out, "train")
    monkeypatch.setattr(frames, "CHUNK_CACHE_BYTES", 3 * 16 * 32 * 32 * 3)  # three RGB chunks: evictions
    for index in [*range(len(plain)), 0]:
        a, b = compressed.episode(index), plain.episode(index)
        np.testing.assert_array_equal(a["rgb"], b["rgb"])
        np.testing.assert_array_equal(a["actions"], b["actions"])
        assert compressed._cached <= frames.CHUNK_CACHE_BYTES or len(compressed._chunks) == 1
    scene = plain.episodes[0].scene_id
    assert isinstance(plain._chunk(scene, "rgb", 0), np.memmap)
    # a scene record of another config is not trusted: that scene renders again
    record_file = tmp_path / "raw" / "train" / scene / RECORD
    record = json.loads(record_file.read_text())
    record_file.write_text(json.dumps({**record, "config_hash": "other"}))
    assert [s.status for s in prerender(raw).scenes] == ["rendered"]


def test_slide_frames_are_rendered_as_the_env_walks(train_frames, tmp_path):
    """``slide`` renders inside the env's walk (tel_hop: a planner process walks, the renderer
    teleports); both store what a fresh render at the stored pose shows."""
    config, _ = train_frames
    slide = dataclasses.replace(config, out=str(tmp_path / "slide"), physics="slide", semantic=False, compress_level=9)
    prerender(slide)
    store = FrameStore(slide.out, "train")
    episode = store.episode(0)
    record = store.records[store.episodes[0].scene_id]
    assert episode["actions"][-1] == 0
    for index in (0, len(episode["actions"]) - 1):
        fresh = fresh_render(slide, record["scene_file"], episode["poses"][index])
        np.testing.assert_array_equal(episode["rgb"][index], fresh["rgb"])


def test_scene_parallel_workers_write_what_one_process_writes(fine_dataset, tmp_path):
    """Two scenes in two worker processes (each with its planner process) = one process."""
    from vlnverse.learning.prerender import PrerenderConfig
    from vlnverse.tasks.dataset import EpisodeDataset
    from vlnverse.tasks.storage import write_dataset

    source = EpisodeDataset.open(fine_dataset)
    picked = [dataclasses.replace(e, split="train") for split in ("train", "val_unseen") for e in source.episodes(split)[:1]]
    write_dataset(tmp_path / "two", picked, extra={"scenes_dir": str(source.scenes_dir)})
    one = PrerenderConfig(dataset=str(tmp_path / "two"), out=str(tmp_path / "one"), rgb_size=16, depth_size=16)
    two = dataclasses.replace(one, out=str(tmp_path / "pool"), workers=2)
    assert prerender(one).frames == prerender(two).frames > 0
    a, b = FrameStore(one.out, "train"), FrameStore(two.out, "train")
    assert len({e.scene_id for e in a.episodes}) == 2
    for index in range(len(a)):
        np.testing.assert_array_equal(a.episode(index)["rgb"], b.episode(index)["rgb"])


def test_the_physics_rate_is_in_the_fingerprint_where_physics_moves_the_frames(tmp_path):
    from vlnverse.learning.prerender import PrerenderConfig

    (tmp_path / "manifest.json").write_text("{}")
    slide = PrerenderConfig(dataset=str(tmp_path), out=str(tmp_path / "frames"), physics="slide")
    assert slide.fingerprint()["physics_hz"] == 60.0
    assert "physics_hz" not in dataclasses.replace(slide, physics="tel_hop").fingerprint()  # teleports


def test_chunks_hold_the_stack_of_their_frames_as_stored(tmp_path):
    """A chunk is ``np.save`` of the frames' stack, converted as stored (float16 depth): byte
    for byte raw, the same array in a .npz."""
    import io
    import zipfile

    from vlnverse.learning.prerender import _write_chunk

    rng = np.random.default_rng(0)
    readings = {"rgb": [rng.integers(0, 256, (8, 8, 3), dtype=np.uint8) for _ in range(5)],
                "depth": [rng.random((8, 8, 1), dtype=np.float32) for _ in range(5)],
                "semantic": [rng.integers(-1, 40, (8, 8), dtype=np.int32) for _ in range(5)]}
    stored = {"rgb": np.uint8, "depth": np.float16, "semantic": np.int32}
    for compress in (False, True):
        config = PrerenderConfig(dataset=str(tmp_path), out=str(tmp_path), compress=compress)
        for sensor, frames_ in readings.items():
            path = tmp_path / f"{sensor}-{compress}"
            expected = np.stack(frames_).astype(stored[sensor])
            assert _write_chunk(path, sensor, frames_, config) == path.stat().st_size
            if compress:
                with zipfile.ZipFile(path) as archive:
                    assert archive.namelist() == ["frames.npy"]
                loaded = np.load(path)["frames"]
                assert loaded.dtype == expected.dtype and np.array_equal(loaded, expected)
            else:
                npy = io.BytesIO()
                np.save(npy, expected)
                assert path.read_bytes() == npy.getvalue()
