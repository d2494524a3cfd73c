"""How each waypoint predictor fares under Strict and Tel-Hop when the choice is perfect.

An agent that sees the geodesic distance to the goal (privileged) moves, at every decision,
to the candidate of the waypoint predictor nearest the goal by geodesic distance, and
stops once it is within ``--stop-distance`` (the paper's oracle stop, 1.5 m, §5.5); it has
``--max-decisions`` decisions (A.2.4: 35). Whatever SR it loses is lost to the candidates
and to physics, not to reasoning: the paper's §5.3 argument. Prints one markdown table: SR,
CR (collisions per action), the share of episodes ended by a collision, and the mean number
of candidates per decision, per predictor and physics mode.

    python tools/waypoint_oracle.py --dataset data/bundled --splits val_unseen,test --tasks fine,coarse
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np


def make_oracle(predictor: Any, panorama: Any, env: Any, stop_distance: float) -> Any:
    """The nearest-to-goal agent over ``predictor``'s candidates in ``env``."""
    from vlnverse.agents.panorama import Panorama, make_rig
    from vlnverse.agents.waypoints.candidate import Candidate
    from vlnverse.eval.agent import Agent
    from vlnverse.learning.waypoints.targets import to_world

    class NearestToGoal(Agent):
        action_space = "waypoint"
        privileged = ("goal_geodesic",)

        def __init__(self) -> None:
            self.sensors = dict(make_rig(panorama, ("depth",)).items())
            self.counts: list[int] = []
            self.info: Mapping[str, Any] = {}

        def observe_info(self, info: Mapping[str, Any]) -> None:
            self.info = info

        def act(self, observation: Mapping[str, Any]) -> np.ndarray:
            if self.info.get("geodesic_distance", math.inf) < stop_distance:
                return np.array([0.0, 0.0, 1.0], dtype=np.float32)
            candidates: list[Candidate] = predictor.predict(Panorama.from_observation(observation, panorama))
            self.counts.append(len(candidates))
            if not candidates:
                return np.array([0.0, math.pi / 2, 0.0], dtype=np.float32)
            pose = np.asarray(observation["pose"], dtype=np.float64)
            ends = to_world(np.array([c.offset for c in candidates]), pose[0], pose[1], pose[3])
            distances = env.goal_distances(ends)[int(self.info.get("subgoal_index", 0))]
            best = candidates[int(np.argmin(np.where(np.isfinite(distances), distances, np.inf)))]
            return np.array([best.distance, best.heading, 0.0], dtype=np.float32)

    return NearestToGoal()


def evaluate(args: argparse.Namespace, predictor_name: str, physics: str) -> dict[str, float]:
    from vlnverse.agents.config import PanoramaConfig, WaypointConfig
    from vlnverse.agents.panorama import make_rig
    from vlnverse.agents.waypoints.predictor import predictor_named
    from vlnverse.envs.nav_env import NavEnv
    from vlnverse.eval.running.runner import run_episode
    from vlnverse.tasks.dataset import EpisodeDataset

    panorama = PanoramaConfig()
    predictor = predictor_named(predictor_name, WaypointConfig())
    data = EpisodeDataset.open(args.dataset)
    episodes = [e for s in args.splits.split(",") for t in args.tasks.split(",")
                for e in data.episodes(s, t)[:args.episodes]]
    records, counts = [], []
    envs: dict[str, Any] = {}
    try:
        for episode in episodes:
            scene = str(data.scene_file(episode))
            if scene not in envs:
                envs[scene] = NavEnv(scene, physics=physics, action_space="waypoint",
                                     sensors=dict(make_rig(panorama, ("depth",)).items()),
                                     max_episode_steps=args.max_decisions)
            agent = make_oracle(predictor, panorama, envs[scene], args.stop_distance)
            record, _ = run_episode(envs[scene], agent, episode, physics=physics)
            records.append(record)
            counts += agent.counts
    finally:
        for env in envs.values():
            env.close()
    return {"episodes": len(records),
            "SR": float(np.mean([r["metrics"]["SR"] for r in records])),
            "CR": float(np.mean([r["metrics"]["CR"] for r in records])),
            "ended_by_collision": float(np.mean([r["fail_reason"] == "collision" for r in records])),
            "candidates": float(np.mean(counts)) if counts else 0.0}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--splits", default="val_unseen,test")
    parser.add_argument("--tasks", default="fine,coarse")
    parser.add_argument("--predictors", default="learned,depth")
    parser.add_argument("--physics", default="strict,tel_hop")
    parser.add_argument("--episodes", type=int, default=None, help="first N episodes per split and task (default: all)")
    parser.add_argument("--stop-distance", type=float, default=1.5)
    parser.add_argument("--max-decisions", type=int, default=35)
    args = parser.parse_args(argv)
    lines = ["| predictor | physics | episodes | SR % | CR % | ended by collision % | candidates / decision |",
             "|---|---|---|---|---|---|---|"]
    for name in args.predictors.split(","):
        for physics in args.physics.split(","):
            f = evaluate(args, name, physics)
            lines.append(f"| {name} | {physics} | {f['episodes']} | {100 * f['SR']:.1f} | {100 * f['CR']:.1f} | "
                         f"{100 * f['ended_by_collision']:.1f} | {f['candidates']:.2f} |")
            sys.stdout.write(lines[-1] + "\n")
            sys.stdout.flush()
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
