"""``vlnverse eval table``: Table 3 from evaluation folders, every cell the summary's mean
and 95 % CI, one table per task and split, the paper's figures only in their own column."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.bundled import REPO
from vlnverse.errors import ConfigError
from vlnverse.eval.running.harness import EvalConfig, evaluate, write_reports
from vlnverse.release.table3 import PAPER_COLUMN, load_runs


@pytest.mark.slow
def test_table_of_two_runs_shows_each_cell_with_its_interval(bundled_dataset, tmp_path):
    folders = {}
    for agent in ("random", "forward"):
        folders[agent] = tmp_path / agent
        evaluate(EvalConfig(dataset=str(bundled_dataset), out=str(folders[agent]), agent=agent, task="fine,coarse",
                            split="val_unseen,test", episodes=6, max_steps=30, plots=0, seed=2))
    out = tmp_path / "table3.md"
    done = subprocess.run([sys.executable, "-m", "vlnverse", "eval", "table", f"rand={folders['random']}",
                           str(folders["forward"]), "--to", str(out), "--json"],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    tables = json.loads(done.stdout)
    summary = json.loads((folders["forward"] / "summary.json").read_text())
    cells = 0
    for group in summary["groups"]:
        row = next(r for r in tables[f"{group['task']}/{group['split']}"]
                   if r["agent"] == "forward" and r["physics"] == group["physics"])
        sr, ne = group["metrics"]["SR"], group["metrics"]["NE"]
        assert row["cells"]["SR"] == f"{100 * sr['mean']:.1f} [{100 * sr['ci_low']:.1f}, {100 * sr['ci_high']:.1f}]"
        assert row["cells"]["NE"] == f"{ne['mean']:.1f} [{ne['ci_low']:.1f}, {ne['ci_high']:.1f}]"
        assert row["n"] == group["n_episodes"] and row["paper"] is None
        cells += 1
    assert cells >= 2
    text = out.read_text()
    assert PAPER_COLUMN in text and "| rand | Strict |" in text and "| forward | Tel-Hop |" in text
    assert "val_seen" not in text  # no table for a split the runs do not cover
    with pytest.raises(ConfigError, match="no summary.json"):
        load_runs([str(tmp_path)])


@pytest.mark.slow
def test_a_partial_run_on_a_track_is_labelled_partial_not_the_tracks_table_3(tmp_path, capsys):
    from vlnverse.cli import main
    from vlnverse.eval.verification.unpack import unpack_bundle

    folder = tmp_path / "cma"
    unpack_bundle(REPO / "assets" / "tracks" / "mini" / "results" / "cma_dagger.tar.gz", folder)
    assert main(["eval", "table", "--track", "mini", "--page", str(folder)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("### Table 3 on VLNVerse-mini (CPU track)\n")
    assert "| cma | Tel-Hop | " in text and "<br><small>[" in text   # --page: each interval on a second line

    run = json.loads((folder / "run.json").read_text())["run"]
    records = [json.loads(line) for line in (folder / "episodes.jsonl").read_text().splitlines()]
    kept = [r for r in records if r["split"] == "val_unseen" and r["physics"] == "tel_hop"]
    (folder / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
    write_reports(folder, kept, run, seed=run["seed"])
    for extra in (["--pooled"], []):
        assert main(["eval", "table", "--track", "mini", *extra, str(folder)]) == 0
        heading = capsys.readouterr().out.splitlines()[0]
        assert "partial: val_unseen, Tel-Hop only" in heading and "Table 3 on" not in heading, heading
