"""``VLNVerse/Nav-v0``: a gymnasium env joining a scene, the simulator, episodes and measures.

The env is the loop: reset, step, physics, sensors, the dataset player
(:mod:`vlnverse.envs.player`) and the measures every task shares. What a task family adds
(observations, actions, its success rule, the ``info`` keys it owns) is a task component,
one module per family under :mod:`vlnverse.envs.tasks`, registered by name in
:mod:`vlnverse.tasks.registry`; the env composes the components its ``task`` and settings
want and applies their rules to the episodes they hold for.

Observations: the rig's sensors, the agent ``pose`` ``(x, y, z, yaw)``, the ``instruction``
text and ``bump`` (1 when the last action's motion hit something, as a robot's bumper
says; not privileged), plus the components' (``reference_image``, ``oracle_answer``,
``question`` and ``options``, ...). ``info`` always carries ``pose``, the commanded pose,
``collision``, ``displacement``, ``collisions``, touched objects, ``start_snap`` (metres the
start was moved at reset because it was not navigable), ``geodesic_distance``,
``distance_to_goal``, ``room_type`` (privileged), ``oracle_action`` (privileged),
``fail_reason`` (None while running and after a successful STOP; ``"stop"`` for a STOP away
from the goal, as in the eval records; ``"collision"``, ``"step_budget"``,
``"wrong_answer"``), ``success``, ``steps``, ``path_length``, ``episode_id``, and the keys
the components declare for every env: the sub-goal bookkeeping (``subgoal_index``,
``subgoals_total``, ``subgoal_results``, ``subgoal_stop``), the dialogue counters
(``questions_asked``, ``questions_remaining``) and EQA's ``answer``, ``answer_correct`` and
``eqa_answer``. The ``info`` of ``reset`` also has ``semantic_categories``, the category of
each semantic id (privileged: only ``perception: gt`` agents may read it). A dataset
episode's scene replaces the loaded one when it differs (the backend is reused while it
stays the same).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from vlnverse.envs.config import NavEnvConfig
from vlnverse.envs.episode import Goal, NavEpisode, goal_from
from vlnverse.envs.oracle import Oracle
from vlnverse.envs.player import EpisodePlayer, open_dataset, parse_start, start_pose
from vlnverse.envs.reward import RewardConfig, coerce, physics_config
from vlnverse.envs.tasks import TaskComponent, TaskSet
from vlnverse.envs.tasks.base import INSTRUCTION_CHARSET, INSTRUCTION_MAX_LENGTH
from vlnverse.envs.tasks.dialogue import DEFAULT_QUESTION
from vlnverse.envs.tasks.eqa import check_index
from vlnverse.errors import ConfigError, InvalidActionError, SimulationError
from vlnverse.scene.navigation import DistanceField
from vlnverse.scene.types import Scene
from vlnverse.sim.actions import make_action_space
from vlnverse.sim.agent import AgentSpec
from vlnverse.sim.backend import resolve_backend
from vlnverse.sim.rig import SensorRig
from vlnverse.sim.sensors import RGBSensor, SensorSpec, pose_space
from vlnverse.sim.simulator import Simulator
from vlnverse.sim.types import CameraRequest, Pose, StepReport

logger = logging.getLogger(__name__)


class NavEnv(gym.Env):
    """Vision-language navigation over episodes of one or more scenes (see the module docs).

    Args:
        scene: Path to a USD scene (or a loaded :class:`Scene`); optional with a dataset
            or with episodes that name their scene.
        config: The env's settings (:class:`~vlnverse.envs.config.NavEnvConfig`; default:
            the defaults).
        episodes: Episodes to cycle through (overrides the config's start/goal/instruction).
        dataset: A dataset directory, a ``.jsonl(.gz)`` file or an
            :class:`~vlnverse.tasks.dataset.EpisodeDataset` whose episodes to play.
        split: Dataset split (None: all).
        scenes_dir: Where the dataset's scene paths are relative to (default: its manifest's).
        **settings: Fields of :class:`~vlnverse.envs.config.NavEnvConfig`, in place of the
            config's (``physics="tel_hop"``, ``task="eqa"``, ...).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(
        self,
        scene: str | Path | Scene | None = None,
        *,
        config: NavEnvConfig | None = None,
        episodes: Sequence[NavEpisode | Mapping] | None = None,
        dataset: Any = None,
        split: str | None = None,
        scenes_dir: str | Path | None = None,
        **settings: Any,
    ) -> None:
        # Validate everything cheap before loading anything.
        self.config = config = NavEnvConfig.build(config, **settings)
        self.physics = physics_config(config.physics)
        self.agent_spec = coerce(AgentSpec, config.agent, "agent")
        self.reward_config = coerce(RewardConfig, config.reward, "reward")
        self.action_spec = make_action_space(config.action_space)
        rig = SensorRig.from_spec(config.sensors)
        self._backend_name = resolve_backend(config.backend)
        self.render_mode = config.render_mode
        self.max_episode_steps = config.max_episode_steps or self.action_spec.default_max_steps
        self.oracle_stop_distance = float(config.oracle_stop_distance)
        self.min_goal_distance = float(config.min_goal_distance)
        fixed_start = parse_start(config.start)
        self.goal_radius = float(config.goal_radius)
        fixed_goal = goal_from(config.goal, self.goal_radius) if config.goal is not None else None
        task, self._task_settings = config.task, config.task_settings()
        self.components = TaskSet(self, task, dict(self._task_settings))
        self.episodes = tuple(e if isinstance(e, NavEpisode) else NavEpisode.from_mapping(e) for e in (episodes or ()))
        self.task = task
        self.dataset = None
        if dataset is not None:
            self.dataset, dataset_episodes = open_dataset(dataset, split, task, scenes_dir)
            self.episodes = (*self.episodes, *dataset_episodes)
        elif split is not None or scenes_dir is not None:
            raise ConfigError("split and scenes_dir need a dataset")
        self._player = EpisodePlayer(self, fixed_start, fixed_goal, config.instruction)
        if scene is None:
            scene = next((e.scene for e in self.episodes if e.scene is not None), None)
            if scene is None:
                raise ConfigError("NavEnv needs a scene, a dataset, or episodes that name their scene")
        self.sim: Simulator | None = None
        self._scene_key: str | None = None
        self._load_scene(scene, rig)
        self._compose()
        self.episode: NavEpisode | None = None
        self._steps, self._done, self._bump, self._path_length, self._start_snap = 0, True, 0, 0.0, 0.0
        self._fields: list = []
        self._oracle: Oracle | None = None
        self._distance = math.inf

    def _compose(self) -> None:
        """The action and observation spaces of the sensors and the task components."""
        self.action_spec_space = self.action_spec.gym_space(self.agent_spec)
        self.action_space = self.components.add_actions(self.action_spec_space)
        dialogue_part = self.components.component("dialogue")
        #: The discrete action id that asks the dialogue oracle (None without one).
        self.ask_action: int | None = dialogue_part.first_action if dialogue_part is not None else None
        texts = [self.config.instruction, *(e.instruction for e in self.episodes), *self.components.texts(self.episodes)]
        self._charset = INSTRUCTION_CHARSET | frozenset("".join(texts))
        self._max_text = max(INSTRUCTION_MAX_LENGTH, *(len(t) for t in texts))
        self._update_observation_space()

    def set_task(self, task: str | None, **settings: Any) -> None:
        """Give the env the task components of ``task`` and its spaces, as an env built for
        ``task`` has them (``settings``: task settings as the constructor takes them, e.g.
        ``oracle_llm``, in place of its own); the scene, the simulator and the episodes
        stay. The next episode starts at :meth:`reset`."""
        unknown = sorted(set(settings) - set(self._task_settings))
        if unknown:
            raise ConfigError(f"not task settings: {', '.join(unknown)}; valid: {', '.join(self._task_settings)}")
        self._task_settings = {**self._task_settings, **settings}
        self.components = TaskSet(self, task, dict(self._task_settings))
        self.task = task
        self._compose()
        self.episode, self._done = None, True

    def _load_scene(self, scene: str | Path | Scene, rig: Any = None) -> None:
        """Make ``scene`` the loaded scene (a no-op when it already is)."""
        from vlnverse.scene.loading import scene_with_occupancy
        from vlnverse.scene.navigation import Navigator
        from vlnverse.scene.occupancy import build_occupancy
        from vlnverse.sim.backend import prepare_backend

        backend = prepare_backend(self._backend_name)  # before the scene's pxr import (Isaac Sim: Kit's USD)
        key = f"scene:{id(scene)}" if isinstance(scene, Scene) else str(Path(scene).resolve())
        if key == self._scene_key and self.sim is not None:
            return
        spec = self.agent_spec
        dims = {"agent_radius": spec.radius, "agent_height": spec.height, "step_height": spec.step_height,
                "resolution": float(self.config.occupancy_resolution)}
        if isinstance(scene, Scene):
            loaded, occupancy = scene, build_occupancy(scene, **dims)
        else:
            loaded, occupancy = scene_with_occupancy(key, **dims)
        rig = rig if rig is not None else SensorRig.from_spec(self.sim.rig)
        if self.sim is not None and backend == "isaac":  # one live Isaac Sim World per process
            self.sim.close()
            self.sim = None
        sim = Simulator(loaded, agent=spec, sensors=rig, physics=self.physics, backend=self._backend_name,
                        renderer=self.config.renderer, panorama=self.config.panorama, occupancy=occupancy, pose=Pose(*occupancy.sample_navigable(np.random.default_rng(0), 1)[0], 0.0))
        if self.sim is not None:
            self.sim.close()
            logger.info("switched scene to %s", key)
        self.scene, self.occupancy, self.navigator, self.sim = loaded, occupancy, Navigator(occupancy), sim
        self._scene_key = key
        if "_charset" in self.__dict__:
            self._update_observation_space()

    # -- spaces --------------------------------------------------------------------------

    def _update_observation_space(self) -> None:
        sensor_space = self.sim.observation_space()
        entries = dict(sensor_space.spaces)
        entries.setdefault("pose", pose_space())
        entries["instruction"] = spaces.Text(self._max_text, min_length=0, charset=self._charset)
        entries["bump"] = spaces.Discrete(2)
        entries.update(self.components.spaces(self._max_text, self._charset))
        self.observation_space = spaces.Dict(entries)

    def attach_sensor(self, name: str, spec: SensorSpec) -> None:
        """Attach a sensor at run time; the observation space gains it."""
        self.sim.attach_sensor(name, spec)
        self._update_observation_space()

    def detach_sensor(self, name: str) -> None:
        """Detach a sensor at run time; the observation space loses it."""
        self.sim.detach_sensor(name)
        self._update_observation_space()

    # -- gymnasium API ---------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = options or {}
        self.episode = self._player.next(options, seed)
        if self.episode.scene is not None:
            self._load_scene(self.episode.scene)
        self.components.start(self.episode, options)
        start, self._start_snap = start_pose(self.occupancy, self.episode)
        self.sim.reset(start)
        self._fields = [self.navigator.distance_field(np.asarray(g.position[:2])) for g in self.episode.goals]
        self._make_oracle()
        self._steps, self._done, self._path_length = 0, False, 0.0
        self._bump = 0
        pose = self.sim.pose
        self._distance = self._geodesic(pose)
        info = self._info(pose, None, None, False, self._distance)
        info["semantic_categories"] = self.semantic_categories
        return self._observe(), info

    @property
    def semantic_categories(self) -> tuple[str, ...]:
        """The category of each semantic id of the loaded scene (index = id; privileged)."""
        return tuple(self.sim.instances.categories())

    def _make_oracle(self) -> None:
        """The distance field to the nearest active goal, and the oracle descending it."""
        goals, fields = self._active_goals()
        stop = min(self.oracle_stop_distance, min(g.radius for g in goals))
        self._goal_field = DistanceField(self.occupancy, np.minimum.reduce([f.distances for f in fields]))
        self._oracle = Oracle(self.occupancy, self._goal_field, self.action_spec, self.agent_spec, stop)

    def goal_distances(self, points: np.ndarray) -> np.ndarray:
        """``(G, K)`` geodesic distances from ``points`` (K, 2|3) to each goal of the current
        episode (what long-horizon scoring needs; the fields were built at reset)."""
        if not self._fields:
            raise SimulationError("no episode yet; call reset() first")
        points = np.asarray(points, dtype=np.float64).reshape(-1, np.shape(points)[-1])
        return np.stack([np.asarray(f.distance_at(points), dtype=np.float64).reshape(-1) for f in self._fields])

    def _active_goals(self) -> tuple[tuple[Goal, ...], list]:
        """The goals (and their fields) that count now: a component's choice, else all goals."""
        indices = self.components.goal_indices()
        if indices is None:
            return self.episode.goals, self._fields
        return tuple(self.episode.goals[i] for i in indices), [self._fields[i] for i in indices]

    def ask(self, question: str = DEFAULT_QUESTION):
        """Ask the dialogue oracle ``question``: a step whose ``obs["oracle_answer"]`` is the answer
        (:mod:`vlnverse.envs.tasks.dialogue`); InvalidActionError without dialogue or a string."""
        dialogue = self.components.component("dialogue")
        if dialogue is None:
            raise InvalidActionError("this env has no dialogue oracle (create it with dialogue=True or task='dialogue')")
        if not isinstance(question, str):
            raise InvalidActionError(f"a question must be a string, got {question!r}")
        return self._step(None, dialogue, question)

    def answer_action(self, index: int) -> int:
        """EQA: the discrete action id that answers option ``index`` (0 = A); InvalidActionError
        without EQA, on a non-discrete action space or for a bad index."""
        return self._eqa().action(index)

    def answer(self, index: int):
        """EQA: answer option ``index`` (0 = A), a step that ends the episode
        (:mod:`vlnverse.envs.tasks.eqa`); InvalidActionError without EQA or for a bad index."""
        return self._step(None, self._eqa(), check_index(index))

    def _eqa(self) -> Any:
        eqa = self.components.component("eqa")
        if eqa is None:
            raise InvalidActionError("this env has no EQA answers (create it with eqa=True or task='eqa')")
        return eqa

    def step(self, action: Any):
        claimed = self.components.claim(action)
        return self._step(action) if claimed is None else self._step(None, *claimed)

    def _step(self, action: Any, part: TaskComponent | None = None, request: Any = None):
        if self.sim.closed:
            raise SimulationError("the env is closed; make a new one")
        if self._done:
            raise SimulationError("the episode is over; call reset() first")
        command = self.action_spec.to_command(action, self.agent_spec) if part is None else None
        self._steps += 1
        report: StepReport | None = None
        fail_reason, success, terminated, goes_on, outcome = None, False, False, False, None
        before = self.sim.pose
        self.components.begin_step()
        if part is not None:
            outcome = part.act(request)
            success, terminated = outcome.success, outcome.terminated
        elif command is None:
            success = self._success(before)
            goes_on = self.components.on_stop(success, before)
            if goes_on:
                self._make_oracle()
            terminated = not goes_on
        else:
            report = self.sim.execute(command)
            if report.collision and self.physics.fails_on_collision:
                terminated, fail_reason = True, "collision"
        self._bump = int(bool(report is not None and report.collision))
        pose = self.sim.pose
        self._path_length += before.distance_xy(pose)
        distance = self._geodesic(pose)
        truncated = not terminated and self._steps >= self.max_episode_steps
        if truncated:
            fail_reason = "step_budget"
        elif outcome is not None:
            fail_reason = outcome.fail_reason
        elif terminated and command is None and not success:
            fail_reason = "stop"  # a STOP away from the goal, named as in the eval records
        if goes_on:
            self._distance = distance  # now the next goal's distance: progress restarts from here
        reward = self.reward_config.reward(self._distance, distance, bool(report is not None and report.collision),
                                           success)
        self._distance = distance
        self._done = terminated or truncated
        info = self._info(pose, report, fail_reason, success, distance)
        return self._observe(), reward, terminated, truncated, info

    def _geodesic(self, pose: Pose) -> float:
        return float(self._goal_field.distance_at(pose.xy))

    def _success(self, pose: Pose) -> bool:
        goals, fields = self._active_goals()
        reached = [k for k, (f, g) in enumerate(zip(fields, goals, strict=True))
                   if float(f.distance_at(pose.xy)) <= g.radius]
        return self.components.judge(reached, pose)

    def _observe(self) -> dict[str, Any]:
        obs: dict[str, Any] = self.sim.observe()
        if "pose" not in obs:
            obs["pose"] = self.sim.pose.as_array().astype(np.float32)
        obs["instruction"] = self.components.instruction(self.episode.instruction)
        obs["bump"] = self._bump
        obs.update(self.components.observe())
        return obs

    def _info(self, pose: Pose, report: StepReport | None, fail_reason: str | None, success: bool,
              distance: float) -> dict[str, Any]:
        goal = np.asarray(self._active_goals()[0][0].position[:2])
        return {
            "pose": pose.as_array(),
            "commanded_pose": (report.commanded_pose if report else pose).as_array(),
            "collision": bool(report.collision) if report else False,
            "displacement": float(report.displacement) if report else 0.0,
            "collisions": int(self.sim.collisions),
            "contacts": report.contacts.object_ids if report else (),
            "contact_categories": report.contacts.categories if report else (),
            "snapped": bool(report.snapped) if report else False,
            "start_snap": self._start_snap,
            "geodesic_distance": distance,
            "distance_to_goal": float(np.linalg.norm(pose.xy - goal)),
            "room_type": self._room_type(pose),
            "oracle_action": self._oracle.action(pose, distance),
            "fail_reason": fail_reason,
            "success": bool(success),
            "steps": self._steps,
            "path_length": self._path_length,
            "episode_id": self.episode.episode_id,
            **self.components.info(),
        }

    def _room_type(self, pose: Pose) -> str:
        room = self.occupancy.room_at(np.array([pose.x, pose.y, pose.z]))
        return self.occupancy.rooms[room].room_type if room >= 0 else "unknown"

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        for name, spec in self.sim.rig.items():
            if isinstance(spec, RGBSensor):
                return self.sim.observe()[name]
        return self._agent_view()

    def _agent_view(self) -> np.ndarray:
        """A default RGB camera's view from the agent's pose (what the LLM oracle is shown)."""
        camera = RGBSensor()
        pose = self.sim.pose
        request = CameraRequest((pose.x, pose.y, pose.z + self.agent_spec.camera_height), pose.yaw, 0.0,
                                camera.width, camera.height, camera.hfov_deg, camera.near, camera.far)
        return self.sim.backend.render([request])[0].rgb

    def close(self) -> None:
        sim = getattr(self, "sim", None)
        if sim is not None:
            sim.close()
