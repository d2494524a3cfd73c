"""Vector envs across processes, and envs built from USD files on disk."""

import functools
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from gymnasium.vector import AsyncVectorEnv

import vlnverse
from vlnverse import cache

from ..sim.usd_room import write_room_usd
from .conftest import SMALL_SENSORS


def test_env_from_a_usd_file(tmp_path):
    path = write_room_usd(tmp_path / "room.usda")
    env = vlnverse.make(scene=str(path), sensors={"semantic": {"kind": "semantic", "width": 32, "height": 32}},
                        physics="slide", start=(1.0, 2.0, 0.0), goal=(1.0, 3.0))
    obs, info = env.reset(seed=0)
    sim = env.unwrapped.sim
    centre = sim.instances.instances[obs["semantic"][16, 16]]
    assert (centre.object_id, centre.category) == ("table_0", "table")
    for _ in range(12):
        obs, reward, terminated, truncated, info = env.step(1)
        if info["contacts"]:
            break
    assert info["contact_categories"] == ("table",)
    assert info["pose"][0] == pytest.approx(3.0 - 0.3, abs=0.02)
    env.close()


def test_envs_of_one_process_share_a_parsed_scene_file_until_it_changes(tmp_path):
    path = write_room_usd(tmp_path / "room.usda")
    strict = vlnverse.make(scene=str(path), sensors=(), physics="strict")
    tel_hop = vlnverse.make(scene=str(path), sensors=(), physics="tel_hop")
    assert tel_hop.unwrapped.scene is strict.unwrapped.scene
    assert tel_hop.unwrapped.occupancy is strict.unwrapped.occupancy
    smaller_agent = vlnverse.make(scene=str(path), sensors=(), agent={"radius": 0.2})
    assert smaller_agent.unwrapped.occupancy is not strict.unwrapped.occupancy
    path.write_text(path.read_text().replace("living_room", "kitchen"))
    edited = vlnverse.make(scene=str(path), sensors=())
    assert edited.unwrapped.scene is not strict.unwrapped.scene
    assert [r.room_type for r in edited.unwrapped.scene.rooms] == ["kitchen"]
    cache.clear_memory()
    fresh = vlnverse.make(scene=str(path), sensors=())
    assert fresh.unwrapped.scene is not edited.unwrapped.scene
    for env in (strict, tel_hop, smaller_agent, edited, fresh):
        env.close()


def test_async_vector_env_runs_each_env_in_its_own_process(two_rooms):
    make_env = functools.partial(vlnverse.make, scene=two_rooms, sensors=SMALL_SENSORS, physics="slide")
    envs = AsyncVectorEnv([make_env, make_env])
    try:
        obs, infos = envs.reset(seed=[3, 4])
        assert obs["rgb"].shape == (2, 32, 32, 3) and obs["depth"].shape == (2, 32, 32, 1)
        assert not np.allclose(obs["pose"][0], obs["pose"][1])
        for _ in range(5):
            obs, rewards, terminated, truncated, infos = envs.step(np.asarray(infos["oracle_action"], dtype=np.int64))
        assert rewards.shape == (2,) and len(obs["instruction"]) == 2
        assert set(infos) >= {"geodesic_distance", "collisions", "oracle_action", "fail_reason"}
    finally:
        envs.close()


FRESH_PARENT = """
import functools, sys
import numpy as np
import vlnverse
from vlnverse.envs.vector import async_vector_env
from vlnverse.sim.gl import context

make = functools.partial(vlnverse.make, scene=sys.argv[1], sensors=("rgb",), start=(3.26, 5.4, 2.1), goal=(1.5, 2.5))
envs = async_vector_env([make, make])
try:
    rgb = envs.reset(seed=0)[0]["rgb"]
    print(context.resolve_renderer("auto"), rgb.shape[0], bool(rgb.any()) and bool(np.array_equal(rgb[0], rgb[1])))
finally:
    envs.close()
"""


def test_async_vector_env_renders_from_a_parent_that_has_not_rendered():
    """The start method is chosen while the parent has no GL context ('fork'), then gymnasium
    makes a probe env in the parent: the workers must still render (they used to refuse)."""
    scene = Path(__file__).resolve().parents[2] / "assets" / "scenes" / "scene_0000" / "scene.usdc"
    env = {k: v for k, v in os.environ.items() if k != "LP_NUM_THREADS"}
    run = subprocess.run([sys.executable, "-c", FRESH_PARENT, str(scene)], capture_output=True, text=True,
                         timeout=150, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    renderer, envs, same = run.stdout.split()[-3:]
    if renderer != "gl":
        pytest.skip("no headless EGL here (the tiny renderer has no llvmpipe threads)")
    assert (envs, same) == ("2", "True")
