"""Misbehaving agents for the harness tests (importable as ``tests.eval.agents_for_tests:...``)."""

from __future__ import annotations

from vlnverse.eval.agent import Agent


class CrashingAgent(Agent):
    """Turns left twice, then raises."""

    sensors = ()

    def reset(self, episode):
        self.steps = 0

    def act(self, observation):
        self.steps += 1
        if self.steps > 2:
            raise RuntimeError("boom: the agent crashed")
        return 2


class InvalidActionAgent(Agent):
    """Turns left once, then answers with an action outside Discrete(4)."""

    sensors = ()

    def reset(self, episode):
        self.steps = 0

    def act(self, observation):
        self.steps += 1
        return 2 if self.steps == 1 else 7


class ResetFailsAgent(Agent):
    """Fails already when reset."""

    sensors = ()

    def reset(self, episode):
        raise ValueError("cannot start")

    def act(self, observation):
        return 0
