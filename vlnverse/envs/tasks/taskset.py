"""The task components of one env, composed in registry order (what :class:`NavEnv` talks to)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from gymnasium import spaces

from vlnverse.envs.tasks.base import TaskComponent
from vlnverse.registry import load_entry_point
from vlnverse.tasks.registry import task_families


def component_classes() -> list[tuple[str, type[TaskComponent]]]:
    """``(task name, component class)`` of every registered family that has one, in registry order."""
    return [(family.name, load_entry_point(family.component)) for family in task_families() if family.component]


def wanted_components(task: str | None) -> tuple[str, ...]:
    """The families whose components an env for ``task`` has by default (envs with the same
    ones are interchangeable: they differ at most in their episodes)."""
    return tuple(name for name, family in component_classes() if family.wanted(task, {}))


class TaskSet:
    """Every registered family's component that the env's ``task`` and ``settings`` want.

    Args:
        env: The env.
        task: The env's task name (None: none).
        settings: The env's task settings; each family checks (and normalizes) the ones it reads.
    """

    def __init__(self, env: Any, task: str | None, settings: dict[str, Any]) -> None:
        families = component_classes()
        for _, family in families:
            family.configure(settings)
        #: (task name, component class, its instance or None), in registry order.
        self.families = [(name, family, family(env, settings) if family.wanted(task, settings) else None)
                         for name, family in families]
        self.parts = [part for _, _, part in self.families if part is not None]
        self.live: list[TaskComponent] = []

    def component(self, name: str) -> TaskComponent | None:
        """The component of task family ``name`` (None when the env has none)."""
        return next((part for family, _, part in self.families if family == name), None)

    def add_actions(self, space: spaces.Space) -> spaces.Space:
        """``space`` with the components' discrete action ids after its own (unchanged if not discrete)."""
        for part in self.parts:
            if part.action_count and isinstance(space, spaces.Discrete):
                part.first_action = int(space.start + space.n)
                space = spaces.Discrete(int(space.n) + part.action_count, start=int(space.start))
        return space

    def texts(self, episodes: Sequence[Any]) -> list[str]:
        return [t for part in self.parts for t in part.texts(episodes)]

    def spaces(self, max_text: int, charset: frozenset[str]) -> dict[str, spaces.Space]:
        return {k: v for part in self.parts for k, v in part.spaces(max_text, charset).items()}

    def start(self, episode: Any, options: Mapping[str, Any]) -> None:
        """Select the components whose rules hold in ``episode`` and start them."""
        self.live = [part for part in self.parts if part.applies(episode)]
        for part in self.live:
            part.reset(options)

    def claim(self, action: Any) -> tuple[TaskComponent, Any] | None:
        """The component whose action id ``action`` is, and what it asks (None: a navigation action)."""
        for part in self.parts:
            request = part.claim(action)
            if request is not None:
                return part, request
        return None

    def begin_step(self) -> None:
        for part in self.live:
            part.begin_step()

    def goal_indices(self) -> tuple[int, ...] | None:
        return next((i for part in self.live if (i := part.goal_indices()) is not None), None)

    def judge(self, reached: Sequence[int], pose: Any) -> bool:
        return bool(reached) and all(part.judge(reached, pose) for part in self.live)

    def on_stop(self, success: bool, pose: Any) -> bool:
        """Tell every live component of a STOP; True when one of them keeps the episode going."""
        return any([part.on_stop(success, pose) for part in self.live])

    def instruction(self, text: str) -> str:
        for part in self.live:
            text = part.instruction(text)
        return text

    def observe(self) -> dict[str, Any]:
        return {k: v for part in self.live for k, v in part.observe().items()}

    def privileged_info(self) -> tuple[str, ...]:
        """The ``info`` keys of privileged knowledge the families declare (for readers of ``info``
        that must keep fair agents off them; the env's own are ``room_type`` and ``oracle_action``)."""
        return tuple(key for _, family, _ in self.families for key in family.privileged_info)

    def info(self) -> dict[str, Any]:
        """Every family's ``info`` keys: its component's where it holds, else the family's idle values."""
        out: dict[str, Any] = {}
        for _, family, part in self.families:
            out.update(part.info() if part is not None and part in self.live else copy.deepcopy(family.idle_info))
        return out
