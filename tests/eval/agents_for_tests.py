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


class HangingAgent(Agent):
    """Turns left once, then never answers (waits forever, swallowing errors, as a
    badly written client polling a stuck server would)."""

    sensors = ()

    def reset(self, episode):
        self.steps = 0

    def act(self, observation):
        import time

        self.steps += 1
        while self.steps > 1:
            try:
                time.sleep(0.01)
            except Exception:  # noqa: BLE001, S110 - the time limit is not an Exception
                pass
        return 2


class SlowAgent(Agent):
    """Turns left at once, then takes 0.6 s over each further turn (past a 0.5 s limit, in Python)."""

    sensors = ()

    def reset(self, episode):
        self.steps = 0

    def act(self, observation):
        import time

        self.steps += 1
        if self.steps > 1:
            time.sleep(0.6)
        return 2


class SleepingAgent(Agent):
    """Turns left once, then sleeps for an hour inside one C call (as an agent blocked in a
    socket read or a stuck native library does): no exception raised in its thread lands."""

    sensors = ()

    def reset(self, episode):
        self.steps = 0

    def act(self, observation):
        import time

        self.steps += 1
        if self.steps > 1:
            time.sleep(3600)
        return 2


class DeepTraceAgent(Agent):
    """Stops at once, with a trace nested 3,000 levels deep (as a model's plan parsed
    blindly would be: neither JSON nor pickle can write it) and a 100 kB reply."""

    sensors = ()

    def reset(self, episode):
        pass

    def act(self, observation):
        return 0

    def trace(self):
        plan: list = []
        for _ in range(3000):
            plan = [plan]
        return {"plan": plan, "reply": "x" * 100_000}


class LockedTraceAgent(DeepTraceAgent):
    """Stops at once, with a lock in its trace: a record that cannot be stored."""

    def trace(self):
        import threading

        return {"lock": threading.Lock()}


def turn_left(observation):
    """A plain policy function: always turn left."""
    return 2


NOT_AN_AGENT = 3


BROKEN_ENV = "VLNVERSE_TEST_AGENT_BROKEN"


class FixableAgent(Agent):
    """Raises at its first step while ``$VLNVERSE_TEST_AGENT_BROKEN`` is set (a bug, later
    fixed); else turns left twice and stops."""

    sensors = ()

    def reset(self, episode):
        import os

        self.broken = bool(os.environ.get(BROKEN_ENV))
        self.steps = 0

    def act(self, observation):
        if self.broken:
            raise RuntimeError("boom: the agent has a bug")
        self.steps += 1
        return 2 if self.steps <= 2 else 0
