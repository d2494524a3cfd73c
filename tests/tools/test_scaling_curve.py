"""``tools/scaling_curve.py``: pooled SR with bootstrap intervals from published bundles, as a
table, a JSON file and a picture."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.bundled import REPO

RESULTS = REPO / "assets" / "tracks" / "mini" / "results"


def test_curve_of_two_published_bundles(tmp_path):
    png, figures = tmp_path / "curve.png", tmp_path / "curve.json"
    done = subprocess.run([sys.executable, str(REPO / "tools" / "scaling_curve.py"), "--png", str(png), "--json",
                           str(figures), "--reference", f"random={RESULTS / 'random.tar.gz'}",
                           f"8={RESULTS / 'cma_dagger.tar.gz'}"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    # the shipped CMA + DAgger: 19 of 200 val_unseen episodes under Tel-Hop, 49 ended at the step budget
    assert "| 8 | Tel-Hop | 9.5 [5.5, 14.0] |" in done.stdout
    point = json.loads(figures.read_text())["points"]["8"]["val_unseen/tel_hop"]
    assert point["n"] == 200 and round(point["endings"]["step_budget"], 1) == 24.5
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
