"""``VLNVerse/Nav-v0``: a gymnasium env joining a scene, the simulator, episodes and measures.

Observations are a ``Dict`` of the rig's sensors, the agent ``pose`` ``(x, y, z, yaw)``
and the ``instruction`` text. ``info`` always carries ``pose``, ``collision``,
``displacement``, ``collisions``, ``geodesic_distance``, ``oracle_action`` and
``fail_reason`` (plus the commanded pose, touched objects and success).
"""

from __future__ import annotations

import logging
import math
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from vlnverse.config import config_from_mapping
from vlnverse.envs.episode import Goal, NavEpisode, goal_from
from vlnverse.envs.oracle import Oracle
from vlnverse.errors import ConfigError, SimulationError
from vlnverse.scene.types import Scene
from vlnverse.sim.actions import make_action_space
from vlnverse.sim.agent import AgentSpec
from vlnverse.sim.backend import resolve_backend
from vlnverse.sim.physics import PhysicsConfig
from vlnverse.sim.rig import SensorRig
from vlnverse.sim.sensors import RGBSensor, SensorSpec, pose_space
from vlnverse.sim.simulator import Simulator
from vlnverse.sim.types import CameraRequest, Pose, StepReport

logger = logging.getLogger(__name__)

#: Characters an instruction may always contain (the Text space adds any others it sees).
INSTRUCTION_CHARSET = frozenset(string.printable) - frozenset("\x0b\x0c")
INSTRUCTION_MAX_LENGTH = 4096
#: Random episodes: tries to find a goal at least ``min_goal_distance`` away.
SAMPLE_TRIES = 64


@dataclass(frozen=True)
class RewardConfig:
    """Dense reward: progress along the geodesic, success bonus, collision and time penalties.

    Attributes:
        progress_weight: Reward per metre of geodesic distance gained.
        success_bonus: Reward for stopping within the goal radius.
        collision_penalty: Penalty per collision event.
        step_penalty: Penalty per step (favours short episodes).
    """

    progress_weight: float = 1.0
    success_bonus: float = 10.0
    collision_penalty: float = 0.5
    step_penalty: float = 0.01

    def __post_init__(self) -> None:
        for name in ("progress_weight", "success_bonus", "collision_penalty", "step_penalty"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ConfigError(f"RewardConfig.{name} must be a finite number, got {value!r}")


def _coerce(cls: type, value: Any, what: str) -> Any:
    if value is None:
        return cls()
    if isinstance(value, cls):
        return value
    if isinstance(value, Mapping):
        return config_from_mapping(cls, value, where=what)
    raise ConfigError(f"{what}: expected {cls.__name__} or a mapping, got {value!r}")


def _physics(value: Any) -> PhysicsConfig:
    if isinstance(value, str):
        return PhysicsConfig(mode=value)
    return _coerce(PhysicsConfig, value, "physics")


class NavEnv(gym.Env):
    """Vision-language navigation in one scene (see the module docs).

    Args:
        scene: Path to a USD scene (or a loaded :class:`Scene`).
        backend: ``"bullet"`` (default), ``"isaac"`` or ``"auto"``.
        physics: ``"strict"``, ``"slide"``, ``"tel_hop"`` or a :class:`PhysicsConfig`.
        action_space: ``"discrete"``, ``"velocity"``, ``"waypoint"`` or an action-space spec.
        sensors: Sensor names, a mapping of name → spec, or a :class:`SensorRig`.
        start: Start ``(x, y, yaw)``; random navigable (from the reset seed) when ``None``.
        goal: Goal ``(x, y)``; random reachable (from the reset seed) when ``None``.
        instruction: Instruction text of the single-episode form.
        goal_radius: Success radius in metres.
        episodes: Episodes to cycle through (overrides start/goal/instruction).
        agent: The agent body.
        max_episode_steps: Step budget (default by action space: 500 discrete/velocity, 50 waypoint).
        reward: Dense reward weights.
        oracle_stop_distance: Geodesic distance at which the oracle says STOP (capped by the goal radius).
        min_goal_distance: Minimum geodesic start–goal distance of random episodes.
        occupancy_resolution: Grid resolution of the navigation map (metres).
        render_mode: ``None`` or ``"rgb_array"``.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(
        self,
        scene: str | Path | Scene,
        *,
        backend: str = "bullet",
        physics: Any = "strict",
        action_space: Any = "discrete",
        sensors: Any = ("rgb", "depth"),
        start: Sequence[float] | None = None,
        goal: Sequence[float] | None = None,
        instruction: str = "",
        goal_radius: float = 3.0,
        episodes: Sequence[NavEpisode | Mapping] | None = None,
        agent: AgentSpec | Mapping | None = None,
        max_episode_steps: int | None = None,
        reward: RewardConfig | Mapping | None = None,
        oracle_stop_distance: float = 0.5,
        min_goal_distance: float = 1.0,
        occupancy_resolution: float = 0.05,
        render_mode: str | None = None,
    ) -> None:
        # Validate everything cheap before loading anything.
        self.physics = _physics(physics)
        self.agent_spec = _coerce(AgentSpec, agent, "agent")
        self.reward_config = _coerce(RewardConfig, reward, "reward")
        self.action_spec = make_action_space(action_space)
        rig = SensorRig.from_spec(sensors)
        backend = resolve_backend(backend)
        if render_mode not in (None, "rgb_array"):
            raise ConfigError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.render_mode = render_mode
        if max_episode_steps is None:
            max_episode_steps = self.action_spec.default_max_steps
        if not isinstance(max_episode_steps, int) or max_episode_steps < 1:
            raise ConfigError(f"max_episode_steps must be a positive integer, got {max_episode_steps!r}")
        self.max_episode_steps = max_episode_steps
        for name, value in (("oracle_stop_distance", oracle_stop_distance),
                            ("min_goal_distance", min_goal_distance),
                            ("occupancy_resolution", occupancy_resolution)):
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0 or (
                    name == "occupancy_resolution" and value == 0):
                raise ConfigError(f"{name} must be a {'positive' if name == 'occupancy_resolution' else 'non-negative'} number, got {value!r}")
        self.oracle_stop_distance = float(oracle_stop_distance)
        self.min_goal_distance = float(min_goal_distance)
        self._fixed_start = self._parse_start(start)
        if not isinstance(goal_radius, (int, float)) or not goal_radius > 0:
            raise ConfigError(f"goal_radius must be positive, got {goal_radius!r}")
        self.goal_radius = float(goal_radius)
        self._fixed_goal = goal_from(goal, self.goal_radius) if goal is not None else None
        if not isinstance(instruction, str):
            raise ConfigError(f"instruction must be a string, got {instruction!r}")
        self._instruction = instruction
        self.episodes = tuple(e if isinstance(e, NavEpisode) else NavEpisode.from_mapping(e) for e in (episodes or ()))

        from vlnverse.scene.navigation import Navigator
        from vlnverse.scene.occupancy import build_occupancy

        if isinstance(scene, Scene):
            self.scene = scene
        else:
            from vlnverse.scene import load_scene

            self.scene = load_scene(scene)
        spec = self.agent_spec
        self.occupancy = build_occupancy(self.scene, agent_radius=spec.radius, agent_height=spec.height,
                                         resolution=float(occupancy_resolution), step_height=spec.step_height)
        self.navigator = Navigator(self.occupancy)
        self.sim = Simulator(self.scene, agent=spec, sensors=rig, physics=self.physics, backend=backend,
                             occupancy=self.occupancy,
                             pose=Pose(*self.occupancy.sample_navigable(np.random.default_rng(0), 1)[0], 0.0))
        self.action_space = self.action_spec.gym_space(spec)
        texts = [self._instruction, *(e.instruction for e in self.episodes)]
        self._charset = INSTRUCTION_CHARSET | frozenset("".join(texts))
        self._max_text = max(INSTRUCTION_MAX_LENGTH, *(len(t) for t in texts))
        self._update_observation_space()
        self.episode: NavEpisode | None = None
        self._episode_cursor = 0
        self._steps = 0
        self._done = True
        self._fields: list = []
        self._oracle: Oracle | None = None
        self._distance = math.inf
        self._path_length = 0.0

    # -- spaces --------------------------------------------------------------------------

    def _update_observation_space(self) -> None:
        sensor_space = self.sim.observation_space()
        entries = dict(sensor_space.spaces)
        entries.setdefault("pose", pose_space())
        entries["instruction"] = spaces.Text(self._max_text, min_length=0, charset=self._charset)
        self.observation_space = spaces.Dict(entries)

    def attach_sensor(self, name: str, spec: SensorSpec) -> None:
        """Attach a sensor at run time; the observation space gains it."""
        self.sim.attach_sensor(name, spec)
        self._update_observation_space()

    def detach_sensor(self, name: str) -> None:
        """Detach a sensor at run time; the observation space loses it."""
        self.sim.detach_sensor(name)
        self._update_observation_space()

    # -- episodes ------------------------------------------------------------------------

    @staticmethod
    def _parse_start(start: Sequence[float] | None) -> tuple[float, float, float] | None:
        if start is None:
            return None
        try:
            values = tuple(float(v) for v in start)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"start must be (x, y, yaw), got {start!r}") from exc
        if len(values) not in (2, 3) or not all(math.isfinite(v) for v in values):
            raise ConfigError(f"start must be (x, y, yaw), got {start!r}")
        return values if len(values) == 3 else (*values, 0.0)

    def _next_episode(self, options: Mapping[str, Any]) -> NavEpisode:
        if "episode" in options:
            episode = options["episode"]
            return episode if isinstance(episode, NavEpisode) else NavEpisode.from_mapping(episode)
        if self.episodes:
            index = int(options.get("episode_index", self._episode_cursor)) % len(self.episodes)
            self._episode_cursor = index + 1
            return self.episodes[index]
        start = self._parse_start(options.get("start")) or self._fixed_start
        goal = goal_from(options["goal"], self.goal_radius) if "goal" in options else self._fixed_goal
        return self._random_episode(start, goal)

    def _random_episode(self, start: tuple[float, float, float] | None, goal: Goal | None) -> NavEpisode:
        """Fill in a missing start and/or goal with random navigable points from ``np_random``."""
        occ, rng = self.occupancy, self.np_random
        radius = goal.radius if goal else self.goal_radius
        if start is None and goal is None:
            component = occ.largest_component
            start_xy = self._sample(component, 1)[0]
        elif start is None:
            component = occ.component_of(occ.nearest_navigable(goal.position))
            start_xy = self._sample(component, 1)[0]
        else:
            start_xy = np.asarray(start[:2])
            component = occ.component_of(occ.nearest_navigable(start_xy))
        yaw = start[2] if start is not None else float(rng.uniform(-math.pi, math.pi))
        if goal is None:
            field = self.navigator.distance_field(start_xy)
            candidates = self._sample(component, SAMPLE_TRIES)
            distances = np.asarray(field.distance_at(candidates), dtype=np.float64)
            ok = np.flatnonzero(np.isfinite(distances) & (distances >= self.min_goal_distance))
            pick = ok[0] if len(ok) else int(np.nanargmax(np.where(np.isfinite(distances), distances, -1.0)))
            goal = Goal(tuple(candidates[pick]), radius)
        return NavEpisode(f"random-{int(rng.integers(1 << 31))}", (float(start_xy[0]), float(start_xy[1]), yaw),
                          (goal,), self._instruction)

    def _sample(self, component: int, n: int) -> np.ndarray:
        """``n`` random navigable xy points of ``component``, away from walls when possible."""
        occ = self.occupancy
        mask = occ.components == component
        roomy = mask & (occ.clearance >= occ.agent_radius + 0.1)
        cells = np.argwhere(roomy if roomy.any() else mask)
        picks = cells[self.np_random.integers(0, len(cells), size=n)]
        return occ.cell_to_world(picks)[:, :2]

    # -- gymnasium API ---------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.episode = self._next_episode(options or {})
        occ = self.occupancy
        x, y, yaw = self.episode.start
        start = np.array([x, y, occ.floor_height])
        if not occ.is_navigable(start):
            start = np.asarray(occ.nearest_navigable(start), dtype=np.float64)
        self.sim.reset(Pose(float(start[0]), float(start[1]), float(occ.floor_height), float(yaw)))
        goals = self.episode.goals
        self._fields = [self.navigator.distance_field(np.asarray(g.position[:2])) for g in goals]
        stop = min(self.oracle_stop_distance, min(g.radius for g in goals))
        self._oracle = Oracle(occ, _MinField(self._fields), self.action_spec, self.agent_spec, stop)
        self._steps, self._done, self._path_length = 0, False, 0.0
        pose = self.sim.pose
        self._distance = self._geodesic(pose)
        return self._observe(), self._info(pose, None, None, False, self._distance)

    def step(self, action: Any):
        if self._done:
            raise SimulationError("the episode is over; call reset() first")
        command = self.action_spec.to_command(action, self.agent_spec)
        self._steps += 1
        report: StepReport | None = None
        fail_reason, success, terminated = None, False, False
        before = self.sim.pose
        if command is None:
            terminated = True
            success = self._success(before)
        else:
            report = self.sim.execute(command)
            if report.collision and self.physics.fails_on_collision:
                terminated, fail_reason = True, "collision"
        pose = self.sim.pose
        self._path_length += before.distance_xy(pose)
        distance = self._geodesic(pose)
        truncated = not terminated and self._steps >= self.max_episode_steps
        if truncated:
            fail_reason = "step_budget"
        elif command is None and not success:
            fail_reason = "stopped_away_from_goal"
        reward = self._reward(distance, report, success)
        self._distance = distance
        self._done = terminated or truncated
        return self._observe(), reward, terminated, truncated, self._info(pose, report, fail_reason, success, distance)

    def _reward(self, distance: float, report: StepReport | None, success: bool) -> float:
        cfg = self.reward_config
        progress = self._distance - distance if math.isfinite(self._distance) and math.isfinite(distance) else 0.0
        reward = cfg.progress_weight * progress - cfg.step_penalty
        if report is not None and report.collision:
            reward -= cfg.collision_penalty
        if success:
            reward += cfg.success_bonus
        return float(reward)

    def _geodesic(self, pose: Pose) -> float:
        return float(min(f.distance_at(pose.xy) for f in self._fields))

    def _success(self, pose: Pose) -> bool:
        return any(float(f.distance_at(pose.xy)) <= g.radius for f, g in zip(self._fields, self.episode.goals, strict=True))

    def _observe(self) -> dict[str, Any]:
        obs: dict[str, Any] = self.sim.observe()
        if "pose" not in obs:
            obs["pose"] = self.sim.pose.as_array().astype(np.float32)
        obs["instruction"] = self.episode.instruction
        return obs

    def _info(self, pose: Pose, report: StepReport | None, fail_reason: str | None, success: bool,
              distance: float) -> dict[str, Any]:
        goal = np.asarray(self.episode.goals[0].position[:2])
        return {
            "pose": pose.as_array(),
            "commanded_pose": (report.commanded_pose if report else pose).as_array(),
            "collision": bool(report.collision) if report else False,
            "displacement": float(report.displacement) if report else 0.0,
            "collisions": int(self.sim.collisions),
            "contacts": report.contacts.object_ids if report else (),
            "contact_categories": report.contacts.categories if report else (),
            "snapped": bool(report.snapped) if report else False,
            "geodesic_distance": distance,
            "distance_to_goal": float(np.linalg.norm(pose.xy - goal)),
            "oracle_action": self._oracle.action(pose),
            "fail_reason": fail_reason,
            "success": bool(success),
            "steps": self._steps,
            "path_length": self._path_length,
            "episode_id": self.episode.episode_id,
        }

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        for name, spec in self.sim.rig.items():
            if isinstance(spec, RGBSensor):
                return self.sim.observe()[name]
        camera = RGBSensor()
        pose = self.sim.pose
        request = CameraRequest((pose.x, pose.y, pose.z + self.agent_spec.camera_height), pose.yaw, 0.0,
                                camera.width, camera.height, camera.hfov_deg, camera.near, camera.far)
        return self.sim.backend.render([request])[0].rgb

    def close(self) -> None:
        sim = getattr(self, "sim", None)
        if sim is not None:
            sim.close()


class _MinField:
    """The pointwise minimum of several distance fields (the nearest of several goals)."""

    def __init__(self, fields: list) -> None:
        self.fields = fields

    def distance_at(self, points):
        values = [np.asarray(f.distance_at(points), dtype=np.float64) for f in self.fields]
        out = np.minimum.reduce(values)
        return float(out) if out.ndim == 0 else out
