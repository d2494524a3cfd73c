"""Navigation episodes as the env consumes them (the dataset layer converts its records)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vlnverse.errors import ConfigError


def _finite(values: Sequence[float], what: str, sizes: tuple[int, ...]) -> tuple[float, ...]:
    try:
        out = tuple(float(v) for v in values)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{what} must be numbers, got {values!r}") from exc
    if len(out) not in sizes or not all(math.isfinite(v) for v in out):
        raise ConfigError(f"{what} must be {' or '.join(map(str, sizes))} finite numbers, got {values!r}")
    return out


INSTRUCTION_VIEWS = ("full", "leg")
"""What a long-horizon agent reads: ``full`` = the whole chained instruction for the whole
episode (the paper's task, the default); ``leg`` = only the active leg's sub-instruction,
which changes after each STOP (a curriculum / debugging aid, not the paper's protocol)."""

@dataclass(frozen=True)
class Goal:
    """A goal position (x, y[, z]) and its success radius in metres."""

    position: tuple[float, ...]
    radius: float = 3.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "position", _finite(self.position, "Goal.position", (2, 3)))
        if not math.isfinite(self.radius) or self.radius <= 0:
            raise ConfigError(f"Goal.radius must be positive, got {self.radius!r}")


@dataclass(frozen=True)
class NavEpisode:
    """One navigation episode.

    Attributes:
        episode_id: Stable id.
        start: Start pose ``(x, y, yaw)`` (yaw in radians).
        goals: One or more goals; reaching any of them succeeds, unless ``sequential``.
        instruction: The instruction text.
        reference_path: Optional (K, 3) reference path.
        sequential: Long-horizon: the goals are sub-goals to reach in order, each arrival
            declared with STOP (see :class:`vlnverse.envs.nav_env.NavEnv`).
        subgoal_instructions: Long-horizon: one instruction per sub-goal (the active one is
            the ``instruction`` observation); empty: ``instruction`` throughout.
        scene: Scene file of the episode (None: the env's current scene).
        source: The dataset record it was made from (a :class:`vlnverse.tasks.episode.Episode`),
            used by the dialogue oracle and the visual reference.
    """

    episode_id: str
    start: tuple[float, float, float]
    goals: tuple[Goal, ...]
    instruction: str = ""
    reference_path: tuple[tuple[float, float, float], ...] | None = None
    sequential: bool = False
    subgoal_instructions: tuple[str, ...] = ()
    scene: str | None = None
    source: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", _finite(self.start, "NavEpisode.start", (3,)))
        goals = tuple(g if isinstance(g, Goal) else goal_from(g) for g in self.goals)
        if not goals:
            raise ConfigError(f"episode {self.episode_id!r} has no goal")
        object.__setattr__(self, "goals", goals)
        if not isinstance(self.instruction, str):
            raise ConfigError(f"episode {self.episode_id!r}: instruction must be a string")
        subs = tuple(self.subgoal_instructions or ())
        if not all(isinstance(t, str) for t in subs):
            raise ConfigError(f"episode {self.episode_id!r}: subgoal_instructions must be strings")
        if subs and (not self.sequential or len(subs) != len(goals)):
            raise ConfigError(f"episode {self.episode_id!r}: subgoal_instructions need sequential=True "
                              f"and one text per goal ({len(goals)} goals, {len(subs)} texts)")
        object.__setattr__(self, "subgoal_instructions", subs)
        object.__setattr__(self, "sequential", bool(self.sequential))

    def instruction_for(self, index: int, view: str = "full") -> str:
        """The instruction observed while goal ``index`` is active: the whole (chained)
        instruction with ``view="full"`` (the paper's long-horizon task), the active
        leg's sub-instruction with ``view="leg"`` (see :data:`INSTRUCTION_VIEWS`)."""
        if view == "leg" and self.subgoal_instructions:
            return self.subgoal_instructions[min(index, len(self.subgoal_instructions) - 1)]
        return self.instruction

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> NavEpisode:
        """Build from ``{"episode_id", "start", "goals" | "goal", "instruction", "reference_path",
        "sequential", "subgoal_instructions", "scene"}``."""
        known = {"episode_id", "start", "goals", "goal", "goal_radius", "instruction", "reference_path",
                 "sequential", "subgoal_instructions", "scene"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"episode: unknown key(s) {', '.join(unknown)}; valid: {', '.join(sorted(known))}")
        radius = float(data.get("goal_radius", 3.0))
        goals = data.get("goals")
        if goals is None:
            if "goal" not in data:
                raise ConfigError("episode: needs 'goals' or 'goal'")
            goals = [data["goal"]]
        path = data.get("reference_path")
        return cls(
            episode_id=str(data.get("episode_id", "0")),
            start=tuple(data["start"]),
            goals=tuple(goal_from(g, radius) for g in goals),
            instruction=str(data.get("instruction", "")),
            reference_path=tuple(tuple(map(float, p)) for p in path) if path is not None else None,
            sequential=bool(data.get("sequential", False)),
            subgoal_instructions=tuple(data.get("subgoal_instructions") or ()),
            scene=str(data["scene"]) if data.get("scene") is not None else None,
        )

    @classmethod
    def from_task_episode(cls, episode: Any, scene: str | None = None) -> NavEpisode:
        """The env episode of a dataset record (:class:`vlnverse.tasks.episode.Episode`).

        Long-horizon records become ``sequential`` episodes with their sub-instructions.
        """
        long_horizon = episode.task == "long_horizon"
        return cls(
            episode_id=episode.episode_id,
            start=(episode.start_position[0], episode.start_position[1], episode.start_yaw),
            goals=tuple(Goal(tuple(g.position), g.radius) for g in episode.goals),
            instruction=episode.instruction.text,
            reference_path=tuple(episode.reference_path) or None,
            sequential=long_horizon,
            subgoal_instructions=tuple(episode.instruction.subgoals) if long_horizon else (),
            scene=scene,
            source=episode,
        )


def goal_from(value: Any, radius: float = 3.0) -> Goal:
    """A :class:`Goal` from a Goal, ``{"position", "radius"}`` or a bare position."""
    if isinstance(value, Goal):
        return value
    if isinstance(value, Mapping):
        return Goal(tuple(value["position"]), float(value.get("radius", radius)))
    return Goal(tuple(value), radius)
