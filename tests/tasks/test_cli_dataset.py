"""``vlnverse dataset stats | export | import`` as a user runs them (in-process ``main``)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from vlnverse.cli import main
from vlnverse.tasks.datagen import DatagenConfig, run_datagen
from vlnverse.tasks.dataset import EpisodeDataset
from vlnverse.tasks.generate import GenerationConfig


@pytest.fixture(scope="module")
def dataset(corpus, tmp_path_factory) -> Path:
    """Fine and coarse episodes of the three test houses (one shard per house)."""
    out = tmp_path_factory.mktemp("cli_dataset") / "ds"
    run_datagen(DatagenConfig(scenes=str(corpus), out=str(out),
                              generation=GenerationConfig(per_scene=3, tasks=("fine", "coarse"))))
    return out


def run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(capsys, *args) -> dict:
    code, out, err = run(capsys, *args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_stats_counts_every_episode_and_writes_a_report(dataset, capsys, tmp_path):
    manifest = json.loads((dataset / "manifest.json").read_text())
    stats = run_json(capsys, "dataset", "stats", dataset)
    assert stats["episodes"] == manifest["total_episodes"] > 0
    for task, row in stats["counts"].items():
        for split, cell in row.items():
            assert cell["episodes"] == manifest["splits"][split][task]["episodes"]
    code, out, _ = run(capsys, "dataset", "stats", dataset, "--report", tmp_path / "report")
    assert code == 0
    assert f"{manifest['total_episodes']} episodes" in out
    report = (tmp_path / "report" / "report.md").read_text()
    assert str(manifest["total_episodes"]) in report and "Fine-grained" in report


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_stats_verify_lists_a_damaged_shard_as_corrupt(dataset, capsys, tmp_path, damage):
    copy = tmp_path / "ds"
    shutil.copytree(dataset, copy)
    code, out, _ = run(capsys, "dataset", "stats", copy, "--verify")
    assert code == 0 and "checksums: ok" in out
    shard = copy / "shards" / "house_0.jsonl.gz"
    lost = len(EpisodeDataset.open(shard).all_episodes())
    raw = shard.read_bytes()
    if damage == "truncate":
        shard.write_bytes(raw[: len(raw) // 2])
    else:
        middle = len(raw) // 2
        shard.write_bytes(raw[:middle] + bytes(b ^ 0xFF for b in raw[middle:middle + 8]) + raw[middle + 8:])
    code, out, err = run(capsys, "dataset", "stats", copy, "--verify", "--json")
    assert code == 1, err
    stats = json.loads(out)
    assert stats["corrupt_files"] == ["shards/house_0.jsonl.gz"]
    total = json.loads((copy / "manifest.json").read_text())["total_episodes"]
    assert stats["episodes"] == total - lost  # the intact shards are still counted
    code, out, _ = run(capsys, "dataset", "stats", copy, "--verify")
    assert code == 1 and "1 bad" in out and "shards/house_0.jsonl.gz" in out


def test_vlnce_export_and_import_round_trip(dataset, corpus, capsys, tmp_path):
    code, _, err = run(capsys, "dataset", "export", dataset, "--format", "vlnce", "--out", tmp_path / "x")
    assert code == 2 and "one task per folder" in err
    exported = run_json(capsys, "dataset", "export", dataset, "--format", "vlnce", "--task", "fine",
                        "--out", tmp_path / "vlnce")
    fine = EpisodeDataset.open(dataset).episodes(task="fine")
    assert exported["episodes"] == len(fine)
    split_file = next(Path(f) for f in exported["files"] if f.endswith(".json.gz"))
    records = json.loads(gzip.decompress(split_file.read_bytes()))["episodes"]
    assert records and all(len(r["start_rotation"]) == 4 for r in records)  # VLN-CE quaternion (x, y, z, w)
    imported = run_json(capsys, "dataset", "import", tmp_path / "vlnce", "--format", "vlnce", "--scenes", corpus,
                        "--out", tmp_path / "back")
    assert imported["episodes"] == len(fine) and imported["missing_scenes"] == []
    back = {e.instruction.text for e in EpisodeDataset.open(tmp_path / "back").all_episodes()}
    assert back == {e.instruction.text for e in fine}


def test_release_export_and_import_round_trip(dataset, corpus, capsys, tmp_path):
    exported = run_json(capsys, "dataset", "export", dataset, "--format", "vlnverse", "--out", tmp_path / "rel")
    total = len(EpisodeDataset.open(dataset).all_episodes())
    assert exported["episodes"] == total
    code, out, _ = run(capsys, "dataset", "import", tmp_path / "rel", "--format", "vlnverse", "--scenes", corpus,
                       "--out", tmp_path / "back")
    assert code == 0 and f"imported {total} episodes" in out
    back = EpisodeDataset.open(tmp_path / "back").all_episodes()
    assert sorted(e.episode_id for e in back) == sorted(e.episode_id for e in EpisodeDataset.open(dataset).all_episodes())
    code, _, err = run(capsys, "dataset", "import", tmp_path / "rel", "--format", "vlnverse",
                       "--scenes", tmp_path / "nowhere", "--out", tmp_path / "never")
    assert code == 2 and "nowhere does not exist" in err and not (tmp_path / "never").exists()


def _vlnverse(*args):
    import subprocess
    import sys

    from tests.bundled import REPO

    return subprocess.run([sys.executable, "-m", "vlnverse", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, timeout=300)


@pytest.mark.slow
def test_stats_verify_checks_the_manifest_and_the_scene_records(dataset, tmp_path):
    """Files whose checksums are fine but that describe the shards wrongly: the manifest's
    counts and totals, datagen's per-scene records (a real ``vlnverse`` process)."""
    copy = tmp_path / "ds"
    shutil.copytree(dataset, copy)
    clean = _vlnverse("dataset", "stats", copy, "--verify")
    assert clean.returncode == 0, clean.stderr
    assert "checksums: ok" in clean.stdout and "manifest and records: ok" in clean.stdout

    manifest = json.loads((copy / "manifest.json").read_text())
    counts = manifest["shards"]["house_0"]["counts"]
    counts[next(iter(counts))]["fine"] += 1
    manifest["total_episodes"] += 5
    del manifest["files"]["shards/house_2.jsonl.gz"]
    (copy / "manifest.json").write_text(json.dumps(manifest))
    record = json.loads((copy / "shards" / "house_1.json").read_text())
    record["sha256"] = "0" * 64
    (copy / "shards" / "house_1.json").write_text(json.dumps(record))
    (copy / "shards" / "house_2.json").unlink()
    result = _vlnverse("dataset", "stats", copy, "--verify", "--json")
    assert result.returncode == 1, result.stderr
    problems = json.loads(result.stdout)["problems"]
    expected = ["manifest.json: shard house_0 counts",
                "manifest.json: shard shards/house_2.jsonl.gz has no checksum in 'files'",
                "manifest.json: 'splits' does not add up from the shards' counts",
                "manifest.json: total_episodes is",
                "shards/house_0.json: counts disagree(s) with manifest.json",
                "shards/house_1.json: sha256 disagree(s) with manifest.json",
                "shards/: no record of scene(s) house_2"]
    assert len(problems) == len(expected) and all(p.startswith(e) for p, e in zip(problems, expected, strict=True))

    manifest["shards"]["house_0"]["file"] = "../../elsewhere.jsonl.gz"
    (copy / "manifest.json").write_text(json.dumps(manifest))
    result = _vlnverse("dataset", "stats", copy, "--verify")
    assert result.returncode == 2 and "'shards' must map each scene to" in result.stderr
    assert "Traceback" not in result.stderr
