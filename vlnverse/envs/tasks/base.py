"""The task component interface: what one task family adds to :class:`~vlnverse.envs.nav_env.NavEnv`.

The env keeps the loop (reset, step, physics, sensors, the dataset player, the generic
measures: pose, collisions, path length, geodesic distance, the oracle action, success,
reward). A task component adds, for the env's lifetime, observations (:meth:`spaces`,
:meth:`observe`) and discrete action ids (:attr:`action_count`, claimed back in
:meth:`claim`), and, for the episodes it :meth:`applies` to, its rules: what its actions
do (:meth:`act`), which goals count (:meth:`goal_indices`), what a STOP near a goal needs
(:meth:`judge`), whether a STOP ends the episode (:meth:`on_stop`) and the ``info`` keys it
owns (:meth:`info`). Keys listed in :attr:`idle_info` are on every env's ``info`` (with
those values where the component is absent), so that ``info`` has the same keys on every
task; :attr:`privileged_info` names the keys only privileged agents may read.

Families are registered by name in :mod:`vlnverse.tasks.registry`; the env builds the
components whose :meth:`wanted` says yes to its ``task`` and settings.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces

#: Characters an instruction may always contain (the Text space adds any others it sees).
INSTRUCTION_CHARSET = frozenset(string.printable) - frozenset("\x0b\x0c")
INSTRUCTION_MAX_LENGTH = 4096


@dataclass(frozen=True)
class StepOutcome:
    """What a component's own action did (the agent does not move on it)."""

    success: bool = False
    terminated: bool = False
    fail_reason: str | None = None


class TaskComponent:
    """One task family's part of the env (see the module docs).

    Args:
        env: The env (its scene, simulator, episode and goals are read through it).
        settings: The env's task settings (the :class:`NavEnv` keywords that configure tasks).
    """

    #: Info keys every env carries, and their values where this component does not apply.
    idle_info: ClassVar[Mapping[str, Any]] = {}
    #: Info keys of privileged knowledge (the oracle baseline and teachers only).
    privileged_info: ClassVar[tuple[str, ...]] = ()
    #: Discrete action ids the component adds after the navigation ones (and earlier components').
    action_count: ClassVar[int] = 0

    def __init__(self, env: Any, settings: Mapping[str, Any]) -> None:
        self.env = env
        self.first_action: int | None = None

    @classmethod
    def configure(cls, settings: dict[str, Any]) -> None:
        """Check (and normalize in place) the settings it reads; runs on every env, wanted or not."""

    @classmethod
    def wanted(cls, task: str | None, settings: Mapping[str, Any]) -> bool:
        """Whether an env for ``task`` with ``settings`` has this component."""
        return False

    def applies(self, episode: Any) -> bool:
        """Whether the component's rules hold in ``episode`` (its observations always do)."""
        return True

    def texts(self, episodes: Sequence[Any]) -> list[str]:
        """Texts the env's text observations must admit (their characters and length)."""
        return []

    def spaces(self, max_text: int, charset: frozenset[str]) -> dict[str, spaces.Space]:
        """The observations it adds."""
        return {}

    def claim(self, action: Any) -> Any | None:
        """The meaning of a discrete ``action`` among its ids (None: not one of them)."""
        if self.first_action is None or isinstance(action, (bool, np.bool_)):
            return None
        if isinstance(action, np.ndarray):
            if action.ndim != 0:
                return None
            action = action.item()
        if isinstance(action, (int, np.integer)) and 0 <= int(action) - self.first_action < self.action_count:
            return int(action) - self.first_action
        return None

    def reset(self, options: Mapping[str, Any]) -> None:
        """Start the env's new episode (before the agent is placed)."""

    def begin_step(self) -> None:
        """Forget the last step's transient observations."""

    def act(self, request: Any) -> StepOutcome:
        """Do what ``request`` (from :meth:`claim`, or the env's own method) asks. Only components
        that add actions (``action_count > 0``) are asked; such a component must define it."""
        raise TypeError(f"task component {type(self).__name__} adds {self.action_count} action(s) "
                        "but does not define act()")

    def goal_indices(self) -> tuple[int, ...] | None:
        """The goals that count now (None: leave it to others; all goals by default)."""
        return None

    def judge(self, reached: Sequence[int], pose: Any) -> bool:
        """Whether a STOP within the radius of goals ``reached`` succeeds."""
        return bool(reached)

    def on_stop(self, success: bool, pose: Any) -> bool:
        """Record a STOP; True when the episode goes on after it."""
        return False

    def instruction(self, text: str) -> str:
        """The instruction observation of this step, given the episode's own."""
        return text

    def observe(self) -> dict[str, Any]:
        return {}

    def info(self) -> dict[str, Any]:
        return dict(self.idle_info)
