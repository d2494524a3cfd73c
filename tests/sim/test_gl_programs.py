"""What makes a second env cheap to build: renderers share one compiled program per shader
source, each drawing with its own uniforms; the texture layers are built once per process;
with the GL renderer PyBullet's static bodies get no visual shapes (only TinyRenderer
draws them)."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from vlnverse.sim import Pose, RGBSensor, Simulator
from vlnverse.sim.gl import context, programs, shaders
from vlnverse.sim.gl.lighting import scene_lighting
from vlnverse.sim.gl.textures import texture_layers
from vlnverse.sim.testing import Box, box_room
from vlnverse.sim.types import CameraRequest

needs_gl = pytest.mark.skipif(context.resolve_renderer("auto") != "gl", reason="no headless EGL here")


def _sim(width: float) -> Simulator:
    # rooms of different sizes: one light and one room each (the same shader source), lit differently
    return Simulator(box_room(width, 4.0), sensors={"rgb": RGBSensor(width=64, height=64)}, renderer="gl",
                     pose=Pose(1.0, 2.0, 0.0, 0.0))


@needs_gl
def test_renderers_of_one_shader_source_share_a_program_and_draw_with_their_own_uniforms():
    with _sim(6.0) as a:
        a_first = a.observe()["rgb"].copy()
        with _sim(9.0) as b:
            shared = a.backend.gl_renderer._shared
            assert b.backend.gl_renderer._shared is shared and shared.users == 2
            b_shared = b.observe()["rgb"].copy()  # a's lights were on the program last
            a_again = a.observe()["rgb"]  # and now b's
            assert np.array_equal(a_again, a_first)
        assert shared.users == 1 and shared.key in programs._shared
    assert shared.key not in programs._shared  # the last user freed it
    with _sim(9.0) as b:
        assert np.array_equal(b_shared, b.observe()["rgb"])  # as drawn with a program of its own


def _lamps(count: int):
    """A room lit by its ceiling light and ``count`` lamps."""
    return box_room(6.0, 4.0, furniture=[Box(f"lamp_{i}", (1.0 + i, 1.0, 0.0), (1.3 + i, 1.3, 1.5), (0.9, 0.9, 0.8),
                                              category="floor_lamp") for i in range(count)])


def _rig_views() -> list[CameraRequest]:
    return [CameraRequest(position=(1.0, 2.0, 1.25), yaw=i * np.pi / 6, pitch=0.0, width=32, height=32, hfov_deg=90.0,
                          near=0.05, far=30.0, rgb=True, depth=False, instance=False) for i in range(12)]


@needs_gl
def test_scenes_of_different_light_counts_share_the_scene_and_rig_programs_compiled_once(monkeypatch):
    assert [len(scene_lighting(_lamps(n)).lights) for n in (0, 3)] == [1, 4]
    compiled = []
    with context.current_context() as ctx:
        make = type(ctx).program
        monkeypatch.setattr(type(ctx), "program", lambda self, **shaders_: compiled.append(shaders_) or make(self, **shaders_))
    views = _rig_views()
    with Simulator(_lamps(0), sensors={"rgb": RGBSensor(width=64, height=64)}, renderer="gl") as a:
        a_alone = a.observe()["rgb"].copy(), [f.rgb.copy() for f in a.backend.gl_renderer.render(views)]
        with Simulator(_lamps(3), sensors={"rgb": RGBSensor(width=64, height=64)}, renderer="gl") as b:
            b_image = b.observe()["rgb"].copy()
            b_rig = [f.rgb.copy() for f in b.backend.gl_renderer.render(views)]
            assert len(compiled) == 2  # the scene program and the rig's, for both scenes
            assert b.backend.gl_renderer._shared is a.backend.gl_renderer._shared
            assert b.backend.gl_renderer._shared_rig is a.backend.gl_renderer._shared_rig
            assert not np.array_equal(b_image, a_alone[0])  # the lamps light b
            a_again = a.observe()["rgb"], [f.rgb for f in a.backend.gl_renderer.render(views)]  # b's lights were last
            assert np.array_equal(a_again[0], a_alone[0])
            assert all(np.array_equal(x, y) for x, y in zip(a_again[1], a_alone[1], strict=True))
    with Simulator(_lamps(3), sensors={"rgb": RGBSensor(width=64, height=64)}, renderer="gl") as b:
        assert np.array_equal(b.observe()["rgb"], b_image)  # as drawn with programs of its own
        assert all(np.array_equal(f.rgb, r) for f, r in zip(b.backend.gl_renderer.render(views), b_rig, strict=True))


def test_uniform_arrays_grow_in_steps_to_fit_every_scene():
    assert [shaders.array_slots(n) for n in (0, 1, 64, 65, 200, 255)] == [64, 64, 64, 128, 256, 256]
    assert "lights[64]" in shaders.scene_fragment(64, 128) and "room_lights[128]" in shaders.scene_fragment(64, 128)


@needs_gl
def test_a_renderer_built_after_another_was_freed_draws_the_same_image():
    with _sim(6.0) as a:
        first = a.observe()["rgb"].copy()
    with _sim(6.0) as a:
        assert np.array_equal(a.observe()["rgb"], first)


def test_texture_layers_are_built_once_and_read_only():
    layers = texture_layers(32)
    assert texture_layers(32) is layers
    with pytest.raises(ValueError):
        layers[0, 0, 0] = 1


@needs_gl
def test_static_bodies_have_visual_shapes_only_for_tinyrenderer():
    def colours(renderer: str) -> list[tuple]:
        """The colour of each static body's visual (PyBullet's own white one, made from the
        collider, where we gave none)."""
        with Simulator(box_room(), sensors={"rgb": RGBSensor(width=32, height=32)}, renderer=renderer) as sim:
            backend = sim.backend
            statics = [uid for uid in backend._world.body_prim if uid not in backend._world.movable]
            return [tuple(round(c, 3) for shape in backend._p.getVisualShapeData(uid, physicsClientId=backend.client_id)
                          for c in shape[7]) for uid in statics]

    gl, tiny = colours("gl"), colours("tiny")
    assert len(gl) == len(tiny) > 0  # the same bodies (ids, physics) either way
    assert set(gl) <= {(), (1.0, 1.0, 1.0, 1.0)}
    assert any(c and c != (1.0, 1.0, 1.0, 1.0) for c in tiny)  # the scene's colours


THREADS_SCRIPT = """
import threading
from vlnverse.sim.gl import context, shaders
made, compiled = threading.Event(), threading.Event()
def make_then_wait():  # as an env build goes on after making the context
    context.gl_context()
    made.set()
    compiled.wait(60)
def compile_here():
    made.wait(60)
    with context.current_context() as ctx:
        ctx.program(vertex_shader=shaders.VERTEX, fragment_shader=shaders.FRAGMENT.replace(
            "N_LIGHTS", "1").replace("N_ROOMS", "1"))
    print("compiled")
    compiled.set()
threads = [threading.Thread(target=make_then_wait), threading.Thread(target=compile_here)]
[t.start() for t in threads]
[t.join() for t in threads]
"""


@needs_gl
def test_a_context_made_in_one_thread_compiles_programs_in_another_with_rasterizer_threads():
    """An eval worker (one rasterizer thread) builds its envs on several threads: whichever
    makes the process's context, the others compile and draw in it."""
    env = {**os.environ, "LP_NUM_THREADS": "1", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-c", THREADS_SCRIPT], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.split() == ["compiled"], done.stderr[-2000:]


def test_a_fresh_worker_with_rasterizer_threads_loads_shaders_from_the_disk_cache(monkeypatch):
    """Its pools start from a forkserver, so the cache's writer thread never sees a fork; a
    worker rasterizing in its calling thread may fork, and keeps the cache off, as does a
    worker forked after its parent rendered, or a user's setting."""
    cases = (("1", None, None, "false"), ("0", None, None, None), ("2", "true", None, "true"), ("1", None, 0, None))
    for threads, user, parent_threads, expected in cases:
        monkeypatch.setitem(context._state, "threads", parent_threads)
        monkeypatch.setenv(context.WORKER_THREADS_ENV, threads)
        monkeypatch.setenv("LP_NUM_THREADS", "0")
        if user is None:
            monkeypatch.delenv("MESA_SHADER_CACHE_DISABLE", raising=False)
        else:
            monkeypatch.setenv("MESA_SHADER_CACHE_DISABLE", user)
        context.worker_setup()
        assert os.environ.get("MESA_SHADER_CACHE_DISABLE") == expected, (threads, user, parent_threads)
