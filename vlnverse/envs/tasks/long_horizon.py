"""Long horizon: an episode's goals are sub-goals, reached in order, each arrival a STOP.

A STOP on a sub-goal that is not the last one does not end the episode: it records the
arrival in ``info["subgoal_results"]`` (``success`` when the geodesic distance to that
sub-goal is within its radius, exactly as a final STOP is judged) and makes the next
sub-goal active (``geodesic_distance``, the oracle and the reward now follow it);
``info["subgoal_stop"]`` is True on that step. The ``instruction`` observation is the
whole chained instruction for the whole episode, as in the paper (``instruction_view="full"``);
with ``instruction_view="leg"`` it is the active leg's sub-instruction instead (a curriculum
/ debugging aid). The agent is not moved and the step budget spans the whole episode. The
STOP on the last sub-goal terminates; its ``success`` is that of the last sub-goal. SR_n
is read off ``subgoal_results`` (one entry per STOP, in order).

Every env has this component: an episode that is not sequential is one leg whose goals
all count, so ``info`` always carries ``subgoal_index``, ``subgoals_total``,
``subgoal_results`` and ``subgoal_stop``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vlnverse.envs.episode import INSTRUCTION_VIEWS
from vlnverse.envs.tasks.base import TaskComponent
from vlnverse.errors import ConfigError


class SubgoalTask(TaskComponent):
    """Sub-goal tracking (see the module docs)."""

    idle_info = {"subgoal_index": 0, "subgoals_total": 1, "subgoal_results": [], "subgoal_stop": False}

    def __init__(self, env: Any, settings: Mapping[str, Any]) -> None:
        super().__init__(env, settings)
        self.view = settings["instruction_view"]
        self.active = 0
        self.results: list[dict[str, Any]] = []
        self.stopped = False

    @classmethod
    def configure(cls, settings: dict[str, Any]) -> None:
        view = settings.setdefault("instruction_view", "full")
        if view not in INSTRUCTION_VIEWS:
            raise ConfigError(f"instruction_view must be one of {', '.join(INSTRUCTION_VIEWS)}, got {view!r}")

    @classmethod
    def wanted(cls, task: str | None, settings: Mapping[str, Any]) -> bool:
        return True

    def texts(self, episodes: Sequence[Any]) -> list[str]:
        return [t for e in episodes for t in e.subgoal_instructions]

    def reset(self, options: Mapping[str, Any]) -> None:
        self.active, self.results, self.stopped = 0, [], False

    def begin_step(self) -> None:
        self.stopped = False

    def goal_indices(self) -> tuple[int, ...] | None:
        return (self.active,) if self.env.episode.sequential else None

    def on_stop(self, success: bool, pose: Any) -> bool:
        episode = self.env.episode
        self.results.append({"index": self.active, "success": bool(success),
                             "position": [float(pose.x), float(pose.y), float(pose.z)],
                             "geodesic_distance": self.env._geodesic(pose)})
        if not episode.sequential or self.active >= len(episode.goals) - 1:
            return False
        self.active += 1
        self.stopped = True
        return True

    def instruction(self, text: str) -> str:
        return self.env.episode.instruction_for(self.active, self.view)

    def info(self) -> dict[str, Any]:
        episode = self.env.episode
        return {"subgoal_index": self.active, "subgoals_total": len(episode.goals) if episode.sequential else 1,
                "subgoal_results": [dict(r) for r in self.results], "subgoal_stop": self.stopped}
