"""The simulator layer (paper §3.1): embodied agents, sensor rigs, physics-aware control.

``Simulator`` runs one agent in one scene on a backend (``bullet`` by default, ``isaac``
with Isaac Sim); the Strict / Slide / Tel-Hop rules live in it, once for every backend.
"""

from vlnverse.sim.actions import (
    ACTION_SPACES,
    DiscreteActions,
    Displacement,
    VelocityActions,
    VelocityCommand,
    WaypointActions,
    make_action_space,
)
from vlnverse.sim.agent import AgentSpec
from vlnverse.sim.backend import BACKENDS, Backend, create_backend, resolve_backend
from vlnverse.sim.physics import PHYSICS_MODES, PhysicsConfig
from vlnverse.sim.rig import SensorRig
from vlnverse.sim.sensors import (
    SENSOR_TYPES,
    DepthSensor,
    LidarSensor,
    PoseSensor,
    RGBSensor,
    SemanticSensor,
    make_sensor,
)
from vlnverse.sim.simulator import Simulator
from vlnverse.sim.types import Pose, StepReport

__all__ = [
    "ACTION_SPACES", "BACKENDS", "PHYSICS_MODES", "SENSOR_TYPES", "AgentSpec", "Backend",
    "DepthSensor", "DiscreteActions", "Displacement", "LidarSensor", "PhysicsConfig", "Pose",
    "PoseSensor", "RGBSensor", "SemanticSensor", "SensorRig", "Simulator", "StepReport",
    "VelocityActions", "VelocityCommand", "WaypointActions", "create_backend", "make_action_space",
    "make_sensor", "resolve_backend",
]
