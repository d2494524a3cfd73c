"""Per-episode task state the env keeps: long-horizon sub-goals and dialogue budgets.

Long-horizon (paper §3.3.1 task 4, §3.4 SR_n): the agent declares each arrival with STOP.
:class:`SubgoalTracker` records every STOP; a STOP advances to the next sub-goal, whether
or not the agent was within the goal radius (SR_n scores that later); the STOP on the
last sub-goal ends the episode. The agent reads the whole chained instruction throughout
(the paper's task); ``view="leg"`` shows the active leg's sub-instruction instead. The
stop positions are what :mod:`vlnverse.eval.scoring.metrics` needs to compute SR_1..SR_n / SR_All.

Dialogue (task 5): :class:`DialogueSession` answers ``ask`` actions through an oracle
until the per-episode question budget is spent; the answer is delivered in the next
observation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from vlnverse.tasks.episode import Episode

BUDGET_SPENT = "No more questions: the question budget of this episode is spent."


@dataclass
class SubgoalTracker:
    """Which goal of an episode is active, and where the agent stopped for each.

    Attributes:
        episode: The episode.
        active: Index of the active goal.
        stops: Agent positions at each STOP, in order.
        reached: Per STOP, whether it was within the goal radius (Euclidean, xy).
        view: ``"full"`` (whole instruction) or ``"leg"`` (active sub-instruction).
    """

    episode: Episode
    active: int = 0
    stops: list[tuple[float, float, float]] = field(default_factory=list)
    reached: list[bool] = field(default_factory=list)
    view: str = "full"

    @property
    def n_goals(self) -> int:
        return len(self.episode.goals)

    @property
    def done(self) -> bool:
        """True once the last goal's STOP was issued."""
        return self.active >= self.n_goals

    @property
    def goal(self):
        """The active goal (the last one once done)."""
        return self.episode.goals[min(self.active, self.n_goals - 1)]

    @property
    def instruction(self) -> str:
        """What the agent reads: the whole instruction, or the active leg's with ``view="leg"``."""
        subgoals = self.episode.instruction.subgoals
        if self.view != "leg" or not subgoals:
            return self.episode.instruction.text
        return subgoals[min(self.active, len(subgoals) - 1)]

    def on_stop(self, position) -> bool:
        """Record a STOP at ``position``; returns True when the episode is over."""
        x, y, z = (float(v) for v in position[:3])
        goal = self.goal
        self.stops.append((x, y, z))
        self.reached.append(math.hypot(x - goal.position[0], y - goal.position[1]) < goal.radius)
        self.active += 1
        return self.done

    def info(self) -> dict:
        """JSON-ready state for the env's ``info``."""
        return {"subgoal_index": min(self.active, self.n_goals - 1), "subgoals_total": self.n_goals,
                "subgoal_stops": [list(p) for p in self.stops], "subgoal_reached": list(self.reached)}


@dataclass
class DialogueSession:
    """Questions and answers of one dialogue episode.

    Attributes:
        oracle: Anything with ``answer(question, pose, goal_index) -> str``.
        budget: Questions allowed.
        history: ``(question, answer)`` pairs, in order.
    """

    oracle: object
    budget: int = 3
    history: list[tuple[str, str]] = field(default_factory=list)

    @property
    def remaining(self) -> int:
        return max(self.budget - sum(1 for _, a in self.history if a != BUDGET_SPENT), 0)

    def ask(self, question: str, pose: tuple[float, float, float, float], goal_index: int = 0) -> str:
        """Answer ``question`` (or say that the budget is spent); the pair is recorded."""
        if self.remaining <= 0:
            answer = BUDGET_SPENT
        else:
            answer = self.oracle.answer(question, pose, goal_index)
        self.history.append((question, answer))
        return answer
