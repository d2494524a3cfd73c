"""The ``isaac`` backend: its documented error without Isaac Sim, and (with Isaac Sim) a
full episode compared against the embedded backend.

Tests marked ``isaac`` run only where ``isaacsim`` is importable (an RTX machine with
``pip install 'vlnverse[isaac]'``); see the README section "Isaac Sim".
"""

from __future__ import annotations

import logging
import subprocess
import sys

import numpy as np
import pytest

from tests.cli_errors import one_error_line
from tests.scene.builders import l_corridor
from vlnverse.errors import ConfigError, DependencyNotInstalled
from vlnverse.isaac_ui.scenes import bundled_scene_dir, scan_folder
from vlnverse.sim.backend import BACKENDS, create_backend, resolve_backend
from vlnverse.sim.physics import PhysicsConfig

HAS_ISAAC = __import__("importlib").util.find_spec("isaacsim") is not None
no_isaac = pytest.mark.skipif(HAS_ISAAC, reason="checks the behaviour without Isaac Sim")


def test_importing_the_backend_imports_no_kit_module_and_no_pxr():
    """Kit must be the first to load USD: pxr imported before SimulationApp is a second runtime."""
    code = (
        "import sys, vlnverse.sim.backends.isaac, vlnverse.sim.backends.isaac_usd, vlnverse.isaac_ui.teleop;"
        "import vlnverse.envs.nav_env, vlnverse.eval.running.worker, vlnverse.isaac_ui.agent_run;"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('omni', 'isaacsim', 'carb', 'pxr')"
        " and not m.startswith('omni.asset_validator')];"
        "print(','.join(bad))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


def test_registry_isaac_entry_points_at_this_backend():
    from vlnverse.sim.backends.isaac import IsaacBackend

    assert BACKENDS.get("isaac") is IsaacBackend


@no_isaac
def test_isaac_without_isaac_sim_raises_dependency_not_installed():
    from vlnverse.sim.backends.isaac import IsaacBackend

    ok, why = IsaacBackend.available()
    assert not ok and "pip install 'vlnverse[isaac]'" in why
    with pytest.raises(DependencyNotInstalled) as excinfo:
        IsaacBackend(PhysicsConfig())
    message = str(excinfo.value)
    assert "isaacsim is not installed" in message and "pip install 'vlnverse[isaac]'" in message
    assert isinstance(excinfo.value, ImportError)
    with pytest.raises(ConfigError, match=r"pip install 'vlnverse\[isaac\]'"):
        create_backend("isaac", PhysicsConfig())


@no_isaac
def test_auto_falls_back_to_bullet_with_a_log_line(caplog):
    with caplog.at_level(logging.INFO, logger="vlnverse.sim.backend"):
        assert resolve_backend("auto") == "bullet"
    assert any("isaac unavailable" in r.getMessage() and "bullet" in r.getMessage() for r in caplog.records)


@no_isaac
def test_eval_backend_isaac_is_one_line_and_writes_nothing(tmp_path):
    """`vlnverse eval --backend isaac` (docs/isaac_sim.md) without Isaac Sim: one line naming
    the install command, exit 2, and no run folder left behind."""
    from tests.tasks.house import build_scene_dir
    from vlnverse.tasks.datagen import DatagenConfig, run_datagen
    from vlnverse.tasks.generate import GenerationConfig

    dataset = tmp_path / "ds"
    run_datagen(DatagenConfig(scenes=str(build_scene_dir(tmp_path / "scenes", 1)), out=str(dataset),
                              generation=GenerationConfig(per_scene=1, tasks=("coarse",))))
    out = tmp_path / "run"
    result = subprocess.run([sys.executable, "-m", "vlnverse", "eval", "--dataset", str(dataset), "--agent", "oracle",
                             "--backend", "isaac", "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    assert "pip install 'vlnverse[isaac]'" in one_error_line(result.stderr)
    assert not out.exists()


# --------------------------------------------------------------------------- with Isaac Sim


def _scene_path(tmp_path):
    bundled = scan_folder(bundled_scene_dir(), "bundled", recursive=False)
    return bundled[0].path if bundled else l_corridor(tmp_path / "corridor.usda")


def _run_oracle(scene, backend: str, physics: str, start, goal) -> dict:
    from vlnverse.envs.nav_env import NavEnv

    env = NavEnv(scene, backend=backend, physics=physics, action_space="discrete", sensors=("rgb", "depth"),
                 start=start, goal=goal, goal_radius=1.0)
    try:
        obs, info = env.reset(seed=0)
        assert obs["rgb"].shape[-1] == 3 and np.isfinite(obs["depth"]).all()
        for _ in range(env.max_episode_steps):
            obs, _, terminated, truncated, info = env.step(info["oracle_action"])
            if terminated or truncated:
                break
        return info
    finally:
        env.close()


@pytest.mark.isaac
@pytest.mark.parametrize("physics", ["strict", "tel_hop"])
def test_oracle_reaches_goal_with_metrics_matching_the_embedded_backend(tmp_path, physics):
    from vlnverse.envs.nav_env import NavEnv

    scene = _scene_path(tmp_path)
    probe = NavEnv(scene, backend="bullet", physics=physics, min_goal_distance=3.0)
    try:
        _, info = probe.reset(seed=7)
        start = (*info["pose"][:2], float(info["pose"][3]))
        goal = tuple(probe.episode.goals[0].position[:2])
    finally:
        probe.close()
    embedded = _run_oracle(scene, "bullet", physics, start, goal)
    isaac = _run_oracle(scene, "isaac", physics, start, goal)
    assert embedded["success"] and isaac["success"]
    assert isaac["fail_reason"] is None
    assert abs(isaac["distance_to_goal"] - embedded["distance_to_goal"]) < 0.5
    assert isaac["path_length"] == pytest.approx(embedded["path_length"], rel=0.15)
    assert abs(isaac["steps"] - embedded["steps"]) <= max(3, 0.15 * embedded["steps"])
    assert isaac["collisions"] == embedded["collisions"] == 0


@pytest.mark.isaac
def test_isaac_backend_primitives_on_a_corridor(tmp_path):
    from vlnverse.scene import load_scene
    from vlnverse.sim.agent import AgentSpec
    from vlnverse.sim.types import CameraRequest, Pose

    scene = load_scene(l_corridor(tmp_path / "corridor.usda"))
    backend = create_backend("isaac", PhysicsConfig(mode="slide"))
    try:
        backend.load_scene(scene)
        backend.spawn_agent(AgentSpec(), Pose(0.6, 0.6, 0.0, 0.0))
        result = backend.move(np.tile([[0.5, 0.0, 0.0]], (30, 1)))
        assert result.poses[-1, 0] == pytest.approx(0.6 + 0.5, abs=0.1)
        backend.set_agent_pose(Pose(1.0, 0.6, 0.0, 1.0))
        assert backend.agent_pose().yaw == pytest.approx(1.0, abs=1e-3)
        (frame,) = backend.render([CameraRequest((1.0, 0.6, 1.25), 0.0, 0.0, 64, 48, 90.0, 0.05, 20.0,
                                                 rgb=True, depth=True, instance=True)])
        assert frame.rgb.shape == (48, 64, 3) and frame.depth.shape == (48, 64)
        assert (frame.depth > 0).all() and (frame.depth <= 20.0).all()
        assert (frame.instance >= -1).all() and (frame.instance >= 0).any()
        fraction, prims = backend.cast_rays(np.array([[1.0, 0.6, 1.0]]), np.array([[1.0, -5.0, 1.0]]))
        assert 0 < fraction[0] < 1 and prims[0] >= 0  # the corridor wall
    finally:
        backend.close()
        backend.close()
