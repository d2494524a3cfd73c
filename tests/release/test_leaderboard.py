"""``vlnverse eval table --leaderboard --figure``: a track's leaderboard file and its SR picture,
made from published bundles."""

from __future__ import annotations

import hashlib
import json

from tests.bundled import REPO
from vlnverse.cli import main

RESULTS = REPO / "assets" / "tracks" / "mini" / "results"


def test_leaderboard_and_figure_of_two_published_bundles(tmp_path, capsys):
    board_file, picture = tmp_path / "leaderboard.json", tmp_path / "sr.png"
    bundles = {"random": RESULTS / "random.tar.gz", "CMA + DAgger": RESULTS / "cma_dagger.tar.gz"}
    assert main(["eval", "table", "--track", "mini", "--leaderboard", str(board_file), "--figure", str(picture),
                 *(f"{label}={path}" for label, path in bundles.items())]) == 0
    capsys.readouterr()
    board = json.loads(board_file.read_text())
    assert board["track"] == "VLNVerse-mini (CPU track)" and board["generated_by"].startswith("vlnverse eval table")
    rows = board["rows"]
    assert len(rows) == 2 * 3 * 3 * 2   # agents x splits x (fine, coarse, pooled) x physics modes
    row = {(r["agent"], r["split"], r["task"], r["physics"]): r for r in rows}
    pooled = row[("CMA + DAgger", "val_unseen", "pooled", "tel_hop")]
    assert pooled["n"] == 200 and pooled["metrics"]["SR"] == {"mean": 9.5, "ci_low": 5.5, "ci_high": 14.0}
    assert pooled["endings"] == {"stop": 75.5, "step_budget": 24.5, "collision": 0.0, "other": 0.0}
    assert pooled["bundle_sha256"] == hashlib.sha256(bundles["CMA + DAgger"].read_bytes()).hexdigest()
    assert pooled["verify"] == (f"vlnverse eval unpack {bundles['CMA + DAgger']} --to cma_dagger && vlnverse eval "
                                "verify cma_dagger --dataset REL/dataset --track mini --rerun --checkpoint "
                                "assets/agents/cma/cma.pt")   # the shipped weights have the recorded sha256
    fine = row[("CMA + DAgger", "test", "fine", "strict")]
    assert fine["n"] == 75 and set(fine["metrics"]) >= {"TL", "NE", "SR", "OSR", "SPL", "nDTW", "CR"}
    assert all(m["ci_low"] <= m["mean"] <= m["ci_high"] for m in fine["metrics"].values())
    assert row[("random", "test", "pooled", "strict")]["training"] == "none (no trained weights)"
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    from matplotlib.figure import Figure

    from vlnverse.release.leaderboard_figure import sr_figure

    figure = sr_figure(board)
    assert isinstance(figure, Figure) and len(figure.axes) == 3
    assert [ax.get_title() for ax in figure.axes] == ["val_seen (n = 76)", "val_unseen (n = 200)", "test (n = 300)"]
