"""The ``isaac`` backend's Kit-free logic, run here on a fake Kit (tests/isaac/fake_kit.py):
label handling, contact bookkeeping and normals, rays from inside the agent, empty first
frames, teardown, one app and one live backend per process, the extension driver."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from tests.isaac import fake_kit
from tests.scene.builders import l_corridor
from vlnverse.errors import SimulationError
from vlnverse.scene import load_scene
from vlnverse.sim.agent import AgentSpec
from vlnverse.sim.backends import isaac_kit
from vlnverse.sim.backends.isaac import (
    AGENT_PATH,
    IsaacBackend,
    IsaacSettings,
    contacts_from_report,
    exit_distance,
    resolve_prim,
)
from vlnverse.sim.physics import PhysicsConfig
from vlnverse.sim.types import CameraRequest, Pose


@pytest.fixture
def kit_state(monkeypatch):
    """A clean process-level Kit state (no app, no live backend, no loop)."""
    monkeypatch.setattr(isaac_kit, "_state", {"app": None, "config": None, "app_closed": False, "live": None, "loop": None})


@pytest.fixture
def corridor(tmp_path):
    return load_scene(l_corridor(tmp_path / "corridor.usda"))


def _backend(scene, warmup: int = 2) -> IsaacBackend:
    backend = IsaacBackend(PhysicsConfig(mode="strict"), IsaacSettings(warmup_steps=warmup))
    backend.load_scene(scene)
    backend.spawn_agent(AgentSpec(radius=0.25), Pose(3.0, 0.6, 0.0, 0.0))
    return backend


def test_resolve_prim_walks_up_absolute_paths_and_gives_no_object_for_labels():
    index = {"/World/Walls/E": 4, "/World": 0}
    assert resolve_prim(index, "/World/Walls/E/mesh/part") == 4
    assert resolve_prim(index, "/World/Other") == 0
    assert resolve_prim(index, "/Elsewhere/x") == -1
    for label in ("BACKGROUND", "UNLABELLED", "", "World/Walls/E"):
        assert resolve_prim(index, label) == -1  # used to loop forever


@pytest.mark.parametrize("agent_first", [True, False])
def test_contact_normals_point_from_the_scene_to_the_agent_whichever_actor_it_is(agent_first):
    kit = fake_kit.FakeKit(agent_first=agent_first)
    kit.agent = fake_kit.FakeRigid(kit, AGENT_PATH, "agent")
    kit.agent.position = np.array([5.9, 0.6, 0.0])
    kit.physics_step(0.01)
    found = contacts_from_report(*kit.report, agent_path=AGENT_PATH, path_of=str,
                                 resolve=lambda p: resolve_prim({fake_kit.WALL: 4, fake_kit.FLOOR: 0}, p),
                                 ignore={0}, tolerance=0.005)
    (contact,) = found  # the floor is ignored
    assert contact.prim_index == 4 and contact.normal == (-1.0, 0.0, 0.0)
    assert contact.depth == pytest.approx(0.15)


def test_exit_distance_of_rays_leaving_the_agent_cylinder():
    centre, z = (1.0, 2.0), (0.1, 1.5)
    assert exit_distance(np.array([1.0, 2.0, 1.0]), np.array([1.0, 0.0, 0.0]), centre, 0.3, z) == pytest.approx(0.3)
    diagonal = np.array([1.0, 1.0, 0.0]) / np.sqrt(2)
    assert exit_distance(np.array([1.1, 2.0, 1.0]), diagonal, centre, 0.3, z) == pytest.approx(
        np.roots([1, np.sqrt(2) * 0.1, 0.01 - 0.09]).max())
    assert exit_distance(np.array([1.0, 2.0, 1.0]), np.array([0.0, 0.0, 1.0]), centre, 0.3, z) == pytest.approx(0.5)
    assert exit_distance(np.array([2.0, 2.0, 1.0]), np.array([1.0, 0.0, 0.0]), centre, 0.3, z) == 0.0  # outside
    assert exit_distance(np.array([1.0, 2.0, 2.0]), np.array([1.0, 0.0, 0.0]), centre, 0.3, z) == 0.0  # above


@pytest.mark.parametrize("agent_first", [True, False])
def test_contacts_survive_the_probe_and_are_read_again_after_a_teleport(monkeypatch, kit_state, corridor,
                                                                        agent_first):
    kit = fake_kit.install(monkeypatch, agent_first=agent_first)
    backend = _backend(corridor)
    try:
        backend.set_agent_pose(Pose(5.9, 0.6, 0.0, 0.0))  # 15 cm into the east wall (Tel-Hop's test)
        steps = kit.physics_steps
        (contact,) = backend.contacts()
        assert kit.physics_steps == steps + 1
        assert contact.prim_index == [p.path for p in corridor.prims].index(fake_kit.WALL)
        assert contact.normal == (-1.0, 0.0, 0.0) and contact.depth == pytest.approx(0.15)
        assert backend.agent_pose().x == pytest.approx(5.9)  # depenetration was undone
        assert backend.contacts() == [contact] and kit.physics_steps == steps + 1  # kept, not re-read
        backend.set_agent_pose(Pose(3.0, 0.6, 0.0, 0.0))
        assert backend.contacts() == [] and kit.physics_steps == steps + 2

        backend.set_agent_pose(Pose(5.6, 0.6, 0.0, 0.0))
        result = backend.move(np.tile([[1.0, 0.0, 0.0]], (10, 1)))  # drives into the wall
        assert result.contacts and result.contacts[0].normal == (-1.0, 0.0, 0.0)
        assert backend.contacts() == result.contacts
    finally:
        backend.close()


def test_render_waits_for_non_empty_frames_and_labels_name_no_object(monkeypatch, kit_state, corridor):
    kit = fake_kit.install(monkeypatch)
    backend = _backend(corridor, warmup=3)
    try:
        request = CameraRequest((3.0, 0.6, 1.25), 0.0, 0.0, 8, 6, 90.0, 0.05, 20.0, rgb=True, depth=True, instance=True)
        updates = kit.updates
        (frame,) = backend.render([request])
        assert kit.updates - updates == 3  # warm-up frames
        assert kit.captures == 2  # the first capture came back empty and was not used
        assert frame.rgb.shape == (6, 8, 3) and frame.depth.shape == (6, 8)
        wall = [p.path for p in corridor.prims].index(fake_kit.WALL)
        assert set(np.unique(frame.instance)) == {-1, wall}  # BACKGROUND and UNLABELLED are -1
        assert frame.instance[0, 0] == -1
    finally:
        backend.close()


def test_rays_start_outside_the_agent_collider(monkeypatch, kit_state, corridor):
    kit = fake_kit.install(monkeypatch)
    backend = _backend(corridor)
    try:
        fraction, prims = backend.cast_rays(np.array([[3.0, 0.6, 1.0]]), np.array([[7.0, 0.6, 1.0]]))
        assert fraction[0] == pytest.approx(3.0 / 4.0) and prims[0] == [p.path for p in corridor.prims].index(fake_kit.WALL)
        assert kit.ray_origins[-1][0] == pytest.approx(3.25, abs=1e-3)  # started at the cylinder's side
    finally:
        backend.close()


def test_close_releases_everything_but_the_app_and_keeps_the_scene_file(monkeypatch, kit_state, corridor):
    kit = fake_kit.install(monkeypatch)
    backend = _backend(corridor)
    backend.render([CameraRequest((3.0, 0.6, 1.25), 0.0, 0.0, 8, 6, 90.0, 0.05, 20.0, rgb=True)])
    stage = kit.stage
    assert stage.GetPrimAtPath(AGENT_PATH) and stage.GetSessionLayer().GetPrimAtPath(AGENT_PATH)
    backend.close()
    backend.close()  # idempotent
    names = [entry[0] for entry in kit.log]
    assert names.count("detach") == 3 and names.count("destroy") == 1
    assert names.index("detach") < names.index("destroy") < names.index("stop") < names.index("clear_instance")
    assert ("scene.clear", True) in kit.log and ("capture_on_play", False) in kit.log
    assert not stage.GetPrimAtPath("/World/VLNVerse")  # session-layer prims removed
    assert not stage.GetRootLayer().dirty  # neither we nor the World wrote into the scene file
    assert stage.GetPrimAtPath("/World/Walls/E")
    with pytest.raises(SimulationError, match="closed"):
        backend.agent_pose()


def test_one_live_backend_per_process(monkeypatch, kit_state, corridor):
    fake_kit.install(monkeypatch)
    first = _backend(corridor)
    with pytest.raises(SimulationError, match="already live"):
        IsaacBackend(PhysicsConfig())
    first.close()
    second = _backend(corridor)  # the app and the process are still usable
    second.close()


def test_the_app_is_started_once_and_closed_at_exit(monkeypatch, kit_state):
    started = []

    class SimulationApp:
        def __init__(self, config):
            started.append(config)

        def close(self):
            started.append("closed")

    monkeypatch.setitem(__import__("sys").modules, "isaacsim", fake_kit._module("isaacsim", SimulationApp=SimulationApp))
    exits = []
    monkeypatch.setattr(isaac_kit.atexit, "register", exits.append)
    isaac_kit.start_app({"headless": True})
    isaac_kit.start_app({"headless": True})  # the same app
    assert started == [{"headless": True}] and exits == [isaac_kit.close_app]
    exits[0]()
    assert started[-1] == "closed"
    with pytest.raises(SimulationError, match="cannot be restarted"):
        isaac_kit.start_app({"headless": True})


def test_scenes_without_usd_core_name_the_usd_extra(monkeypatch, tmp_path):
    from vlnverse.errors import DependencyNotInstalled

    path = l_corridor(tmp_path / "corridor.usda")
    monkeypatch.setitem(__import__("sys").modules, "pxr", None)  # as on the isaac install path before Kit
    with pytest.raises(DependencyNotInstalled, match=r"vlnverse\[usd\]"):
        load_scene(path)


def test_inside_kit_without_a_bound_loop_the_backend_says_how(monkeypatch, kit_state, corridor):
    fake_kit.install(monkeypatch, standalone=False)
    with pytest.raises(SimulationError, match="bind_kit_loop"):
        IsaacBackend(PhysicsConfig())
    assert isaac_kit._state["live"] is None


def test_extension_driver_runs_on_kit_loop_from_a_worker_thread(monkeypatch, kit_state, corridor):
    """Inside the app, the backend is used from a worker thread; every Kit operation runs
    as a coroutine on Kit's loop (async World init/reset, async captures), never blocking it."""
    kit = fake_kit.install(monkeypatch, standalone=False)
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    kit_thread = threading.Thread(target=lambda: (asyncio.set_event_loop(loop), loop.call_soon(ready.set),
                                                  loop.run_forever()), daemon=True)
    kit_thread.start()
    ready.wait(5)
    asyncio.run_coroutine_threadsafe(_bind(loop), loop).result(5)
    try:
        backend = _backend(corridor)
        threads = []
        original = kit.physics_step
        monkeypatch.setattr(kit, "physics_step", lambda dt: (threads.append(threading.current_thread()), original(dt)))
        backend.move(np.zeros((2, 3)))
        frame = backend.render([CameraRequest((3.0, 0.6, 1.25), 0.0, 0.0, 8, 6, 90.0, 0.05, 20.0, rgb=True)])[0]
        assert frame.rgb.shape == (6, 8, 3)
        assert set(threads) == {kit_thread}
        names = [entry[0] for entry in kit.log]
        assert "initialize_simulation_context_async" in names and "reset_async" in names and "reset" not in names
        assert kit.settings["/app/player/playSimulations"] is False  # Kit frames do not step physics
        # On Kit's own thread the backend refuses to block the loop it needs.
        refused = asyncio.run_coroutine_threadsafe(_call_on_loop(backend.agent_pose), loop).result(5)
        assert isinstance(refused, SimulationError) and "worker thread" in str(refused)
        backend.close()
        assert kit.settings["/app/player/playSimulations"] is True
    finally:
        loop.call_soon_threadsafe(loop.stop)
        kit_thread.join(5)
        loop.close()


async def _bind(loop):
    isaac_kit.bind_kit_loop(loop)


async def _call_on_loop(fn):
    try:
        return fn()
    except SimulationError as exc:
        return exc


def test_eval_worker_keeps_one_isaac_env(monkeypatch):
    from vlnverse.eval.running import worker

    monkeypatch.setattr("vlnverse.sim.backend.resolve_backend", lambda name: "isaac" if name != "bullet" else name)
    assert worker.env_cache_size("isaac") == 1 and worker.env_cache_size("auto") == 1
    assert worker.env_cache_size("bullet") == worker.ENV_CACHE_SIZE == 2
