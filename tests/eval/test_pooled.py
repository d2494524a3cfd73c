"""``vlnverse eval table --pooled``: a track's headline figures (every task of a split pooled,
with the pooled episodes' bootstrap intervals) and how the episodes ended, from published bundles."""

from __future__ import annotations

import json

import pytest

from tests.bundled import REPO
from vlnverse.cli import main
from vlnverse.eval.verification.unpack import unpack_bundle

RESULTS = REPO / "assets" / "tracks" / "mini" / "results"


def test_pooled_table_of_two_published_bundles(tmp_path, capsys):
    for name in ("random", "cma_dagger"):
        unpack_bundle(RESULTS / f"{name}.tar.gz", tmp_path / name)
    folders = [str(tmp_path / "random"), f"CMA + DAgger={tmp_path / 'cma_dagger'}"]
    assert main(["eval", "table", "--pooled", *folders]) == 0
    text = capsys.readouterr().out
    # 19 of the 200 val_unseen episodes (50 fine + 150 coarse) succeed; 49 end at the step budget
    assert "| CMA + DAgger | Tel-Hop | 9.5 [5.5, 14.0] |" in text
    assert text.index("#### val_unseen") < text.index("| CMA + DAgger | Tel-Hop | 9.5") < text.index("#### test")
    row = next(line for line in text.splitlines() if line.startswith("| CMA + DAgger | Tel-Hop | 9.5"))
    assert row.endswith("| 200 | 76 / 24 / 0 / 0 |")
    assert main(["eval", "table", "--pooled", "--json", *folders]) == 0
    pooled = json.loads(capsys.readouterr().out)["pooled"]
    groups = {(g["split"], g["physics"]): g for g in pooled["CMA + DAgger"]}
    assert groups[("test", "tel_hop")]["n"] == 300 and groups[("val_seen", "strict")]["n"] == 76
    assert abs(sum(groups[("test", "strict")]["endings"].values()) - 1.0) < 1e-9


@pytest.mark.slow
def test_the_eval_index_header_gives_the_share_of_each_ending(tmp_path):
    from vlnverse.eval.running.harness import write_reports

    unpack_bundle(RESULTS / "random.tar.gz", tmp_path / "random")
    run = json.loads((tmp_path / "random" / "run.json").read_text())["run"]
    records = [json.loads(line) for line in (tmp_path / "random" / "episodes.jsonl").read_text().splitlines()]
    records = [r for r in records if r["split"] == "val_unseen"]
    write_reports(tmp_path / "random", records, run, n_boot=10)
    strict = [r["fail_reason"] for r in records if r["physics"] == "strict"]
    stop, collision = (round(100 * strict.count(reason) / len(strict)) for reason in ("stop", "collision"))
    assert (stop, collision) == (18, 82)   # random under Strict: most episodes end in a collision
    header = (tmp_path / "random" / "index.html").read_text().split('<div class="meta">')[1].split("</div>")[0]
    assert f"Strict ends: stop {stop} / step budget 0 / collision {collision} / error or other 0 %" in header
    assert "Tel-Hop ends: stop 100 / step budget 0 / collision 0 / error or other 0 %" in header
