"""The bundled sample scenes are what the documented command produces, and they are valid."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from vlnverse.scene.procgen.validation import validate_scene

ASSETS = Path(__file__).resolve().parents[3] / "assets" / "scenes"
SAMPLES = sorted(ASSETS.glob("scene_*/scene.usdc"))


def test_three_samples_of_different_sizes_under_2mb():
    assert len(SAMPLES) == 3
    rooms = {json.loads((p.parent / "meta.json").read_text())["num_rooms"] for p in SAMPLES}
    assert len(rooms) == 3
    assert all(p.stat().st_size < 2_000_000 for p in SAMPLES)


@pytest.mark.slow
@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.parent.name)
def test_sample_passes_validation(path):
    report = validate_scene(path)
    assert report.ok, [f"{f.rule}: {f.message}" for f in report.errors]


def test_documented_command_reproduces_the_samples(tmp_path):
    res = subprocess.run([sys.executable, "-m", "vlnverse", "scenes", "generate", "--out",
                          str(tmp_path), "--count", "3", "--seed", "8", "--rooms", "3-8", "--json"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    for path in SAMPLES:
        assert (tmp_path / path.parent.name / "scene.usdc").read_bytes() == path.read_bytes()
