"""``vlnverse eval table --pooled``: a track's headline figures (every task of a split pooled,
with the pooled episodes' bootstrap intervals) and how the episodes ended, from published bundles."""

from __future__ import annotations

import json

from tests.bundled import REPO
from vlnverse.cli import main
from vlnverse.eval.unpack import unpack_bundle

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
