"""The OpenGL renderer (headless EGL on llvmpipe): agreement with TinyRenderer, ids, poses,
determinism across processes and thread counts, and the fallback to ``tiny``."""

import hashlib
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from vlnverse.errors import ConfigError
from vlnverse.scene import load_scene
from vlnverse.sim import DepthSensor, Pose, RGBSensor, SemanticSensor, Simulator
from vlnverse.sim.gl import context
from vlnverse.sim.gl.lighting import room_lighting
from vlnverse.sim.gl.textures import MATERIALS, material_class, prim_materials, texture_layers
from vlnverse.sim.testing import Box, box_room

SCENE = Path(__file__).resolve().parents[2] / "assets" / "scenes" / "scene_0000" / "scene.usdc"
CAMERAS = {"rgb": RGBSensor(), "depth": DepthSensor(width=224, height=224, max_depth=30.0, normalize=False),
           "semantic": SemanticSensor()}
#: Views of the bundled scene: (x, y, yaw) on its floor.
VIEWS = ((3.26, 5.4, 0.0), (3.26, 5.4, 2.1), (1.5, 2.5, 1.0), (4.2, 9.3, -1.6))

needs_gl = pytest.mark.skipif(context.resolve_renderer("auto") != "gl", reason="no headless EGL here")


@pytest.fixture(scope="module")
def bundled():
    if not SCENE.is_file():
        pytest.skip(f"no bundled scene {SCENE}")
    return load_scene(SCENE)


def observe(scene, renderer: str, views=VIEWS) -> list[dict]:
    with Simulator(scene, sensors=CAMERAS, renderer=renderer) as sim:
        out = []
        for x, y, yaw in views:
            sim.backend.set_agent_pose(Pose(x, y, 0.0, yaw))
            out.append(sim.observe())
        return out


@needs_gl
def test_gl_depth_and_semantics_agree_with_tiny(bundled):
    gl, tiny = observe(bundled, "gl"), observe(bundled, "tiny")
    for a, b in zip(gl, tiny, strict=True):
        close = np.abs(a["depth"] - b["depth"]) <= 0.01
        assert close.mean() >= 0.99
        assert (a["semantic"] == b["semantic"]).mean() >= 0.99
        assert a["rgb"].shape == b["rgb"].shape and a["rgb"].dtype == np.uint8


@needs_gl
def test_instance_at_the_centre_follows_a_movable_object_moved_by_physics():
    crate = Box("crate_0", (3.0, 1.7, 0.0), (3.6, 2.3, 1.6), (0.7, 0.1, 0.1), "crate", movable=True)
    with Simulator(box_room(6.0, 4.0, furniture=[crate]), sensors={"semantic": SemanticSensor()},
                   renderer="gl", pose=Pose(1.0, 2.0, 0.0, 0.0)) as sim:
        centre = sim.observe()["semantic"][112, 112]
        assert sim.instances.instances[centre].object_id == "crate_0"
        backend = sim.backend
        uid = next(iter(backend._world.movable))
        index = list(backend._managed).index(uid)
        backend._wake(index)  # dynamic, as when the agent comes near
        backend._p.resetBasePositionAndOrientation(uid, [3.3, 3.5, 0.8], [0, 0, 0, 1],  # as a push may leave it
                                                   physicsClientId=backend.client_id)
        backend._set_dormant(index)  # at rest and out of reach again before the next frame
        semantic = sim.observe()["semantic"]
        assert sim.instances.instances[semantic[112, 112]].category == "wall"
        assert "crate_0" in {sim.instances.instances[i].object_id for i in np.unique(semantic)}


DIGEST = """
import hashlib, sys
from vlnverse.scene import load_scene
from vlnverse.sim import DepthSensor, Pose, RGBSensor, SemanticSensor, Simulator
sensors = {"rgb": RGBSensor(), "depth": DepthSensor(width=224, height=224, normalize=False),
           "semantic": SemanticSensor()}
with Simulator(load_scene(sys.argv[1]), sensors=sensors, renderer="gl", pose=Pose(3.26, 5.4, 0.0, 2.1)) as sim:
    obs = sim.observe()
print(hashlib.sha256(b"".join(obs[k].tobytes() for k in sorted(obs))).hexdigest())
"""


@needs_gl
def test_bytes_are_equal_across_processes_and_thread_counts(bundled):
    runs = [subprocess.Popen([sys.executable, "-c", DIGEST, str(SCENE)], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "LP_NUM_THREADS": threads}) for threads in ("0", "2")]
    digests = [run.communicate(timeout=120)[0].strip().splitlines()[-1] for run in runs]
    assert all(run.returncode == 0 for run in runs)
    with Simulator(bundled, sensors=CAMERAS, renderer="gl", pose=Pose(3.26, 5.4, 0.0, 2.1)) as sim:
        obs = sim.observe()
    here = hashlib.sha256(b"".join(obs[k].tobytes() for k in sorted(obs))).hexdigest()
    assert digests == [here, here]


@needs_gl
def test_other_threads_render_the_same_images(bundled):
    from concurrent.futures import ThreadPoolExecutor

    with Simulator(bundled, sensors=CAMERAS, renderer="gl", pose=Pose(3.26, 5.4, 0.0, 2.1)) as sim:
        here = sim.observe()
        with ThreadPoolExecutor(2) as pool:
            there = list(pool.map(lambda _: sim.observe(), range(2)))
    for obs in there:
        assert all(np.array_equal(obs[k], here[k]) for k in here)


def _render_in_child(scene, queue) -> None:
    with Simulator(scene, sensors={"rgb": RGBSensor()}, renderer="gl", pose=Pose(3.26, 5.4, 0.0, 2.1)) as sim:
        queue.put(sim.observe()["rgb"])


@needs_gl
def test_a_forked_child_renders_after_its_parent_did(bundled):
    import multiprocessing

    with Simulator(bundled, sensors={"rgb": RGBSensor()}, renderer="gl", pose=Pose(3.26, 5.4, 0.0, 2.1)) as sim:
        here = sim.observe()["rgb"]
    fork = multiprocessing.get_context("fork")
    queue = fork.Queue()
    child = fork.Process(target=_render_in_child, args=(bundled, queue))
    child.start()
    try:
        there = queue.get(timeout=90)  # a child of a process with llvmpipe threads would hang here
    finally:
        child.join(timeout=10)
        if child.is_alive():
            child.kill()
    assert np.array_equal(there, here)


NEW_SHADERS_AFTER_FORK = """
import os, sys, uuid
from vlnverse.sim.gl import context

def compile_new_program(ctx):  # a source never compiled before: a shader-cache miss
    k = 1.0 + uuid.uuid4().int % 10**6 / 1e7
    ctx.program(vertex_shader=f"#version 330\\nin vec3 p; void main() {{ gl_Position = vec4(p * {k}, 1.0); }}",
                fragment_shader=f"#version 330\\nout vec4 c; void main() {{ c = vec4({k}); }}")

with context.current_context() as ctx:
    compile_new_program(ctx)
print(sorted(open(f"/proc/self/task/{t}/comm").read().strip() for t in os.listdir("/proc/self/task")))
sys.stdout.flush()
child = os.fork()
if child == 0:
    context._state["pid"] = None  # its own context, as a forked pool worker makes
    for _ in range(6):
        with context.current_context() as ctx:
            compile_new_program(ctx)
    os._exit(0)
print(os.waitpid(child, 0)[1])
"""


@needs_gl
def test_a_forked_child_compiles_new_shaders_after_its_parent_did():
    """Mesa's disk shader cache (off here) runs a writer thread; a child forked while it
    waited hung for good in its first compile of a new shader."""
    environ = {k: v for k, v in os.environ.items() if k != "MESA_SHADER_CACHE_DISABLE"}
    run = subprocess.run([sys.executable, "-c", NEW_SHADERS_AFTER_FORK], capture_output=True, text=True,
                         timeout=90, env=environ)
    assert run.returncode == 0, run.stderr[-2000:]
    threads, status = run.stdout.strip().splitlines()
    assert "disk$" not in threads
    assert status == "0"


THREADED_PARENT = """
import functools, hashlib, multiprocessing, sys
import vlnverse
from vlnverse.envs.vector import async_vector_env
from vlnverse.sim.gl import context

make = functools.partial(vlnverse.make, scene=sys.argv[1], sensors=("rgb",), start=(3.26, 5.4, 2.1), goal=(1.5, 2.5))
env = make()
digest = lambda rgb: hashlib.sha256(rgb.tobytes()).hexdigest()
here = digest(env.reset(seed=0)[0]["rgb"])

def forked(queue):
    try:
        make().reset(seed=0)
        queue.put("rendered")
    except Exception as exc:
        queue.put(type(exc).__name__)

fork = multiprocessing.get_context("fork")
queue = fork.Queue()
child = fork.Process(target=forked, args=(queue,))
child.start()
print(context.start_method(), queue.get(timeout=60))
child.join()
envs = async_vector_env([make])
print(digest(envs.reset(seed=0)[0]["rgb"][0]) == here)
envs.close()
"""


@pytest.mark.slow
@needs_gl
def test_workers_of_a_parent_with_rasterizer_threads_start_clean_and_render(bundled):
    """A parent rendering on llvmpipe threads: a plain fork child is refused at once (it
    would hang); vector-env workers come from a forkserver and render the parent's bytes."""
    run = subprocess.run([sys.executable, "-c", THREADED_PARENT, str(SCENE)], capture_output=True, text=True,
                         timeout=150, env={**os.environ, "LP_NUM_THREADS": "2"})
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["forkserver", "SimulationError", "True"]


def test_auto_falls_back_to_tiny_without_egl_and_says_so_once(monkeypatch, caplog):
    monkeypatch.setenv(context.DISABLE_ENV, "1")
    monkeypatch.setattr(context, "_state", {"pid": None, "context": None, "error": None, "logged": False,
                                            "threads": None})
    scene = box_room()
    with caplog.at_level(logging.INFO, logger="vlnverse.sim.gl.context"):
        for _ in range(2):
            with Simulator(scene, sensors=("rgb",), renderer="auto") as sim:
                assert sim.backend.renderer == "tiny"
                assert sim.observe()["rgb"].shape == (224, 224, 3)
    lines = [r.getMessage() for r in caplog.records if r.name == "vlnverse.sim.gl.context"]
    assert len(lines) == 1 and "'tiny'" in lines[0] and context.DISABLE_ENV in lines[0]
    with pytest.raises(ConfigError, match="renderer 'gl' is unavailable.*VLNVERSE_DISABLE_EGL"):
        Simulator(scene, sensors=("rgb",), renderer="gl")


def test_unknown_renderer_is_a_config_error():
    with pytest.raises(ConfigError, match="valid: auto, gl, tiny"):
        Simulator(box_room(), renderer="opengl")


def test_materials_textures_and_room_lights(bundled):
    assert [material_class(n) for n in ("wood_dark_brown", "mirror_silver", "Carpet-Gray", "foam_x", "")] == [
        "wood", "glass", "carpet", None, None]
    looks = {(p.material, c) for p, c in zip(bundled.prims, prim_materials(bundled), strict=True) if p.material}
    assert looks and all(c == material_class(look) for look, c in looks if material_class(look))
    room = box_room()  # no looks: classes by structure
    by_name = dict(zip((p.name for p in room.prims), prim_materials(room), strict=True))
    assert by_name["Floor"] == "wood" and by_name["Wall_0"] == "plaster"
    layers = texture_layers(64)
    assert layers.shape == (len(MATERIALS), 64, 64) and np.array_equal(layers, texture_layers(64))
    assert np.all(np.abs(layers.reshape(len(MATERIALS), -1).mean(axis=1) - 128) < 20)
    lighting = room_lighting(bundled)
    for index, room in enumerate(bundled.rooms):  # each room's lights sit over its own floor
        first, count = lighting.ranges[index + 1]
        assert count >= 1
        for x, y, _z, _power in lighting.lights[first:first + count]:
            cell = ((np.array([y, x]) - lighting.origin[::-1]) / lighting.resolution).astype(int)
            assert lighting.room_map[cell[0], cell[1]] == index + 1, room.room_id
