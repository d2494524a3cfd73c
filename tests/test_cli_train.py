"""What ``vlnverse train`` suggests after a run: a track's own evaluation command when it trained
on a track's dataset, so the figures it gives compare with the track's results."""

from __future__ import annotations

import json

from vlnverse.cli.train import eval_command
from vlnverse.eval.tracks import get_track


def test_a_tracks_dataset_gets_the_tracks_eval_command(tmp_path):
    dataset = tmp_path / "dataset"
    dataset.mkdir()
    (dataset / "manifest.json").write_text(json.dumps({"config_hash": get_track("mini").config_hash}))
    command = eval_command(dataset, "cma", "RUN/cma/agent.yaml")
    assert command.startswith(f"vlnverse eval --dataset {dataset} --split val_seen,val_unseen,test "
                              "--task fine,coarse --max-steps 200 --agent cma --agent-config RUN/cma/agent.yaml "
                              "--out OUT  (the VLNVerse-mini (CPU track) selection")

    (dataset / "manifest.json").write_text(json.dumps({"config_hash": "0123456789abcdef"}))
    assert eval_command(dataset, "cma", "a.yaml") == f"vlnverse eval --dataset {dataset} --agent cma " \
                                                     "--agent-config a.yaml --out OUT"
    assert "--max-steps" not in eval_command(tmp_path / "no_such_dataset", "cma", "a.yaml")
