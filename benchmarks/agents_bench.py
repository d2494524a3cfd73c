"""LLM-agent benchmarks: episode throughput while waiting for a slow model, and the
agent's own per-step overhead.

``agents.throughput_2x8_vs_1x1``: ``vlnverse eval`` of the ``text_history`` agent
(``perception: vlm``: the images go to the model) against a loopback OpenAI-compatible
server (:class:`vlnverse.llm.loopback.LoopbackServer`) that answers every request after
1 s: STOP for one prompt in four, else the first offered candidate. Episodes per minute of
``--workers 2 --concurrency 8`` over those of ``--workers 1 --concurrency 1``, same dataset
(generated from the bundled scenes, Tel-Hop, at most ``--max-steps`` steps), process
start-up and env building included. The K=1 run evaluates fewer episodes (its rate is
steady after the first); the K=8 run evaluates 64, since each of its 16 concurrent
episodes builds an env of its own first (a real run amortizes that over many more). The
agent's panorama is its default 12 views of 224 px (``--throughput-rig small``: 4 x 64 px).
With the GL renderer the full panorama takes about 0.07 s per step; with TinyRenderer it
took about 1 s, as long as the model's answer, and two cores then cap the speed-up near
2 x (1 s + step) / step whatever the concurrency: use ``small`` there to measure the
harness's overlap of the model's latency alone. The full panorama's env time per step is
printed with the overhead figure.

``agents.step_overhead_ms``: the same agent's ``act()`` time per step with its default
12-view 224-px panorama — perception, candidate waypoints, local map, prompt building and
image encoding, reply parsing: everything but waiting for the model — with an in-process
client that answers at once, over the first ``--overhead-episodes`` fine episodes (env
time excluded). The median per
step is the figure; the 90th percentile is printed too.

``agents.waypoint_predictor_ms``: the learned waypoint predictor's ``predict()`` per step
(the LLM agents' default candidate source: pooling, network, peak picking) on 12-view
224-px depth panoramas rendered at ``--predictor-poses`` navigable poses of a bundled
scene, on one torch thread; the median is the figure, the depth predictor's is printed
beside it, with the machine's load average. ``--predictor-only`` runs just this one.

This 2-core machine is shared, so absolute figures are noisy; the ratio is measured
within one run of this script.

Usage: ``python benchmarks/agents_bench.py [--episodes N] [--max-steps S] [--delay S]``
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import statistics
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KEY_ENV = "VLNVERSE_BENCH_LLM_KEY"
_OPTIONS = re.compile(r'"action" must be exactly one of: ([^\n]*?)\.\s*$', re.MULTILINE)


def bundled_dataset(folder: Path, per_scene: int) -> Path:
    """A dataset generated from the bundled scenes (prior instructions, seed 0)."""
    from vlnverse.tasks.datagen import DatagenConfig, run_datagen
    from vlnverse.tasks.generate import GenerationConfig

    out = folder / "dataset"
    run_datagen(DatagenConfig(scenes=str(REPO / "assets" / "scenes"), out=str(out), seed=0,
                              generation=GenerationConfig(per_scene=per_scene)))
    return out


class Walker:
    """The model's answers: STOP for one prompt in four (by the prompt's hash, so episode
    lengths do not depend on how requests interleave), else the first offered candidate."""

    def __call__(self, body: dict) -> str:
        text = "\n".join(
            part if isinstance(part, str) else part.get("text", "")
            for m in body["messages"]
            for part in ([m["content"]] if isinstance(m["content"], str) else m["content"]))
        found = _OPTIONS.findall(text)
        options = [o.strip() for o in found[-1].split(",")] if found else ["STOP"]
        moves = [o for o in options if o not in ("STOP", "ASK")]
        stop = hashlib.sha256(text.encode()).digest()[0] % 4 == 0
        action = "STOP" if stop or not moves else moves[0]
        return json.dumps({"thought": "benchmark", "action": action})


def run_eval(dataset: Path, out: Path, url: str, workers: int, concurrency: int, episodes: int,
             max_steps: int, agent_config: dict) -> tuple[float, int]:
    """Episodes per minute of one eval run, and the number of episodes it evaluated."""
    from vlnverse.eval.running.harness import EvalConfig, evaluate

    config = EvalConfig(dataset=str(dataset), out=str(out), agent="text_history", agent_config=agent_config,
                        physics=("tel_hop",),
                        episodes=episodes, workers=workers, concurrency=concurrency, plots=0, bootstrap=10,
                        max_steps=max_steps, llm=f"openai:bench-model?base_url={url}&api_key_env={KEY_ENV}"
                                                 "&max_retries=0&timeout=60")
    start = time.perf_counter()
    result = evaluate(config)
    elapsed = time.perf_counter() - start
    errors = [r for r in result.records if r["fail_reason"] == "error"]
    if errors:
        raise RuntimeError(f"benchmark episodes failed: {errors[0]['error']}")
    return 60.0 * result.evaluated / elapsed, result.evaluated


def bench_throughput(args: argparse.Namespace, dataset: Path, folder: Path) -> list[str]:
    from vlnverse.llm.loopback import LoopbackServer

    rig = {} if args.throughput_rig == "full" else {"panorama": {"views": 4, "image_size": 64}}
    with LoopbackServer(Walker(), delay_s=args.delay) as server:
        serial, n1 = run_eval(dataset, folder / "k1", server.url, 1, 1, args.serial_episodes, args.max_steps, rig)
        print(f"workers 1 x concurrency 1: {serial:.1f} episodes/min over {n1} episodes "
              f"({args.throughput_rig} panorama)")
        fast, n2 = run_eval(dataset, folder / "k8", server.url, 2, 8, args.episodes, args.max_steps, rig)
        print(f"workers 2 x concurrency 8: {fast:.1f} episodes/min over {n2} episodes "
              f"(server answers after {args.delay:.1f} s; {server.calls} requests in all)")
    return [f"BENCH agents.throughput_2x8_vs_1x1 {fast / serial:.2f} x target >= 6"]


def bench_step_overhead(args: argparse.Namespace, dataset: Path) -> list[str]:
    from vlnverse.envs.nav_env import NavEnv
    from vlnverse.eval.registry import make_agent
    from vlnverse.eval.running.runner import run_episode
    from vlnverse.llm.base import LLMClient
    from vlnverse.llm.types import LLMResponse, Usage
    from vlnverse.tasks.dataset import EpisodeDataset

    walker = Walker()

    class Instant(LLMClient):
        def send(self, request):
            body = {"messages": [{"role": m.role, "content": m.text} for m in request.messages]}
            return LLMResponse(walker(body), self.model, Usage(1, 1), key=request.key)

    class Timed:
        """Times each act() call of the wrapped agent."""

        def __init__(self, agent):
            self.agent, self.times = agent, []

        def __getattr__(self, name):
            return getattr(self.agent, name)

        def act(self, observation):
            t0 = time.perf_counter()
            action = self.agent.act(observation)
            self.times.append(time.perf_counter() - t0)
            return action

    agent = make_agent("text_history", {}, llm=Instant("instant"))
    timed = Timed(agent)
    data = EpisodeDataset.open(str(dataset))
    env_s, env, scene = 0.0, None, None
    for episode in data.episodes(None, "fine")[: args.overhead_episodes]:
        if str(data.scene_file(episode)) != scene:
            if env is not None:
                env.close()
            scene = str(data.scene_file(episode))
            env = NavEnv(scene, physics="tel_hop", action_space=agent.action_space, sensors=agent.sensors,
                         max_episode_steps=args.max_steps)
        _, timing = run_episode(env, timed, episode, physics="tel_hop")
        env_s += timing.env
    env.close()
    times_ms = sorted(1000.0 * t for t in timed.times)
    median = statistics.median(times_ms)
    p90 = times_ms[int(0.9 * (len(times_ms) - 1))]
    print(f"agent step overhead (12-view panorama, vlm): median {median:.1f} ms, p90 {p90:.1f} ms "
          f"over {len(times_ms)} steps; the env's reset/step with this panorama: "
          f"{env_s / len(times_ms):.2f} s per step")
    return [f"BENCH agents.step_overhead_ms {median:.1f} ms target <= 50"]


def bench_predictor(args: argparse.Namespace) -> list[str]:
    import os

    import numpy as np

    from vlnverse.agents.config import PanoramaConfig, WaypointConfig
    from vlnverse.agents.panorama import Panorama, make_rig
    from vlnverse.agents.waypoints.depth import DepthWaypoints
    from vlnverse.agents.waypoints.learned.predictor import LearnedWaypoints
    from vlnverse.scene.loading import scene_with_occupancy
    from vlnverse.sim.simulator import Simulator
    from vlnverse.sim.types import Pose

    config = PanoramaConfig()
    scene, occupancy = scene_with_occupancy(REPO / "assets" / "scenes" / "scene_0000" / "scene.usdc")
    rng = np.random.default_rng(0)
    with Simulator(scene, sensors=make_rig(config, ("depth",)), occupancy=occupancy) as sim:
        panoramas = [Panorama.from_observation(sim.render_cameras(Pose(float(p[0]), float(p[1]), occupancy.floor_height,
                                                                        float(rng.uniform(-3.14, 3.14)))), config)
                     for p in occupancy.sample_navigable(rng, args.predictor_poses)]
    learned, depth = LearnedWaypoints(WaypointConfig()), DepthWaypoints(WaypointConfig())
    learned.predict(panoramas[0])  # first call: torch's one-off set-up

    def median_ms(predictor) -> float:
        times = []
        for panorama in panoramas:
            fresh = Panorama(panorama.config, panorama.depth)  # no memoized obstacle points
            t0 = time.perf_counter()
            predictor.predict(fresh)
            times.append(1000.0 * (time.perf_counter() - t0))
        return statistics.median(times)

    learned_ms, depth_ms = median_ms(learned), median_ms(depth)
    load = os.getloadavg()[0]
    print(f"waypoint prediction per step (12 x 224 px depth): learned {learned_ms:.1f} ms, depth {depth_ms:.1f} ms "
          f"(median of {len(panoramas)}; load average {load:.1f} on {os.cpu_count()} cores)")
    return [f"BENCH agents.waypoint_predictor_ms {learned_ms:.1f} ms target <= 20"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=64, help="episodes of the 2x8 run (default: 64)")
    parser.add_argument("--serial-episodes", type=int, default=6, help="episodes of the 1x1 run (default: 6)")
    parser.add_argument("--overhead-episodes", type=int, default=8, help="episodes timed for the overhead")
    parser.add_argument("--per-scene", type=int, default=6, help="trajectories per bundled scene (default: 6)")
    parser.add_argument("--max-steps", type=int, default=8, help="step budget per episode (default: 8)")
    parser.add_argument("--delay", type=float, default=1.0, help="server answer delay in seconds (default: 1)")
    parser.add_argument("--throughput-rig", choices=("small", "full"), default="full",
                        help="panorama of the throughput runs: 12 x 224 px (default) or 4 x 64 px")
    parser.add_argument("--predictor-poses", type=int, default=50, help="panoramas timed for the predictor")
    parser.add_argument("--predictor-only", action="store_true", help="only the waypoint predictor benchmark")
    args = parser.parse_args()
    import os

    if args.predictor_only:
        print("\n".join(bench_predictor(args)))
        return
    os.environ.setdefault(KEY_ENV, "bench")
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        dataset = bundled_dataset(folder, per_scene=args.per_scene)
        lines += bench_predictor(args)
        lines += bench_step_overhead(args, dataset)
        lines += bench_throughput(args, dataset, folder)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
