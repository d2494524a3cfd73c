"""Errors keep their type and message across process boundaries (eval workers send them back)."""

import pickle

from vlnverse.errors import DependencyNotInstalled, SceneError


def test_errors_survive_pickling():
    missing = DependencyNotInstalled("ray", extra="ray", purpose="--executor ray")
    back = pickle.loads(pickle.dumps(missing))
    assert type(back) is DependencyNotInstalled and str(back) == str(missing)
    assert (back.package, back.extra, back.purpose) == ("ray", "ray", "--executor ray")
    assert isinstance(back, ImportError)
    scene = pickle.loads(pickle.dumps(SceneError("scene.usd: no floor")))
    assert type(scene) is SceneError and str(scene) == "scene.usd: no floor"
