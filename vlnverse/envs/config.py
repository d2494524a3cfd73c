"""The settings of a :class:`~vlnverse.envs.nav_env.NavEnv`: one object, checked before anything loads.

``NavEnv(scene, config=NavEnvConfig(...))`` and ``NavEnv(scene, physics="tel_hop", ...)`` are
the same env: keyword settings are the config's fields (:meth:`NavEnvConfig.build`), so
``gymnasium.make`` and :func:`vlnverse.make` take them as they always have. What the env plays
(the scene, explicit episodes, a dataset and its split) is not a setting but its input.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vlnverse.envs.tasks.dialogue import DEFAULT_QUESTION_BUDGET
from vlnverse.errors import ConfigError
from vlnverse.sim.gl.context import RENDERERS
from vlnverse.sim.gl.panorama import PANORAMA_MODES

TASK_SETTINGS = ("dialogue", "question_budget", "oracle_llm", "eqa", "reference_image", "reference_image_size",
                 "instruction_view")
"""The fields the task components read (:class:`~vlnverse.envs.tasks.TaskSet`); each family checks its own."""


@dataclass(frozen=True)
class NavEnvConfig:
    """Every setting of a :class:`~vlnverse.envs.nav_env.NavEnv`.

    Attributes:
        backend: ``"bullet"`` (default), ``"isaac"`` or ``"auto"``.
        renderer: Camera renderer of the embedded backend: ``auto``, ``gl`` or ``tiny`` (see
            :class:`vlnverse.sim.Simulator`).
        panorama: How the GL renderer draws the 12-view panorama: ``one_pass`` (default) or
            ``direct`` (see :class:`vlnverse.sim.Simulator`).
        physics: ``"strict"``, ``"slide"``, ``"tel_hop"`` or a :class:`PhysicsConfig`.
        action_space: ``"discrete"``, ``"velocity"``, ``"waypoint"`` or an action-space spec.
        sensors: Sensor names, a mapping of name → spec, or a :class:`SensorRig`.
        agent: The agent body.
        max_episode_steps: Step budget (default by action space: 500 discrete/velocity, 50 waypoint).
        reward: Dense reward weights.
        oracle_stop_distance: Geodesic distance at which the oracle says STOP (capped by the goal radius).
        min_goal_distance: Minimum geodesic start–goal distance of random episodes.
        occupancy_resolution: Grid resolution of the navigation map (metres).
        render_mode: ``None`` or ``"rgb_array"``.
        start: Start ``(x, y, yaw)``; random navigable (from the reset seed) when ``None``.
        goal: Goal ``(x, y)``; random reachable (from the reset seed) when ``None``.
        instruction: Instruction text of the single-episode form.
        goal_radius: Success radius in metres of the single-episode form's goals.
        task: Task name (:mod:`vlnverse.tasks.registry`): selects a dataset's episodes and
            the task components the env has by default.
        dialogue: Enable the ask action (default: ``task == "dialogue"``).
        question_budget: Questions per episode when the episode does not say (default 3).
        oracle_llm: LLM oracle: a :func:`vlnverse.llm.make_llm` spec or a client (None: template oracle).
        eqa: Observe the question and options and allow answers (default: ``task == "eqa"``).
        reference_image: Observe the goal's reference image (default: ``task == "visual_reference"``).
        reference_image_size: ``(height, width)`` of the ``reference_image`` observation.
        instruction_view: Long-horizon: ``"full"`` (default, the paper's) observes the
            whole chained instruction, ``"leg"`` the active leg's sub-instruction.
    """

    backend: str = "bullet"
    renderer: str = "auto"
    panorama: str = "one_pass"
    physics: Any = "strict"
    action_space: Any = "discrete"
    sensors: Any = ("rgb", "depth")
    agent: Any = None
    max_episode_steps: int | None = None
    reward: Any = None
    oracle_stop_distance: float = 0.5
    min_goal_distance: float = 1.0
    occupancy_resolution: float = 0.05
    render_mode: str | None = None
    start: Sequence[float] | None = None
    goal: Sequence[float] | None = None
    instruction: str = ""
    goal_radius: float = 3.0
    task: str | None = None
    dialogue: bool | None = None
    question_budget: int = DEFAULT_QUESTION_BUDGET
    oracle_llm: Any = None
    eqa: bool | None = None
    reference_image: bool | None = None
    reference_image_size: Sequence[int] = (224, 224)
    instruction_view: str = "full"

    def __post_init__(self) -> None:
        if self.renderer not in RENDERERS:
            raise ConfigError(f"unknown renderer {self.renderer!r}; valid: {', '.join(RENDERERS)}")
        if self.panorama not in PANORAMA_MODES:
            raise ConfigError(f"unknown panorama mode {self.panorama!r}; valid: {', '.join(PANORAMA_MODES)}")
        if self.render_mode not in (None, "rgb_array"):
            raise ConfigError(f"render_mode must be None or 'rgb_array', got {self.render_mode!r}")
        steps = self.max_episode_steps
        if steps is not None and (not isinstance(steps, int) or steps < 1):
            raise ConfigError(f"max_episode_steps must be a positive integer, got {steps!r}")
        for name in ("oracle_stop_distance", "min_goal_distance", "occupancy_resolution"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0 or (
                    name == "occupancy_resolution" and value == 0):
                raise ConfigError(f"{name} must be a {'positive' if name == 'occupancy_resolution' else 'non-negative'} number, got {value!r}")
        if not isinstance(self.goal_radius, (int, float)) or not self.goal_radius > 0:
            raise ConfigError(f"goal_radius must be positive, got {self.goal_radius!r}")
        if not isinstance(self.instruction, str):
            raise ConfigError(f"instruction must be a string, got {self.instruction!r}")

    @classmethod
    def build(cls, config: NavEnvConfig | None = None, **settings: Any) -> NavEnvConfig:
        """``config`` (default: the defaults) with ``settings`` in place of its fields.

        Raises:
            ConfigError: a setting that is no field, or a value out of range.
        """
        fields = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(settings) - set(fields))
        if unknown:
            raise ConfigError(f"unknown NavEnv setting(s) {', '.join(unknown)}; valid: {', '.join(fields)}")
        return dataclasses.replace(config or cls(), **settings)

    def task_settings(self) -> dict[str, Any]:
        """The settings the task components read (:data:`TASK_SETTINGS`)."""
        return {name: getattr(self, name) for name in TASK_SETTINGS}

