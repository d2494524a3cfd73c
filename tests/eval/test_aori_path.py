"""AORI comes from the trajectory the harness recorded, not from what an agent reports."""

from __future__ import annotations

import numpy as np
import pytest

from vlnverse.eval.agent import Agent
from vlnverse.eval.running.harness import EvalConfig, evaluate
from vlnverse.eval.scoring.trace_metrics import AORIParams, aori

MOVES = [(1.0, 0.0, 0.0), (1.0, 1.5, 0.0), (1.0, 1.5, 0.0), (1.0, 1.5, 0.0), (1.0, -1.5, 0.0)]


class ReportingAgent(Agent):
    """Drives the fixed waypoint moves; its trace reports ``reported`` as its decision poses."""

    action_space = "waypoint"
    sensors = ()

    def __init__(self, reported):
        self.reported = reported

    def reset(self, episode):
        self.steps = 0

    def act(self, observation):
        self.steps += 1
        return np.array(MOVES[(self.steps - 1) % len(MOVES)], dtype=np.float32)

    def trace(self):
        return {"waypoints": self.reported}


def test_two_agents_driving_the_same_path_get_the_same_aori(bundled_dataset, tmp_path):
    runs = {}
    for name, reported in (("few", [[0.0, 0.0]]), ("many", [[x, 0.0] for x in range(0, 40, 4)])):
        runs[name] = evaluate(EvalConfig(
            dataset=str(bundled_dataset), out=str(tmp_path / name), agent=name, task="coarse", episodes=2,
            physics=("tel_hop",), max_steps=6, plots=0, bootstrap=10), agent=ReportingAgent(reported))
    for few, many in zip(runs["few"].records, runs["many"].records, strict=True):
        assert few["trajectory"] == many["trajectory"] and len(few["trajectory"]) > 2
        path = np.array(many["trajectory"])
        assert few["metrics"]["AORI"] == many["metrics"]["AORI"] == pytest.approx(aori(path, AORIParams())["AORI"])
