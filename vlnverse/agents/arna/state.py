"""What one ARNA episode keeps, and the base of the agent's parts.

:class:`ARNAState` is the episode's state: the scene graph and toolset, the memory, the
generated workflow and its running executor, the navigation in progress and the counts
the budgets and the trace read. :class:`Part` is one job of
:class:`~vlnverse.agents.arna.agent.ARNAAgent` (its budgets, model calls, workflow
generation, executor, perception, navigation, memory updates): a collaborator that reads
the episode's state, the step's trace record and the config from the agent it serves.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vlnverse.agents.arna.config import ARNAConfig
from vlnverse.agents.arna.failures import FailureCounter
from vlnverse.agents.arna.memory import Memory
from vlnverse.agents.arna.plan import Interpreter, Program
from vlnverse.agents.arna.tools import NavGoal, ToolLibrary
from vlnverse.agents.arna.worldmodel import SceneMemoryGraph
from vlnverse.agents.base import EpisodeState


@dataclass
class Navigation:
    """A goal being driven to (the inner loop of Algorithm 1)."""

    goal: NavGoal
    steps: int = 0
    done: str | None = None           # why navigation ended (reached, unreachable, ...)
    new_images: list[int] = field(default_factory=list)
    new_objects: list[str] = field(default_factory=list)


@dataclass
class ARNAState(EpisodeState):
    """ARNA's per-episode memory."""

    graph: SceneMemoryGraph | None = None
    tools: ToolLibrary | None = None
    memory: Memory = field(default_factory=Memory)
    pose: np.ndarray = field(default_factory=lambda: np.zeros(4))
    workflow: dict[str, Any] = field(default_factory=dict)
    program: Program | None = None
    executor: Generator[Any, Any, Any] | None = None
    nav: Navigation | None = None
    executed: int = 0
    function_call_errors: list[str] = field(default_factory=list)
    perception_failures: FailureCounter | None = None
    plan_rejections: list[list[str]] = field(default_factory=list)
    list_cost_usd: float = 0.0
    started: float = 0.0
    ended: dict[str, Any] | None = None
    role: str = "workflow"
    reference: np.ndarray | None = None   # the visual-reference goal picture
    interpreter: Interpreter | None = None
    in_function: bool = False
    jumps: int = 0                         # steps the model chose out of program order


class Part:
    """One job of the agent. The agent builds its parts once and they live as long as it
    does, so they keep nothing of an episode themselves: its state, the record of the step
    being decided and the config are read from the agent, and the other parts are reached
    through it (``self.agent.calls``, ``self.agent.budgets``, ...).

    Args:
        agent: The :class:`~vlnverse.agents.arna.agent.ARNAAgent` this part serves.
    """

    def __init__(self, agent: Any) -> None:
        self.agent = agent

    @property
    def state(self) -> ARNAState:
        """The episode's state."""
        return self.agent.state

    @property
    def config(self) -> ARNAConfig:
        return self.agent.config

    @property
    def record(self) -> dict[str, Any]:
        """The trace record of the step being decided."""
        return self.agent.record
