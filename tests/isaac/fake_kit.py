"""A stand-in for the slice of Kit / Isaac Sim the ``isaac`` backend calls, for tests here.

It follows the Isaac Sim 5.1 signatures the backend uses (``World``, ``SingleRigidPrim``,
``omni.physx`` contact reports and raycasts, replicator annotators) over a real usd-core
stage, with a toy physics: the agent moves by its velocity and touches one wall, the
corridor's east wall at x = 6. Contact normals follow PhysX: from the second actor of a
pair to the first. Install it with :func:`install` (a ``monkeypatch``), which puts the fake
modules in ``sys.modules`` and returns the :class:`FakeKit` holding their state.
"""

from __future__ import annotations

import builtins
import sys
import types
from dataclasses import dataclass, field

import numpy as np
from pxr import Usd, UsdGeom

WALL_X = 6.0
WALL = "/World/Walls/E"
FLOOR = "/World/FloorX"


@dataclass
class Point:
    position: tuple
    normal: tuple
    separation: float


@dataclass
class Header:
    actor0: str
    actor1: str
    collider0: str
    collider1: str
    contact_data_offset: int
    num_contact_data: int


@dataclass
class FakeKit:
    """State shared by the fake modules; tests read and steer it."""

    agent_first: bool = True
    stage: Usd.Stage | None = None
    physics_steps: int = 0
    updates: int = 0
    captures: int = 0
    report: tuple = ((), ())
    log: list = field(default_factory=list)
    agent: object = None
    radius: float = 0.25
    ray_origins: list = field(default_factory=list)
    settings: dict = field(default_factory=dict)

    def physics_step(self, dt: float) -> None:
        """Integrate the agent, push it out of the wall, report its contacts (PhysX order)."""
        self.physics_steps += 1
        agent = self.agent
        headers, data = [], []
        if agent is not None:
            agent.position = agent.position + agent.linear * dt
            depth = agent.position[0] + self.radius - WALL_X
            pairs = [(FLOOR, (0.0, 0.0, 1.0), 0.0)]
            if depth > -0.01:
                pairs.append((WALL, (-1.0, 0.0, 0.0), -max(depth, 0.0)))
                agent.position[0] = min(agent.position[0], WALL_X - self.radius)  # depenetration
            for other, towards_agent, separation in pairs:
                body = "/World/VLNVerse/Agent"
                first, second = (body, other) if self.agent_first else (other, body)
                normal = towards_agent if self.agent_first else tuple(-v for v in towards_agent)
                headers.append(Header(first, second, first + ("/Body" if first == body else ""),
                                      second + ("/Body" if second == body else ""), len(data), 1))
                data.append(Point((WALL_X, agent.position[1], 1.0), normal, separation))
        self.report = (headers, data)


class FakeRigid:
    def __init__(self, kit: FakeKit, prim_path: str, name: str) -> None:
        self.prim_path, self.name = prim_path, name
        self.position = np.zeros(3)
        self.orientation = np.array([1.0, 0.0, 0.0, 0.0])
        self.linear = np.zeros(3)
        if prim_path.endswith("/Agent"):
            kit.agent = self

    def set_world_pose(self, position=None, orientation=None):
        self.position = np.array(position, dtype=float)
        self.orientation = np.array(orientation, dtype=float)

    def get_world_pose(self):
        return self.position.copy(), self.orientation.copy()

    def set_linear_velocity(self, value):
        self.linear = np.array(value, dtype=float)

    def set_angular_velocity(self, value):
        pass

    def post_reset(self):
        pass


class FakeScene:
    def __init__(self, kit: FakeKit) -> None:
        self.kit, self.objects = kit, {}

    def add(self, obj):
        if obj.name in self.objects:  # scene.py 128-129
            raise Exception(f"Cannot add the object {obj.name} to the scene since its name is not unique")
        self.objects[obj.name] = obj
        return obj

    def clear(self, registry_only=False):
        self.kit.log.append(("scene.clear", registry_only))
        self.objects.clear()


def _world_class(kit: FakeKit) -> type:
    class World:
        instances = 0

        def __init__(self, physics_dt=None, rendering_dt=None, stage_units_in_meters=None):
            World.instances += 1
            self.physics_dt, self.playing, self.scene = physics_dt, False, FakeScene(kit)
            # World writes stage metadata and physics settings onto the edit target.
            UsdGeom.SetStageUpAxis(kit.stage, UsdGeom.Tokens.z)
            kit.stage.OverridePrim("/World").CreateAttribute("fake:worldTouched", _bool()).Set(True)
            kit.log.append(("World", physics_dt, rendering_dt, stage_units_in_meters))

        async def initialize_simulation_context_async(self):
            kit.log.append(("initialize_simulation_context_async",))

        def reset(self):
            self.playing = True
            kit.log.append(("reset",))

        async def reset_async(self):
            self.playing = True
            kit.log.append(("reset_async",))

        def step(self, render=True):
            if self.playing:
                kit.physics_step(self.physics_dt)
            if render:
                kit.updates += 1

        def stop(self):
            self.playing = False
            kit.log.append(("stop",))

        async def stop_async(self):
            self.stop()

        @classmethod
        def clear_instance(cls):
            kit.log.append(("clear_instance",))

    return World


def _bool():
    from pxr import Sdf

    return Sdf.ValueTypeNames.Bool


class FakeAnnotator:
    def __init__(self, kit: FakeKit, name: str) -> None:
        self.kit, self.name, self.product, self.detached = kit, name, None, False

    def attach(self, product):
        self.product = product

    def detach(self):
        self.detached = True
        self.kit.log.append(("detach", self.name))

    def get_data(self):
        width, height = self.product.resolution
        if self.kit.captures < 2:  # the first frames after creating a render product are empty
            empty = np.zeros((0,), dtype=np.uint8)
            return {"data": empty, "info": {"idToLabels": {}}} if self.name.startswith("instance") else empty
        if self.name == "rgb":
            return np.full((height, width, 4), 200, dtype=np.uint8)
        if self.name == "distance_to_image_plane":
            return np.full((height, width), 3.0, dtype=np.float32)
        ids = np.zeros((height, width), dtype=np.uint32)
        ids[:, width // 2:] = 2
        ids[0, 0] = 1
        return {"data": ids, "info": {"idToLabels": {"0": "BACKGROUND", "1": "UNLABELLED", "2": f"{WALL}/mesh"}}}


class FakeProduct:
    def __init__(self, kit: FakeKit, path: str, resolution: tuple) -> None:
        self.kit, self.path, self.resolution = kit, path, resolution

    def destroy(self):
        self.kit.log.append(("destroy", self.path))


def _module(name: str, **attrs) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    return module


def install(monkeypatch, *, standalone: bool = True, agent_first: bool = True) -> FakeKit:
    """Put the fake Kit modules in ``sys.modules`` (undone by ``monkeypatch``)."""
    kit = FakeKit(agent_first=agent_first)

    class Context:
        def get_stage(self):
            return kit.stage

        async def open_stage_async(self, path):
            kit.stage = Usd.Stage.Open(path)
            return True, ""

    context = Context()

    def open_stage(path):
        kit.stage = Usd.Stage.Open(path)
        return True

    loading = iter([True, False])

    class App:
        def update(self):
            kit.updates += 1

        async def next_update_async(self):
            kit.updates += 1

    def raycast_closest(origin, direction, distance):
        kit.ray_origins.append(tuple(origin))
        agent = kit.agent
        if agent is not None and np.hypot(origin[0] - agent.position[0], origin[1] - agent.position[1]) < kit.radius:
            return {"hit": True, "distance": 0.0, "collision": "/World/VLNVerse/Agent/Body",
                    "rigidBody": "/World/VLNVerse/Agent"}
        if direction[0] <= 0:
            return {"hit": False}
        reach = (WALL_X - origin[0]) / direction[0]
        if reach > distance:
            return {"hit": False}
        return {"hit": True, "distance": reach, "collision": f"{WALL}/mesh", "rigidBody": WALL}

    def step(rt_subframes=0, delta_time=None, pause_timeline=True):
        kit.captures += 1

    async def step_async(**kwargs):
        step(**kwargs)

    orchestrator = types.SimpleNamespace(
        step=step, step_async=step_async,
        set_capture_on_play=lambda value: kit.log.append(("capture_on_play", value)),
    )
    registry = types.SimpleNamespace(get_annotator=lambda name, init_params=None: FakeAnnotator(kit, name))
    create = types.SimpleNamespace(render_product=lambda path, res: FakeProduct(kit, path, res))
    simulation = types.SimpleNamespace(get_contact_report=lambda: kit.report)
    query = types.SimpleNamespace(raycast_closest=raycast_closest)
    settings = types.SimpleNamespace(get=kit.settings.get, set=kit.settings.__setitem__)
    modules = {
        "omni": _module("omni"),
        "omni.kit": _module("omni.kit"),
        "omni.kit.app": _module("omni.kit.app", get_app=lambda: App()),
        "omni.usd": _module("omni.usd", get_context=lambda: context),
        "omni.replicator": _module("omni.replicator"),
        "omni.replicator.core": _module("omni.replicator.core", orchestrator=orchestrator,
                                        AnnotatorRegistry=registry, create=create),
        "omni.physx": _module("omni.physx", get_physx_simulation_interface=lambda: simulation,
                              get_physx_scene_query_interface=lambda: query),
        "carb": _module("carb"),
        "carb.settings": _module("carb.settings", get_settings=lambda: settings),
        "isaacsim": _module("isaacsim"),
        "isaacsim.core": _module("isaacsim.core"),
        "isaacsim.core.api": _module("isaacsim.core.api", World=_world_class(kit)),
        "isaacsim.core.utils": _module("isaacsim.core.utils"),
        "isaacsim.core.utils.stage": _module("isaacsim.core.utils.stage", open_stage=open_stage,
                                             is_stage_loading=lambda: next(loading, False)),
        "isaacsim.core.prims": _module("isaacsim.core.prims",
                                       SingleRigidPrim=lambda prim_path, name: FakeRigid(kit, prim_path, name)),
        "pxr.PhysicsSchemaTools": _module("pxr.PhysicsSchemaTools", intToSdfPath=lambda value: value),
    }
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    for name, module in modules.items():  # `import omni.usd` then reads omni.usd
        parent, _, child = name.rpartition(".")
        if parent:
            monkeypatch.setattr(sys.modules[parent], child, module, raising=False)
    monkeypatch.setattr(builtins, "ISAAC_LAUNCHED_FROM_TERMINAL", not standalone, raising=False)
    return kit
