"""``VLNVerse/Nav-v0``: a gymnasium env joining a scene, the simulator, episodes and measures.

Observations are a ``Dict`` of the rig's sensors, the agent ``pose`` ``(x, y, z, yaw)``,
the ``instruction`` text and ``bump`` (1 when the last action's motion hit something: the
collision feedback a real robot's bumper gives, not privileged), plus ``reference_image`` (visual reference) and
``oracle_answer`` (dialogue) when those are enabled. ``info`` always carries ``pose``,
``room_type`` (of the room the agent stands in; privileged),
``collision``, ``displacement``, ``collisions``, ``geodesic_distance``, ``oracle_action``,
``fail_reason`` (``None`` while running and after a successful STOP; ``"stop"`` for a STOP
away from the goal, as in the eval records; ``"collision"``, ``"step_budget"``, ``"wrong_answer"``), ``start_snap`` (metres the start was moved at reset because it was not
navigable: to the nearest navigable point of the largest component), the sub-goal bookkeeping (``subgoal_index``, ``subgoals_total``,
``subgoal_results``, ``subgoal_stop``) and the dialogue counters (``questions_asked``,
``questions_remaining``), plus the commanded pose, touched objects and success; the
``info`` of ``reset`` also has ``semantic_categories``, the category of each semantic id
(privileged: only ``perception: gt`` agents may read it).

Datasets: ``NavEnv(dataset=DIR, split=..., task=...)`` plays the dataset's episodes in
their stored order, one per ``reset()``; ``reset(seed=...)`` restarts that order,
``options={"episode_id": ...}`` picks one, and ``options={"reference_image": FILE}`` gives a
visual-reference episode its goal image from a file. The scene is switched when an episode's scene
differs from the loaded one (the backend is reused while it stays the same).

Long-horizon (sequential) episodes: the goals are sub-goals reached in order. A STOP on a
sub-goal that is not the last one does not end the episode: it records the arrival in
``info["subgoal_results"]`` (``success`` when the geodesic distance to that sub-goal is
within its radius, exactly as a final STOP is judged) and makes the next sub-goal active
(``geodesic_distance``, the oracle and the reward now follow it); ``info["subgoal_stop"]``
is True on that step. The ``instruction`` observation is the whole chained instruction
for the whole episode, as in the paper (``instruction_view="full"``); with
``instruction_view="leg"`` it is the active leg's sub-instruction instead (a curriculum /
debugging aid, off by default). The agent
is not moved and the step budget spans the whole episode. The STOP on the last sub-goal
terminates; its ``success`` is that of the last sub-goal. SR_n is read off
``subgoal_results`` (one entry per STOP, in order).

Dialogue: with ``dialogue=True`` (the default for ``task="dialogue"``) the agent may ask
the oracle. Discrete action spaces gain one action id, :attr:`NavEnv.ask_action` (4 for
the VLN-CE set), which asks :data:`DEFAULT_QUESTION`; ``env.unwrapped.ask(question)``
asks a question of the agent's own wording on any action space and returns what
``step`` returns. An ask is a step: the agent does not move, the step penalty applies and
it counts against ``max_episode_steps``. The answer is the ``oracle_answer`` observation
of that step (empty on every other step). The budget is the episode's
``question_budget`` (else ``question_budget``, default 3); later asks are answered with
:data:`vlnverse.tasks.runtime.BUDGET_SPENT`. Answers come from the template oracle, or
from an LLM oracle when ``oracle_llm`` names a model (a :func:`vlnverse.llm.make_llm` spec
or a client). The template oracle answers the question asked (direction, distance, "where
is X", "am I close", "which room": :func:`vlnverse.tasks.oracle.question_kind`); the LLM
oracle is also shown the agent's current view (a default RGB camera at its pose) while
its model takes images.

EQA: with ``eqa=True`` (the default for ``task="eqa"``) the env observes the episode's
``question`` and ``options`` and the agent ends the episode with an answer:
``env.unwrapped.answer_action(k)`` is the discrete action id answering option ``k`` (ids
after the navigation and ask actions), ``env.unwrapped.answer(k)`` answers on any action
space (see :mod:`vlnverse.envs.eqa`).
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
from vlnverse.envs.episode import INSTRUCTION_VIEWS, Goal, NavEpisode, goal_from
from vlnverse.envs.eqa import AnswerActions, check_index
from vlnverse.envs.oracle import Oracle
from vlnverse.errors import ConfigError, DatasetError, InvalidActionError, SimulationError
from vlnverse.scene.navigation import DistanceField
from vlnverse.scene.occupancy import require_on_map
from vlnverse.scene.types import Scene
from vlnverse.sim.actions import make_action_space
from vlnverse.sim.agent import AgentSpec
from vlnverse.sim.backend import resolve_backend
from vlnverse.sim.gl.context import RENDERERS
from vlnverse.sim.physics import PhysicsConfig
from vlnverse.sim.rig import SensorRig
from vlnverse.sim.sensors import RGBSensor, SensorSpec, pose_space
from vlnverse.sim.simulator import Simulator
from vlnverse.sim.types import CameraRequest, Pose, StepReport
from vlnverse.tasks.episode import OPTION_COUNT

logger = logging.getLogger(__name__)

#: Characters an instruction may always contain (the Text space adds any others it sees).
INSTRUCTION_CHARSET = frozenset(string.printable) - frozenset("\x0b\x0c")
INSTRUCTION_MAX_LENGTH = 4096
#: Random episodes: tries to find a goal at least ``min_goal_distance`` away.
SAMPLE_TRIES = 64
#: What the discrete ask action asks.
DEFAULT_QUESTION = "Where should I go next?"
#: Default per-episode question budget of dialogue episodes.
DEFAULT_QUESTION_BUDGET = 3


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
    """Vision-language navigation over episodes of one or more scenes (see the module docs).

    Args:
        scene: Path to a USD scene (or a loaded :class:`Scene`); optional with a dataset
            or with episodes that name their scene.
        backend: ``"bullet"`` (default), ``"isaac"`` or ``"auto"``.
        physics: ``"strict"``, ``"slide"``, ``"tel_hop"`` or a :class:`PhysicsConfig`.
        action_space: ``"discrete"``, ``"velocity"``, ``"waypoint"`` or an action-space spec.
        sensors: Sensor names, a mapping of name → spec, or a :class:`SensorRig`.
        start: Start ``(x, y, yaw)``; random navigable (from the reset seed) when ``None``.
        goal: Goal ``(x, y)``; random reachable (from the reset seed) when ``None``.
        instruction: Instruction text of the single-episode form.
        goal_radius: Success radius in metres.
        episodes: Episodes to cycle through (overrides start/goal/instruction).
        dataset: A dataset directory, a ``.jsonl(.gz)`` file or an
            :class:`~vlnverse.tasks.dataset.EpisodeDataset` whose episodes to play.
        split: Dataset split (None: all).
        task: Dataset task (None: all); also decides the defaults of ``dialogue`` and
            ``reference_image``.
        scenes_dir: Where the dataset's scene paths are relative to (default: its manifest's).
        dialogue: Enable the ask action (default: ``task == "dialogue"``).
        question_budget: Questions per episode when the episode does not say (default 3).
        oracle_llm: LLM oracle: a :func:`vlnverse.llm.make_llm` spec or a client (None: template oracle).
        reference_image: Observe the goal's reference image (default: ``task == "visual_reference"``).
        reference_image_size: ``(height, width)`` of the ``reference_image`` observation.
        eqa: Observe the question and options and allow answers (default: ``task == "eqa"``).
        agent: The agent body.
        max_episode_steps: Step budget (default by action space: 500 discrete/velocity, 50 waypoint).
        reward: Dense reward weights.
        oracle_stop_distance: Geodesic distance at which the oracle says STOP (capped by the goal radius).
        min_goal_distance: Minimum geodesic start–goal distance of random episodes.
        occupancy_resolution: Grid resolution of the navigation map (metres).
        renderer: Camera renderer of the embedded backend: ``auto``, ``gl`` or ``tiny`` (see
            :class:`vlnverse.sim.Simulator`).
        render_mode: ``None`` or ``"rgb_array"``.
        instruction_view: Long-horizon: ``"full"`` (default, the paper's) observes the
            whole chained instruction, ``"leg"`` the active leg's sub-instruction.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(
        self,
        scene: str | Path | Scene | None = None,
        *,
        backend: str = "bullet",
        renderer: str = "auto",
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
        dataset: Any = None,
        split: str | None = None,
        task: str | None = None,
        scenes_dir: str | Path | None = None,
        dialogue: bool | None = None,
        question_budget: int = DEFAULT_QUESTION_BUDGET,
        oracle_llm: Any = None,
        reference_image: bool | None = None,
        reference_image_size: Sequence[int] = (224, 224),
        instruction_view: str = "full",
        eqa: bool | None = None,
    ) -> None:
        # Validate everything cheap before loading anything.
        self.physics = _physics(physics)
        self.agent_spec = _coerce(AgentSpec, agent, "agent")
        self.reward_config = _coerce(RewardConfig, reward, "reward")
        self.action_spec = make_action_space(action_space)
        rig = SensorRig.from_spec(sensors)
        backend = resolve_backend(backend)
        if renderer not in RENDERERS:
            raise ConfigError(f"unknown renderer {renderer!r}; valid: {', '.join(RENDERERS)}")
        self._renderer = renderer
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
        if instruction_view not in INSTRUCTION_VIEWS:
            raise ConfigError(f"instruction_view must be one of {', '.join(INSTRUCTION_VIEWS)}, got {instruction_view!r}")
        self.instruction_view = instruction_view
        self.episodes = tuple(e if isinstance(e, NavEpisode) else NavEpisode.from_mapping(e) for e in (episodes or ()))
        if not isinstance(question_budget, int) or isinstance(question_budget, bool) or question_budget < 0:
            raise ConfigError(f"question_budget must be a non-negative integer, got {question_budget!r}")
        self.question_budget = question_budget
        self.task = task
        self.dataset = None
        if dataset is not None:
            self.dataset, dataset_episodes = self._open_dataset(dataset, split, task, scenes_dir)
            self.episodes = (*self.episodes, *dataset_episodes)
        elif split is not None or scenes_dir is not None:
            raise ConfigError("split and scenes_dir need a dataset")
        self.dialogue = (task == "dialogue") if dialogue is None else bool(dialogue)
        self.observe_reference = (task == "visual_reference") if reference_image is None else bool(reference_image)
        self.eqa = (task == "eqa") if eqa is None else bool(eqa)
        try:
            size = tuple(int(v) for v in reference_image_size)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"reference_image_size must be (height, width), got {reference_image_size!r}") from exc
        if len(size) != 2 or min(size) < 1:
            raise ConfigError(f"reference_image_size must be (height, width), got {reference_image_size!r}")
        self.reference_image_size = size
        self._oracle_llm = self._make_llm(oracle_llm)
        self._backend_name = backend
        self._occupancy_resolution = float(occupancy_resolution)
        if scene is None:
            scene = next((e.scene for e in self.episodes if e.scene is not None), None)
            if scene is None:
                raise ConfigError("NavEnv needs a scene, a dataset, or episodes that name their scene")
        self.sim: Simulator | None = None
        self._scene_key: str | None = None
        self._load_scene(scene, rig)
        spec = self.agent_spec
        self.action_spec_space = self.action_spec.gym_space(spec)
        self.ask_action: int | None = None
        self.action_space = self.action_spec_space
        if self.dialogue and isinstance(self.action_space, spaces.Discrete):
            self.ask_action = int(self.action_space.start + self.action_space.n)
            self.action_space = spaces.Discrete(int(self.action_space.n) + 1, start=int(self.action_space.start))
        self._answers: AnswerActions | None = None
        if self.eqa:
            discrete = isinstance(self.action_space, spaces.Discrete)
            self._answers = AnswerActions(int(self.action_space.start + self.action_space.n) if discrete else None)
            if discrete:
                self.action_space = spaces.Discrete(int(self.action_space.n) + OPTION_COUNT,
                                                    start=int(self.action_space.start))
        texts = [self._instruction, *(e.instruction for e in self.episodes),
                 *(t for e in self.episodes for t in e.subgoal_instructions)]
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
        self._start_snap = 0.0
        self._path_length = 0.0
        self._active = 0
        self._subgoal_results: list[dict[str, Any]] = []
        self._dialogue_session: Any = None
        self._answer = ""
        self._answer_given: int | None = None
        self._answer_correct: bool | None = None
        self._reference: np.ndarray | None = None
        self._bump = 0
        self._contexts: dict[str, Any] = {}

    # -- scenes and datasets ---------------------------------------------------------------

    @staticmethod
    def _open_dataset(dataset: Any, split: str | None, task: str | None,
                      scenes_dir: str | Path | None) -> tuple[Any, list[NavEpisode]]:
        from vlnverse.tasks.dataset import EpisodeDataset

        if not isinstance(dataset, EpisodeDataset):
            dataset = EpisodeDataset.open(dataset, scenes_dir=scenes_dir)
        elif scenes_dir is not None:
            dataset.scenes_dir = Path(scenes_dir)
        records = dataset.episodes(split, task)
        return dataset, [NavEpisode.from_task_episode(r, str(dataset.scene_file(r))) for r in records]

    @staticmethod
    def _make_llm(value: Any) -> Any:
        if value is None or (isinstance(value, str) and value.strip().lower() == "none"):
            return None
        if isinstance(value, str):
            from vlnverse.llm import make_llm

            return make_llm(value)
        if not callable(getattr(value, "complete", None)):
            raise ConfigError(f"oracle_llm must be an LLM spec string or client, got {value!r}")
        return value

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
                "resolution": self._occupancy_resolution}
        if isinstance(scene, Scene):
            loaded, occupancy = scene, build_occupancy(scene, **dims)
        else:
            loaded, occupancy = scene_with_occupancy(key, **dims)
        rig = rig if rig is not None else SensorRig.from_spec(self.sim.rig)
        if self.sim is not None and backend == "isaac":  # one live Isaac Sim World per process
            self.sim.close()
            self.sim = None
        sim = Simulator(loaded, agent=spec, sensors=rig, physics=self.physics, backend=self._backend_name,
                        renderer=self._renderer, occupancy=occupancy, pose=Pose(*occupancy.sample_navigable(np.random.default_rng(0), 1)[0], 0.0))
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
        if self.observe_reference:
            height, width = self.reference_image_size
            entries["reference_image"] = spaces.Box(0, 255, (height, width, 3), dtype=np.uint8)
        if self.dialogue:
            entries["oracle_answer"] = spaces.Text(INSTRUCTION_MAX_LENGTH, min_length=0, charset=INSTRUCTION_CHARSET)
        if self.eqa:
            entries.update(AnswerActions.spaces(self._max_text, self._charset))
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

    def _next_episode(self, options: Mapping[str, Any], seed: int | None) -> NavEpisode:
        if "episode" in options:
            episode = options["episode"]
            if isinstance(episode, NavEpisode):
                return episode
            if isinstance(episode, Mapping):
                return NavEpisode.from_mapping(episode)
            scene = str(self.dataset.scene_file(episode)) if self.dataset is not None else None
            return NavEpisode.from_task_episode(episode, scene)
        if "episode_id" in options:
            wanted = str(options["episode_id"])
            for index, episode in enumerate(self.episodes):
                if episode.episode_id == wanted:
                    self._episode_cursor = index + 1
                    return episode
            raise ConfigError(f"no episode {wanted!r} among the env's {len(self.episodes)} episodes")
        if self.episodes:
            if seed is not None and "episode_index" not in options:
                self._episode_cursor = 0  # a seeded reset restarts the episode order
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
        self.episode = self._next_episode(options or {}, seed)
        if self.episode.scene is not None:
            self._load_scene(self.episode.scene)
        occ = self.occupancy
        x, y, yaw = self.episode.start
        self._reference = self._reference_image((options or {}).get("reference_image")) if self.observe_reference else None
        start = np.array([x, y, occ.floor_height])
        self._start_snap = 0.0
        require_on_map(occ, start, f"episode {self.episode.episode_id}: start")
        if not occ.is_navigable(start):
            # A start off the floor (in a wall, in furniture) goes to reachable floor: the
            # nearest navigable point of the largest component, never a sealed pocket.
            start = np.asarray(occ.nearest_navigable(start, component=occ.largest_component), dtype=np.float64)
            self._start_snap = float(math.hypot(start[0] - x, start[1] - y))
            logger.warning("episode %s: start (%.2f, %.2f) is not navigable; moved %.2f m to (%.2f, %.2f)",
                           self.episode.episode_id, x, y, self._start_snap, start[0], start[1])
        self.sim.reset(Pose(float(start[0]), float(start[1]), float(occ.floor_height), float(yaw)))
        goals = self.episode.goals
        self._fields = [self.navigator.distance_field(np.asarray(g.position[:2])) for g in goals]
        self._active = 0
        self._subgoal_results = []
        self._make_oracle()
        self._steps, self._done, self._path_length = 0, False, 0.0
        self._answer = ""
        self._bump = 0
        self._dialogue_session = None
        self._answer_given: int | None = None
        self._answer_correct: bool | None = None
        if self._answers is not None:
            self._answers.start(self.episode)
        if self.dialogue:
            from vlnverse.tasks.runtime import DialogueSession

            source = self.episode.source
            budget = source.question_budget if source is not None and source.question_budget is not None \
                else self.question_budget
            self._dialogue_session = DialogueSession(_LazyOracle(self), budget=budget)
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
        """The goals (and their fields) that count now: the active sub-goal, or all goals."""
        if self.episode.sequential:
            return (self.episode.goals[self._active],), [self._fields[self._active]]
        return self.episode.goals, self._fields

    def _is_ask(self, action: Any) -> bool:
        if self.ask_action is None or isinstance(action, (bool, np.bool_)):
            return False
        if isinstance(action, np.ndarray):
            if action.ndim != 0:
                return False
            action = action.item()
        return isinstance(action, (int, np.integer)) and int(action) == self.ask_action

    def ask(self, question: str = DEFAULT_QUESTION):
        """Ask the dialogue oracle ``question``; a step (see the module docs).

        Returns:
            What :meth:`step` returns; the answer is ``obs["oracle_answer"]``.

        Raises:
            InvalidActionError: dialogue is not enabled, or ``question`` is not a string.
        """
        if not self.dialogue:
            raise InvalidActionError("this env has no dialogue oracle (create it with dialogue=True or task='dialogue')")
        if not isinstance(question, str):
            raise InvalidActionError(f"a question must be a string, got {question!r}")
        return self._step(None, question)

    def answer_action(self, index: int) -> int:
        """EQA: the discrete action id that answers option ``index`` (0 = A).

        Raises:
            InvalidActionError: EQA is not enabled, the action space is not discrete, or
                ``index`` is not an option index.
        """
        if self._answers is None:
            raise InvalidActionError("this env has no EQA answers (create it with eqa=True or task='eqa')")
        return self._answers.action(index)

    def answer(self, index: int):
        """EQA: answer option ``index`` (0 = A) and end the episode; a step (see :mod:`vlnverse.envs.eqa`).

        Raises:
            InvalidActionError: EQA is not enabled, or ``index`` is not an option index.
        """
        if self._answers is None:
            raise InvalidActionError("this env has no EQA answers (create it with eqa=True or task='eqa')")
        return self._step(None, None, check_index(index))

    def step(self, action: Any):
        if self._is_ask(action):
            return self._step(None, DEFAULT_QUESTION)
        index = self._answers.index_of(action) if self._answers is not None else None
        if index is not None:
            return self._step(None, None, index)
        return self._step(action, None)

    def _step(self, action: Any, question: str | None, answer: int | None = None):
        if self.sim.closed:
            raise SimulationError("the env is closed; make a new one")
        if self._done:
            raise SimulationError("the episode is over; call reset() first")
        command = self.action_spec.to_command(action, self.agent_spec) if question is None and answer is None else None
        self._steps += 1
        report: StepReport | None = None
        fail_reason, success, terminated, subgoal_stop = None, False, False, False
        before = self.sim.pose
        self._answer = ""
        if question is not None:
            pose = before
            self._answer = _sanitize(self._dialogue_session.ask(
                question, (pose.x, pose.y, pose.z, pose.yaw), self._active))
        elif answer is not None:
            self._answer_given, self._answer_correct = answer, self._answers.judge(answer)
            success, terminated = self._answer_correct, True
        elif command is None:
            success = self._success(before)
            self._subgoal_results.append({
                "index": self._active, "success": bool(success),
                "position": [float(before.x), float(before.y), float(before.z)],
                "geodesic_distance": self._geodesic(before)})
            if self.episode.sequential and self._active < len(self.episode.goals) - 1:
                subgoal_stop = True
                self._active += 1
                self._make_oracle()
            else:
                terminated = True
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
        elif terminated and answer is not None and not success:
            fail_reason = "wrong_answer"
        elif terminated and command is None and not success:
            fail_reason = "stop"  # a STOP away from the goal, named as in the eval records
        if subgoal_stop:
            self._distance = distance  # now the next sub-goal's distance: progress restarts from here
        reward = self._reward(distance, report, success)
        self._distance = distance
        self._done = terminated or truncated
        info = self._info(pose, report, fail_reason, success, distance)
        info["subgoal_stop"] = subgoal_stop
        return self._observe(), reward, terminated, truncated, info

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
        return float(self._goal_field.distance_at(pose.xy))

    def _success(self, pose: Pose) -> bool:
        goals, fields = self._active_goals()
        reached = [k for k, (f, g) in enumerate(zip(fields, goals, strict=True))
                   if float(f.distance_at(pose.xy)) <= g.radius]
        source = self.episode.source
        if not reached or source is None or source.task != "objectnav":
            return bool(reached)
        # ObjectNav: the instance must be in view too, as the eval judges it
        from vlnverse.tasks import objectnav

        eye = self.occupancy.floor_height + self.agent_spec.camera_height
        return any(objectnav.instance_visible(self.sim, source.goals[k].object_id, pose.xy, eye) for k in reached)

    def _observe(self) -> dict[str, Any]:
        obs: dict[str, Any] = self.sim.observe()
        if "pose" not in obs:
            obs["pose"] = self.sim.pose.as_array().astype(np.float32)
        obs["instruction"] = self.episode.instruction_for(self._active, self.instruction_view)
        obs["bump"] = self._bump
        if self.observe_reference:
            obs["reference_image"] = self._reference.copy()
        if self.dialogue:
            obs["oracle_answer"] = self._answer
        if self._answers is not None:
            obs.update(self._answers.observe())
        return obs

    # -- task extras -------------------------------------------------------------------------

    def _reference_image(self, given: Any = None) -> np.ndarray:
        """The episode's reference image: ``given`` (an image file, as the ``reference_image``
        reset option), else the dataset's, else rendered at the final goal."""
        source = self.episode.source
        image = None
        if given is not None:
            from PIL import Image

            try:
                with Image.open(given) as picture:
                    image = np.asarray(picture.convert("RGB"))
            except OSError as exc:
                raise DatasetError(f"cannot read reference image {given}: {exc}") from exc
        elif source is not None and self.dataset is not None and source.reference_image:
            image = self.dataset.reference_image(source)
        if image is None:
            image = self._render_reference()
        height, width = self.reference_image_size
        if image.shape[:2] != (height, width):
            from PIL import Image

            image = np.asarray(Image.fromarray(image).resize((width, height), Image.BILINEAR))
        return np.ascontiguousarray(image[..., :3], dtype=np.uint8)

    def _render_reference(self) -> np.ndarray:
        """Render the view from the final goal towards its target (or along the last approach)."""
        goal = self.episode.goals[-1]
        source = self.episode.source
        floor = self.occupancy.floor_height
        gx, gy = float(goal.position[0]), float(goal.position[1])
        target = None
        object_id = source.goals[-1].object_id if source is not None else None
        if object_id is not None:
            target = next((0.5 * (np.asarray(o.aabb_min) + np.asarray(o.aabb_max))
                           for o in self.scene.objects if o.object_id == object_id), None)
        height, width = self.reference_image_size
        camera_z = floor + self.agent_spec.camera_height
        if target is not None:
            yaw = math.atan2(float(target[1]) - gy, float(target[0]) - gx)
            horizontal = max(math.hypot(float(target[0]) - gx, float(target[1]) - gy), 0.3)
            pitch = float(np.clip(math.atan2(float(target[2]) - camera_z, horizontal), -math.pi / 4, math.pi / 4))
        else:
            sx, sy = self.episode.start[:2]
            yaw = math.atan2(gy - sy, gx - sx) if math.hypot(gx - sx, gy - sy) > 1e-6 else 0.0
            pitch = 0.0
        self.sim.backend.set_agent_pose(Pose(gx, gy, float(floor), yaw))
        request = CameraRequest((gx, gy, camera_z), yaw, pitch, width, height, 90.0, 0.05, 30.0)
        return np.asarray(self.sim.backend.render([request])[0].rgb)

    def _scene_context(self) -> Any:
        """The scene context the dialogue oracle reasons over (built on first use per scene)."""
        if self._scene_key not in self._contexts:
            from vlnverse.scene.inspect import PreparedScene
            from vlnverse.scene.scene_graph import build_scene_graph
            from vlnverse.tasks.context import SceneContext

            prepared = PreparedScene(self.scene, self.occupancy, self.navigator,
                                     build_scene_graph(self.scene, self.occupancy))
            self._contexts = {self._scene_key: SceneContext(prepared)}
        return self._contexts[self._scene_key]

    def _dialogue_oracle(self) -> Any:
        from vlnverse.tasks.oracle import LLMOracle, TemplateOracle

        record = self.episode.source if self.episode.source is not None else self._synthetic_record()
        context = self._scene_context()
        if self._oracle_llm is not None:
            return LLMOracle(context, record, self._oracle_llm)
        return TemplateOracle(context, record)

    def _synthetic_record(self) -> Any:
        """A dataset record for an episode given only as positions (the oracle's input)."""
        from vlnverse.tasks.episode import Episode, Instruction, yaw_to_quaternion
        from vlnverse.tasks.episode import Goal as TaskGoal

        ep, floor = self.episode, float(self.occupancy.floor_height)
        return Episode(
            episode_id=ep.episode_id, trajectory_id=ep.episode_id, scene_id="scene", scene_path="scene",
            split="test", task="dialogue", start_position=(ep.start[0], ep.start[1], floor),
            start_rotation=yaw_to_quaternion(ep.start[2]),
            goals=tuple(TaskGoal((g.position[0], g.position[1], floor), g.radius) for g in ep.goals),
            reference_path=(), geodesic_distance=0.0,
            instruction=Instruction(ep.instruction or "Go to the goal."))

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
            "subgoal_index": self._active,
            "subgoals_total": len(self.episode.goals) if self.episode.sequential else 1,
            "subgoal_results": [dict(r) for r in self._subgoal_results],
            "subgoal_stop": False,
            "questions_asked": len(self._dialogue_session.history) if self._dialogue_session else 0,
            "questions_remaining": self._dialogue_session.remaining if self._dialogue_session else 0,
            "answer": self._answer_given,
            "answer_correct": self._answer_correct,
            "eqa_answer": self._answers.question.answer if self._answers is not None else None,
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


class _LazyOracle:
    """The dialogue oracle of the env's current episode, built on the first question."""

    def __init__(self, env: NavEnv) -> None:
        self.env = env
        self._oracle: Any = None

    def answer(self, question: str, pose: tuple[float, float, float, float], goal_index: int = 0) -> str:
        if self._oracle is None:
            self._oracle = self.env._dialogue_oracle()
        view = self.env._agent_view() if self._oracle.takes_images else None
        return self._oracle.answer(question, pose, goal_index, view=view)


def _sanitize(text: str) -> str:
    """``text`` within the ``oracle_answer`` space: printable ASCII, at most the maximum length."""
    import unicodedata

    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    cleaned = "".join(c if c in INSTRUCTION_CHARSET else " " for c in ascii_text)
    return cleaned[:INSTRUCTION_MAX_LENGTH]
