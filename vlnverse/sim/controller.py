"""The physics-aware controller: motion commands → velocity set-points per control tick.

Every action space goes through here. Displacements become a rotate-in-place then
drive-straight motion with trapezoidal speed profiles under the agent's speed and
acceleration limits; velocity commands ramp towards their targets under the same
limits. The plan also carries the commanded trajectory (where free space would put the
agent at each tick), against which the physics result is judged.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from vlnverse.sim.actions import Displacement, MotionCommand, VelocityCommand
from vlnverse.sim.agent import AgentSpec
from vlnverse.sim.physics import PhysicsConfig
from vlnverse.sim.types import Pose, wrap_angle


@functools.lru_cache(maxsize=256)
def trapezoid_ticks(distance: float, vmax: float, amax: float, dt: float) -> np.ndarray:
    """Per-tick mean speeds of a rest-to-rest trapezoidal profile covering ``distance``
    (read-only and cached: discrete actions repeat the same few profiles).

    The speeds integrate exactly to ``distance`` (``sum(speeds) * dt == distance``), never
    exceed ``vmax``, and the profile's acceleration never exceeds ``amax``.
    """
    total = abs(distance)
    if total < 1e-12:
        return np.zeros(0)
    if total <= vmax * vmax / amax:  # triangular: never reaches vmax
        peak = math.sqrt(total * amax)
        t_acc, t_cruise = peak / amax, 0.0
    else:
        peak = vmax
        t_acc, t_cruise = vmax / amax, (total - vmax * vmax / amax) / vmax
    duration = 2.0 * t_acc + t_cruise

    def position(t: np.ndarray) -> np.ndarray:
        t = np.clip(t, 0.0, duration)
        up = 0.5 * amax * np.minimum(t, t_acc) ** 2
        cruise = peak * np.clip(t - t_acc, 0.0, t_cruise)
        t_dec = np.clip(t - t_acc - t_cruise, 0.0, t_acc)
        down = peak * t_dec - 0.5 * amax * t_dec**2
        return up + cruise + down

    n = max(1, math.ceil(duration / dt - 1e-9))
    edges = position(np.arange(n + 1) * dt)
    edges[-1] = total
    speeds = math.copysign(1.0, distance) * np.diff(edges) / dt
    speeds.flags.writeable = False
    return speeds


@dataclass(frozen=True)
class MotionPlan:
    """Velocity set-points and the commanded trajectory of one action.

    Attributes:
        velocities: (T, 3) world-frame ``(vx, vy, wz)`` per control tick.
        poses: (T, 3) commanded ``(x, y, yaw)`` at the end of each tick.
        commanded_pose: The commanded pose at the end of the action.
        end_velocity: Body-frame ``(linear, angular)`` command at the end.
    """

    velocities: np.ndarray
    poses: np.ndarray
    commanded_pose: Pose
    end_velocity: tuple[float, float] = (0.0, 0.0)

    @property
    def ticks(self) -> int:
        return len(self.velocities)


class MotionController:
    """Turns motion commands into velocity plans for the current agent and physics settings."""

    def __init__(self, agent: AgentSpec, physics: PhysicsConfig) -> None:
        self.agent = agent
        self.dt = physics.control_dt
        self._velocity = (0.0, 0.0)

    def reset(self) -> None:
        """Forget the carried-over velocity (after a reset or a teleport)."""
        self._velocity = (0.0, 0.0)

    def plan(self, command: MotionCommand, start: Pose) -> MotionPlan:
        """The plan executing ``command`` from ``start``."""
        if isinstance(command, Displacement):
            plan = self._plan_displacement(command, start)
        elif isinstance(command, VelocityCommand):
            plan = self._plan_velocity(command, start)
        else:
            raise TypeError(f"not a motion command: {command!r}")
        self._velocity = plan.end_velocity
        return plan

    def _plan_displacement(self, command: Displacement, start: Pose) -> MotionPlan:
        agent, dt = self.agent, self.dt
        turn = trapezoid_ticks(command.turn, agent.max_angular_speed, agent.max_angular_accel, dt)
        drive = trapezoid_ticks(command.forward, agent.max_linear_speed, agent.max_linear_accel, dt)
        heading = start.yaw + command.turn
        velocities = np.zeros((len(turn) + len(drive), 3))
        velocities[: len(turn), 2] = turn
        velocities[len(turn) :, 0] = drive * math.cos(heading)
        velocities[len(turn) :, 1] = drive * math.sin(heading)
        poses = np.empty_like(velocities)
        poses[:, :2] = start.xy + np.cumsum(velocities[:, :2], axis=0) * dt
        poses[:, 2] = start.yaw + np.cumsum(velocities[:, 2]) * dt
        end = start.moved(forward=command.forward, turn=command.turn)
        return MotionPlan(velocities, poses, end)

    def _plan_velocity(self, command: VelocityCommand, start: Pose) -> MotionPlan:
        agent, dt = self.agent, self.dt
        n = max(1, round(command.duration / dt))
        dv, dw = agent.max_linear_accel * dt, agent.max_angular_accel * dt
        v, w = self._velocity
        x, y, yaw = start.x, start.y, start.yaw
        velocities = np.empty((n, 3))
        poses = np.empty((n, 3))
        for i in range(n):
            v += float(np.clip(command.linear - v, -dv, dv))
            w += float(np.clip(command.angular - w, -dw, dw))
            mid = yaw + 0.5 * w * dt
            velocities[i] = (v * math.cos(mid), v * math.sin(mid), w)
            x, y, yaw = x + velocities[i, 0] * dt, y + velocities[i, 1] * dt, yaw + w * dt
            poses[i] = (x, y, yaw)
        end = Pose(x, y, start.z, wrap_angle(yaw))
        return MotionPlan(velocities, poses, end, (v, w))
