"""``tools/endings.py``: every episode in one ending, by how it ended and how close it came."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.bundled import REPO

sys.path.insert(0, str(REPO / "tools"))
from endings import ROWS, ending  # noqa: E402

RESULTS = REPO / "assets" / "tracks" / "mini" / "results"


def record(fail_reason: str | None, distances: list, success: float = 0.0) -> dict:
    return {"error": None, "metrics": {"SR": success}, "fail_reason": fail_reason, "goal_distances": [distances]}


@pytest.mark.parametrize("fail_reason, distances, success, expected", [
    (None, [5.0, 2.0], 1.0, "success"),
    ("stop", [5.0, 2.9, 6.0], 0.0, "stopped after passing the goal"),
    ("stop", [5.0, 4.4, 4.6], 0.0, "stopped near"),
    ("stop", [9.0, 4.5, 8.0], 0.0, "stopped far"),  # 3 m + 1.5 m is not near
    ("step_budget", [6.0, 1.0, 1.2], 0.0, "step budget, passed the goal"),
    ("step_budget", [None, 6.0, 7.0], 0.0, "step budget, never there"),  # no distance where off the map
    ("collision", [6.0, 2.0], 0.0, "collision"),
])
def test_each_ending(fail_reason, distances, success, expected):
    assert ending(record(fail_reason, distances, success), 3.0) == expected
    assert expected in ROWS


def test_an_errored_episode_is_an_error():
    assert ending({"error": "boom", "metrics": None}, 3.0) == "error"


def test_endings_of_a_published_bundle(tmp_path):
    figures = tmp_path / "endings.json"
    done = subprocess.run([sys.executable, str(REPO / "tools" / "endings.py"),
                           f"shipped={RESULTS / 'cma_dagger.tar.gz'}", "--json", str(figures)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "**val_unseen/tel_hop** (episodes: 200)" in done.stdout
    cell = json.loads(figures.read_text())["shipped"]["val_unseen/tel_hop"]
    assert cell["n"] == 200 and cell["success"] == pytest.approx(9.5)  # the track's table: 9.5 %
    # the step-budget endings are those tools/scaling_curve.py counts (24.5 %), split by closest approach
    assert cell["step budget, passed the goal"] + cell["step budget, never there"] == pytest.approx(24.5)
    assert sum(cell[row] for row in ROWS) == pytest.approx(100.0)
