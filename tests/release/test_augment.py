"""``vlnverse release augment``: new homes from a seed space no track uses, checked by layout
against the track's homes, train-split fine + coarse episodes, deterministic and resumable."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from numpy.random import SeedSequence

from vlnverse.errors import ConfigError
from vlnverse.eval.tracks import TRACKS, get_track
from vlnverse.release.augment import AugmentConfig, build_augmentation, check_layouts, track_layouts
from vlnverse.release.build import ReleaseConfig
from vlnverse.scene.procgen.corpus import SEED_SPACE_SIZE, CorpusOptions
from vlnverse.scene.procgen.house import HouseOptions, generate_house, layout_digest


def small(out: Path, **changes) -> AugmentConfig:
    return AugmentConfig(**{"track": "mini", "out": str(out), "homes": 2, "per_home": 3, "frames": False, **changes})


@pytest.mark.slow
def test_augmentation_seeds_are_disjoint_from_every_tracks_homes():
    track_seeds = set()
    for track in map(get_track, TRACKS):
        count = ReleaseConfig(out="", scale=track.scale, seed=track.seed).scene_count
        options = CorpusOptions(count=count, seed=track.seed)
        track_seeds |= {options.scene_seed(i) for i in range(count)}
    assert track_seeds and max(track_seeds) < SEED_SPACE_SIZE
    augment = small(Path("unused"), homes=5000).corpus()
    seeds = {augment.scene_seed(i) for i in range(5000)}
    assert len(seeds) == 5000 and min(seeds) >= SEED_SPACE_SIZE and not seeds & track_seeds
    assert augment.scene_id(7) == "aug_0007"
    # A house's attempt k draws from SeedSequence([seed, k]): no augmentation attempt may draw what
    # a track house's attempt draws. Seeds 2**32 + s (a first design) drew seed s's second attempt.
    track = CorpusOptions(count=40, seed=0)
    attempts = range(HouseOptions().max_attempts)

    def draws(seed_list):
        return {tuple(SeedSequence([seed, k]).generate_state(4)) for seed in seed_list for k in attempts}

    track_draws = draws(track.scene_seed(i) for i in range(40))
    assert not draws(augment.scene_seed(i) for i in range(40)) & track_draws
    first_design = SEED_SPACE_SIZE + track.scene_seed(2)
    assert tuple(SeedSequence([first_design, 0]).generate_state(4)) in track_draws
    mini = track_layouts(get_track("mini"))  # and, built, none of the first homes is one of mini's
    assert not {layout_digest(generate_house(augment.scene_seed(i)).summary()) for i in range(13)} & set(mini)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("aug") / "AUG"
    build_augmentation(small(out, workers=2))
    return out


@pytest.mark.slow
def test_set_holds_new_training_homes_and_their_fine_and_coarse_episodes(built):
    facts = json.loads((built / "augment.json").read_text(encoding="utf-8"))
    assert facts["home_ids"] == ["aug_0000", "aug_0001"]
    splits = json.loads((built / "scenes" / "splits.json").read_text(encoding="utf-8"))
    assert splits["train"] == facts["home_ids"] and not splits["val_unseen"] and not splits["test"]
    manifest = json.loads((built / "dataset" / "manifest.json").read_text(encoding="utf-8"))
    assert set(manifest["splits"]) == {"train"}  # nothing held out as val_seen
    assert set(manifest["splits"]["train"]) == {"fine", "coarse"}
    assert facts["episodes"] == {task: manifest["splits"]["train"][task]["episodes"] for task in ("fine", "coarse")}
    assert facts["episodes"]["coarse"] == 2 * 3
    track_digests = track_layouts(get_track("mini"))
    assert len(track_digests) == 13 and not set(facts["layout_digests"].values()) & set(track_digests)
    card = (built / "README.md").read_text(encoding="utf-8")
    assert "2 new procedural homes" in card and "--homes 2 --per-home 3 --no-frames" in card


@pytest.mark.slow
def test_same_bytes_on_one_worker_and_a_resumed_run_changes_nothing(built, tmp_path):
    again = tmp_path / "one_worker"
    build_augmentation(small(again, workers=1))
    sums = (built / "SHA256SUMS").read_text(encoding="utf-8")
    assert (again / "SHA256SUMS").read_text(encoding="utf-8") == sums
    summary = build_augmentation(small(again, workers=1))
    assert summary.log.runs == 2 and (again / "SHA256SUMS").read_text(encoding="utf-8") == sums
    with pytest.raises(ConfigError, match="other options"):
        build_augmentation(small(again, per_home=4))


def test_a_home_is_the_same_in_any_set_and_adjacent_ranges_share_none(built, tmp_path):
    second = tmp_path / "second"
    build_augmentation(small(second, first=1, homes=1))
    assert json.loads((second / "augment.json").read_text(encoding="utf-8"))["home_ids"] == ["aug_0001"]
    for name in ("scene.usdc", "meta.json"):
        assert (second / "scenes" / "aug_0001" / name).read_bytes() == (built / "scenes" / "aug_0001" / name).read_bytes()
    assert not (second / "scenes" / "aug_0000").exists()


def test_a_home_that_repeats_a_track_home_is_refused(built):
    track_digests = track_layouts(get_track("mini"))
    repeated, scene = next(iter(track_digests.items()))
    facts = json.loads((built / "augment.json").read_text(encoding="utf-8"))
    with pytest.raises(ConfigError, match=f"aug_0001 repeats mini's {scene}"):
        check_layouts({**facts["layout_digests"], "aug_0001": repeated}, track_digests, "mini")
    with pytest.raises(ConfigError, match="aug_0001 repeats aug_0000 of this set"):
        check_layouts({"aug_0000": "a", "aug_0001": "a"}, {}, "mini")
    check_layouts(facts["layout_digests"], track_digests, "mini")


@pytest.mark.slow
@pytest.mark.parametrize("args, message", [
    (["--track", "nope", "--homes", "1"], "unknown track 'nope'"),
    (["--track", "mini", "--homes", "0"], "homes must be a positive integer"),
    (["--track", "mini", "--homes", "1", "--first", "-1"], "first must be a non-negative integer"),
])
def test_cli_refuses_bad_options_in_one_line(tmp_path, args, message):
    result = subprocess.run([sys.executable, "-m", "vlnverse", "release", "augment", *args, "--out",
                             str(tmp_path / "AUG")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and message in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "AUG").exists()
