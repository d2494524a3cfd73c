"""Errors keep their type and message across process boundaries (eval workers send them back)."""

import pickle

import pytest

from vlnverse.errors import DatasetError, DependencyNotInstalled, SceneError


def test_errors_survive_pickling():
    missing = DependencyNotInstalled("ray", extra="ray", purpose="--executor ray")
    back = pickle.loads(pickle.dumps(missing))
    assert type(back) is DependencyNotInstalled and str(back) == str(missing)
    assert (back.package, back.extra, back.purpose) == ("ray", "ray", "--executor ray")
    assert isinstance(back, ImportError)
    scene = pickle.loads(pickle.dumps(SceneError("scene.usd: no floor")))
    assert type(scene) is SceneError and str(scene) == "scene.usd: no floor"


def test_global_flags_work_after_the_subcommand(tmp_path, capsys):
    from vlnverse.cli import main

    args = ["eval", "--dataset", str(tmp_path / "none"), "--agent", "forward", "--out", str(tmp_path / "out")]
    assert main(args) == 2
    assert capsys.readouterr().err.startswith("error: dataset ")
    with pytest.raises(DatasetError):  # --debug after the subcommand: raised with its traceback
        main([*args, "--debug"])
