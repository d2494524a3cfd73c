"""Pretrained encoders: the RGB trunk learns depth from pre-rendered frames, the depth trunk
comes from the waypoint predictor, and an imitation run started from them says so."""

from __future__ import annotations

import dataclasses

import pytest

torch = pytest.importorskip("torch")

from vlnverse.errors import ConfigError  # noqa: E402
from vlnverse.learning.pretrain import ENCODERS, EncoderPretrainConfig, pretrain_encoders  # noqa: E402
from vlnverse.weights import load_weights  # noqa: E402

from .test_imitation import config as imitation_config  # noqa: E402


@pytest.fixture(scope="module")
def encoders(train_frames, augmentation, tmp_path_factory):
    """Pretrained on the bundled train home; the augmentation home held out."""
    frames_config, _ = train_frames
    out = tmp_path_factory.mktemp("encoders")
    history = pretrain_encoders(EncoderPretrainConfig(frames=frames_config.out, out=str(out), channels=(4, 8, 8),
                                                      augment=(str(augmentation[0]),), epochs=12, batch_size=16,
                                                      lr=3e-3, frame_stride=1, val_scenes=1))
    return out / ENCODERS, history


def test_rgb_trunk_learns_depth_and_the_file_holds_both_trunks(encoders):
    path, history = encoders
    assert history[-1].train_l1 < 0.9 * history[0].train_l1  # two homes are too few to beat the mean depth
    assert 0 < history[-1].val_l1 < 1 and 0 < history[-1].val_l1_constant < 1  # map on the other (see the docs)
    state = load_weights(path)
    assert state["kind"] == "encoders" and state["trunks"] == {"rgb": "cnn", "depth": "waypoints"}
    assert any(k.startswith("rgb_encoder.trunk.") for k in state["state_dict"])
    assert any(k.startswith("depth_encoder.trunk.1.") for k in state["state_dict"])
    assert state["depth_source"]["waypoint_predictor"]


def test_imitation_from_the_encoders_starts_from_them_and_is_labelled(encoders, train_frames, fine_dataset, tmp_path):
    from vlnverse.eval.registry import augmented_label
    from vlnverse.learning.imitation import train_imitation

    path, _ = encoders
    frozen = imitation_config(train_frames, fine_dataset, tmp_path / "frozen", epochs=1, encoders=str(path))
    frozen = dataclasses.replace(frozen, model=dataclasses.replace(frozen.model, freeze_encoders=True))
    run = train_imitation(frozen)
    checkpoint = load_weights(run.history[0].checkpoint)
    pretrained = load_weights(path)["state_dict"]
    assert checkpoint["model_config"]["depth_encoder"] == "waypoints"
    for key, value in pretrained.items():
        assert torch.equal(checkpoint["model"][key], value), key
    data = checkpoint["training_data"]
    assert data["encoders"]["kind"] == "encoders" and data["augment"] == []
    assert augmented_label("cma", data) == "cma +aug"
    plain = imitation_config(train_frames, fine_dataset, tmp_path / "plain", epochs=1)
    assert plain.fingerprint() != frozen.fingerprint()


def test_bad_encoder_files_are_refused(train_frames, fine_dataset, tmp_path):
    from vlnverse.learning.imitation import train_imitation

    other = tmp_path / "other.pt"
    torch.save({"kind": "cma", "model": {}}, other)
    with pytest.raises(ConfigError, match="not an encoders checkpoint"):
        train_imitation(imitation_config(train_frames, fine_dataset, tmp_path / "run", encoders=str(other)))
    small = tmp_path / "small.pt"
    torch.save({"kind": "encoders", "trunks": {"rgb": "cnn", "depth": "cnn"}, "channels": [4, 8, 8], "rgb_size": 16,
                "depth_size": 16, "state_dict": {}, "pretrained_on": {"augment": []}}, small)
    with pytest.raises(ConfigError, match="pretrained on rgb_size 16"):
        train_imitation(imitation_config(train_frames, fine_dataset, tmp_path / "run2", encoders=str(small)))


def test_cli_pretrains_and_train_needs_a_dataset(train_frames, augmentation, tmp_path, capsys):
    import json

    from vlnverse.cli import main

    frames_config, _ = train_frames
    code = main(["train", "encoders", "--frames", frames_config.out, "--augment", str(augmentation[0]), "--out",
                 str(tmp_path / "enc"), "--epochs", "1", "--depth-trunk", "cnn", "--held-out-homes", "1", "--json"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["encoders"].endswith(ENCODERS) and len(summary["history"]) == 1
    assert load_weights(summary["encoders"])["trunks"]["depth"] == "cnn"
    assert main(["train", "cma", "--out", str(tmp_path / "run")]) == 2
    assert "needs --dataset" in capsys.readouterr().err
    assert main(["train", "encoders", "--out", str(tmp_path / "enc2")]) == 2
    assert "--frames" in capsys.readouterr().err
