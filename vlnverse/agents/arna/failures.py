"""ARNA's failure counters: each kind of failure counted apart, with its own ending.

Function-call errors (an invalid tool call, a plan step's structured output that never
followed its schema) are the paper's (Table 1b); a perception reply that never followed
its schema is not: in the paper perception is GroundingDINO/SAM's job, not a plan step. So
each kind has its own counter, its own limit and its own outcome reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class FailureCounter:
    """The failures of one kind in an episode.

    Attributes:
        reason: The outcome reason when the limit is reached.
        limit: Failures in a row that end the run (0: never).
        details: Every failure's description (capped at 300 characters each).
        streak: Failures since the last success.
    """

    reason: str
    limit: int
    details: list[str] = field(default_factory=list)
    streak: int = 0

    def fail(self, detail: str) -> bool:
        """Count one failure; whether the limit is now reached."""
        self.details.append(detail[:300])
        self.streak += 1
        return bool(self.limit) and self.streak >= self.limit

    def succeed(self) -> None:
        """A success: the count of failures in a row starts again."""
        self.streak = 0
