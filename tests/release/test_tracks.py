"""Named tracks: VLNVerse-mini's published digest is the one the docs print, and a part of
its build made here (every scene, one scene's episodes and images) has the published bytes;
``release build --track`` refuses options that would change a track's release."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.cli_errors import one_error_line
from vlnverse.cli import main
from vlnverse.eval.tracks import check_release, get_track, sha256_of
from vlnverse.release import ReleaseConfig
from vlnverse.scene.procgen.corpus import generate_corpus
from vlnverse.tasks.corpus import discover_scenes
from vlnverse.tasks.datagen import run_scene

ROOT = Path(__file__).resolve().parents[2]
MINI = get_track("mini")


def _published() -> dict[str, str]:
    pairs = (line.split("  ", 1) for line in MINI.checksums.read_text(encoding="utf-8").splitlines())
    return {path: digest for digest, path in pairs}


def test_the_results_page_prints_the_published_digest_and_config_hash():
    page = (ROOT / "docs" / "results-mini.md").read_text(encoding="utf-8")
    assert MINI.published_digest() in page
    assert MINI.config_hash in page
    assert re.search(r"release build --track mini", page)


@pytest.mark.slow
def test_a_part_of_the_mini_build_made_here_has_the_published_bytes(tmp_path):
    published = _published()
    config = ReleaseConfig(out=str(tmp_path), scale=MINI.scale, seed=MINI.seed)
    generate_corpus(tmp_path / "scenes", config.corpus(), workers=1)
    scene_files = {p.relative_to(tmp_path).as_posix(): p for p in (tmp_path / "scenes").rglob("*") if p.is_file()}
    assert {path for path in published if path.startswith("scenes/")} == set(scene_files)
    for path, file in scene_files.items():
        assert sha256_of(file) == published[path], path

    entry = next(e for e in discover_scenes(tmp_path / "scenes") if e.split == "val_unseen")
    outcome = run_scene(entry, config.datagen())
    assert outcome.status == "generated"
    made = [p for p in (tmp_path / "dataset").rglob(f"{entry.scene_id}*") if p.is_file() and p.suffix != ".json"]
    made += [p for p in (tmp_path / "dataset" / "images" / entry.scene_id).glob("*.png")]
    assert any(p.name.endswith(".jsonl.gz") for p in made) and any(p.suffix == ".png" for p in made)
    for file in made:
        path = file.relative_to(tmp_path).as_posix()
        assert sha256_of(file) == published[path], path


def test_a_release_that_differs_from_the_track_is_named_with_its_files(tmp_path):
    published = MINI.checksums.read_text(encoding="utf-8")
    described = "0" * 64 + "  README.md\n" + "1" * 64 + "  dataset/report/paths.png\n"
    (tmp_path / "SHA256SUMS").write_text(described + published.replace(
        "  dataset/manifest.json", "  dataset/manifest.jsonl", 1), encoding="utf-8")
    matches, message = check_release(MINI, tmp_path)
    assert not matches
    assert "does NOT reproduce VLNVerse-mini" in message and "dataset/manifest.json" in message
    assert "2 files differ" in message  # the card and the report are not the track's content
    (tmp_path / "SHA256SUMS").write_text(described + published, encoding="utf-8")
    assert check_release(MINI, tmp_path) == (True, f"reproduces {MINI.label}: content digest "
                                                   f"{MINI.published_digest()}")


@pytest.mark.parametrize(("options", "message"), [
    (["--track", "tiny"], "unknown track 'tiny'; valid: full, mini"),
    (["--track", "mini", "--scale", "0.1"], "--track mini builds --scale 0.05; drop --scale 0.1"),
    (["--track", "mini", "--per-scene", "3"], "--track mini fixes the generation settings; drop --per-scene"),
])
def test_track_options_that_would_change_its_bytes_are_refused(tmp_path, capsys, options, message):
    out = tmp_path / "rel"
    assert main(["release", "build", "--out", str(out), *options]) == 2
    assert message in one_error_line(capsys.readouterr().err)
    assert not out.exists()
