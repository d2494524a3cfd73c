import json

import pytest

from vlnverse.errors import ConfigError
from vlnverse.scene.procgen.corpus import CorpusOptions, generate_corpus, make_splits, split_counts
from vlnverse.scene.procgen.house import HouseOptions

SMALL = HouseOptions(min_rooms=3, max_rooms=4)


def test_paper_split_proportions():
    assert split_counts(263) == {"train": 177, "val_unseen": 33, "test": 53}
    splits = make_splits([f"s{i}" for i in range(263)], 0)
    assert splits["val_seen"] == splits["train"]
    assert len(set(splits["train"]) | set(splits["val_unseen"]) | set(splits["test"])) == 263


def test_resume_skips_finished_scenes_and_keeps_bytes(tmp_path):
    out = tmp_path / "corpus"
    first = generate_corpus(out, CorpusOptions(count=2, seed=5, house=SMALL))
    assert first["generated"] == 2
    before = (out / "scene_0001" / "scene.usdc").read_bytes()
    # an interrupted run: scene 1 lost its meta.json (written last), scene 2 never started
    (out / "scene_0001" / "meta.json").unlink()
    second = generate_corpus(out, CorpusOptions(count=3, seed=5, house=SMALL))
    assert (second["generated"], second["skipped"]) == (2, 1)
    assert (out / "scene_0001" / "scene.usdc").read_bytes() == before
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["scene_0000", "scene_0001", "scene_0002"]
    assert not list(out.glob("**/*.tmp*"))
    meta = json.loads((out / "scene_0002" / "meta.json").read_text())
    assert meta["num_rooms"] in (3, 4) and meta["navigable_area_m2"] > 0 and meta["seed"] >= 0
    splits = json.loads((out / "splits.json").read_text())
    assert sorted(splits["train"] + splits["val_unseen"] + splits["test"]) == ["scene_0000", "scene_0001", "scene_0002"]


def test_parallel_equals_serial_and_other_options_are_refused(tmp_path):
    generate_corpus(tmp_path / "a", CorpusOptions(count=2, seed=9, house=SMALL), workers=1)
    generate_corpus(tmp_path / "b", CorpusOptions(count=2, seed=9, house=SMALL), workers=2)
    for sid in ("scene_0000", "scene_0001"):
        assert (tmp_path / "a" / sid / "scene.usdc").read_bytes() == (tmp_path / "b" / sid / "scene.usdc").read_bytes()
    with pytest.raises(ConfigError, match="other options"):
        generate_corpus(tmp_path / "a", CorpusOptions(count=2, seed=10, house=SMALL))


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(count=-1), "count must be a positive integer, got -1"),
    (dict(count=0), "count must be a positive integer, got 0"),
    (dict(count=2, seed=-3), "seed must be a non-negative integer, got -3"),
    (dict(count=2, file_format="obj"), "format must be usdc or usda, got 'obj'"),
])
def test_invalid_corpus_options(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        CorpusOptions(**kwargs)


def test_unwritable_out_is_a_config_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match="cannot write"):
        generate_corpus(blocker / "sub", CorpusOptions(count=1, house=SMALL))
