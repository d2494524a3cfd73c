"""The public API (issue 56): the names a user needs, exported lazily from ``vlnverse``;
``evaluate`` taking a track by name; tracks and agents as registries a third party adds to."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import vlnverse
from vlnverse.errors import ConfigError, RegistryError

REPO = Path(__file__).resolve().parents[2]


def test_every_public_name_resolves_to_its_module_object():
    from vlnverse.eval import agent, registry, tracks
    from vlnverse.eval.running import harness

    expected = {"Agent": agent.Agent, "EpisodeInfo": agent.EpisodeInfo, "EvalConfig": harness.EvalConfig,
                "evaluate": harness.evaluate, "Track": tracks.Track, "register_track": tracks.register_track,
                "register_agent": registry.register_agent, "make_agent": registry.make_agent}
    assert {name: getattr(vlnverse, name) for name in expected} == expected
    assert set(vlnverse.__all__) <= set(dir(vlnverse))
    assert all(getattr(vlnverse, name) is not None for name in vlnverse.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        vlnverse.nope  # noqa: B018


def test_importing_vlnverse_imports_none_of_the_api():
    code = "import sys, vlnverse; print(sorted(m for m in sys.modules if m.startswith(('gymnasium', 'vlnverse.eval'))))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={"PYTHONPATH": str(REPO)})
    assert done.stdout.strip() == "[]"


def test_a_third_party_track_is_evaluated_by_name(bundled_dataset, tmp_path):
    track = vlnverse.Track("unit-test-track", "a track of this test", scale=0.01, seed=0, splits=("test",),
                           tasks=("coarse",), physics=("strict",), max_steps=3, eval_seed=5)
    vlnverse.register_track(track)
    try:
        with pytest.raises(RegistryError, match="already registered"):
            vlnverse.register_track(track)
        config = vlnverse.EvalConfig(dataset=str(bundled_dataset), out=str(tmp_path), agent="forward", plots=0,
                                     bootstrap=10)
        result = vlnverse.evaluate(config, track="unit-test-track")
    finally:
        from vlnverse.eval.tracks import TRACKS

        TRACKS._entries.pop(track.name)
    records = result.records
    assert records and {(r["split"], r["task"], r["physics"]) for r in records} == {("test", "coarse", "strict")}
    assert max(len(r["actions"]) for r in records) <= 3
    assert json.loads((tmp_path / "run.json").read_text())["run"]["seed"] == 5
    with pytest.raises(ConfigError, match="unknown track 'unit-test-track'; valid: .*mini"):
        vlnverse.get_track("unit-test-track")
