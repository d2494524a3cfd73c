"""Simulator benchmarks: env step overhead over raw rendering, the GL renderer against TinyRenderer,
panoramas, vector scaling, memory.

Figures (printed as ``BENCH <name> <value> <unit> target <op> <value>``):

- ``sim.step_ratio_vs_raw_render``: env steps/s (one 224×224 RGB-D camera, discrete
  actions, physics on) over raw renders/s of the same camera at the same poses (each
  round's views replayed) with the renderer the env uses (``GLRenderer.render`` for
  ``gl``, PyBullet's ``getCameraImage`` for ``tiny``), in interleaved rounds of one run
  (median of rounds).
- ``sim.render_gl_speedup_vs_tiny``: TinyRenderer's time per RGB-D frame over the GL
  renderer's, on the same views in the same run, in process CPU time (both render on one
  thread, so CPU time is wall time on an idle machine and stays meaningful on a busy,
  shared one); ``..._wall`` is the same ratio in wall-clock time.
- ``sim.steps_per_s`` (renderer in use), ``sim.steps_per_s_tiny``: the envs' absolute rates;
  ``sim.panorama_obs_per_s``: observations/s of the paper's 12-view RGB-D rig drawn in one
  pass (``panorama="one_pass"``, the default), ``..._direct`` view by view.
- ``sim.panorama_time_vs_single_view``: the time of one 12-view RGB-D observation over one
  single-view RGB-D observation (224×224, same renderer and pose; median of interleaved
  rounds), one pass; ``..._direct`` view by view.
- ``sim.vector_scaling_2proc``: ``async_vector_env`` (gymnasium's ``AsyncVectorEnv``, workers
  set up for the renderer) throughput with 2 processes over 1: the
  median over ``--vector-rounds`` back-to-back pairs of runs (the VM's speed drifts).
- ``sim.rss_mb``: resident memory of one env process on the scene.

The scene is the largest bundled one (``assets/scenes/*/scene.usd*``), or ``--scene``;
without either, a procedural house (seed 0) is written to a temporary folder.

Usage: ``python benchmarks/sim_bench.py [--scene PATH] [--steps N] [--rounds R] [--renderer auto|gl|tiny]
[--panorama-only]`` (the last prints the panorama figures alone).
"""

from __future__ import annotations

import argparse
import functools
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from vlnverse.envs.nav_env import NavEnv
from vlnverse.envs.vector import async_vector_env
from vlnverse.sim import DepthSensor, RGBSensor, SensorRig, Simulator
from vlnverse.sim.gl.panorama import PANORAMA_MODES
from vlnverse.sim.types import CameraRequest, Pose

ROOT = Path(__file__).resolve().parents[1]
CAMERA = {"rgb": RGBSensor(width=224, height=224), "depth": DepthSensor(width=224, height=224)}

Camera = tuple[float, float, float, float]


def pick_scene(explicit: str | None, workdir: Path) -> Path:
    if explicit:
        return Path(explicit)
    bundled = sorted((ROOT / "assets" / "scenes").glob("*/scene.usd*"), key=lambda p: p.stat().st_size)
    if bundled:
        return bundled[-1]
    from vlnverse.scene.procgen.authoring import write_house
    from vlnverse.scene.procgen.house import generate_house

    print("no bundled scene found; using a procedural house (seed 0)")
    return write_house(generate_house(0), workdir / "house_0" / "scene.usdc")


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def make_env(scene: str, renderer: str = "auto") -> NavEnv:
    return NavEnv(scene, sensors=CAMERA, physics="slide", action_space="discrete", renderer=renderer)


def env_block(env: NavEnv, rng: np.random.Generator, steps: int) -> tuple[float, list[Camera]]:
    """Steps/s over ``steps`` steps of mostly-forward random discrete actions, and the
    camera pose ``(x, y, z, yaw)`` of every observation rendered."""
    cameras = []
    start = time.perf_counter()
    for _ in range(steps):
        action = int(rng.choice([1, 1, 1, 2, 3]))
        _, _, terminated, truncated, _ = env.step(action)
        pose = env.sim.pose
        cameras.append((pose.x, pose.y, pose.z + env.agent_spec.camera_height, pose.yaw))
        if terminated or truncated:
            env.reset()
    return steps / (time.perf_counter() - start), cameras


def render_tiny(env: NavEnv, cameras: list[Camera]) -> None:
    """``getCameraImage`` of the env's camera at ``cameras``, straight from PyBullet."""
    import pybullet as p

    client = env.sim.backend.client_id
    for x, y, z, yaw in cameras:
        view = p.computeViewMatrix([x, y, z], [x + np.cos(yaw), y + np.sin(yaw), z], [0, 0, 1],
                                   physicsClientId=client)
        proj = p.computeProjectionMatrixFOV(90.0, 1.0, 0.05, 30.0, physicsClientId=client)
        p.getCameraImage(224, 224, view, proj, renderer=p.ER_TINY_RENDERER, flags=p.ER_NO_SEGMENTATION_MASK,
                         shadow=0, lightDirection=(0.5, 0.8, 1.0), physicsClientId=client)


def render_gl(env: NavEnv, cameras: list[Camera]) -> None:
    """The GL renderer's RGB-D frames of the env's camera at ``cameras``, one call each."""
    renderer = env.sim.backend.gl_renderer
    for x, y, z, yaw in cameras:
        renderer.render([CameraRequest(position=(x, y, z), yaw=yaw, pitch=0.0, width=224, height=224,
                                       hfov_deg=90.0, near=0.05, far=30.0, rgb=True, depth=True)])


def timed(render, env: NavEnv, cameras: list[Camera]) -> tuple[float, float]:
    """(wall, CPU) seconds per frame of ``render(env, cameras)``."""
    wall, cpu = time.perf_counter(), time.process_time()
    render(env, cameras)
    return (time.perf_counter() - wall) / len(cameras), (time.process_time() - cpu) / len(cameras)


def observe_time(sim: Simulator, count: int) -> float:
    """Seconds per fresh observation (every sensor rendered) at the simulator's pose."""
    start = time.perf_counter()
    for _ in range(count):
        sim._cache.clear()
        sim.observe()
    return (time.perf_counter() - start) / count


def panorama_figures(env: NavEnv, renderer: str, rounds: int) -> tuple[dict, dict]:
    """Observations/s of the 12-view RGB-D panorama per panorama mode, and its time over one
    single-view RGB-D observation (same renderer, same pose), median of interleaved rounds."""
    pose = Pose(*env.sim.pose.as_array())
    sims = {mode: Simulator(env.scene, sensors=SensorRig.panoramic(kinds=("rgb", "depth")), occupancy=env.occupancy,
                            pose=pose, renderer=renderer, panorama=mode) for mode in PANORAMA_MODES}
    single = Simulator(env.scene, sensors=CAMERA, occupancy=env.occupancy, pose=pose, renderer=renderer)
    try:
        times: dict[str, list[float]] = {mode: [] for mode in PANORAMA_MODES}
        ratios: dict[str, list[float]] = {mode: [] for mode in PANORAMA_MODES}
        for sim in (*sims.values(), single):
            observe_time(sim, 1)
        for _ in range(rounds):
            one_view = observe_time(single, 10)
            for mode, sim in sims.items():
                seconds = observe_time(sim, 3)
                times[mode].append(seconds)
                ratios[mode].append(seconds / one_view)
        print(f"panorama (12 RGB-D views) vs one RGB-D view, per round: "
              f"{ {mode: np.round(r, 2).tolist() for mode, r in ratios.items()} }")
        return ({mode: 1.0 / statistics.median(t) for mode, t in times.items()},
                {mode: statistics.median(r) for mode, r in ratios.items()})
    finally:
        for sim in (*sims.values(), single):
            sim.close()


def print_panorama(rates: dict, ratios: dict) -> None:
    for mode in PANORAMA_MODES:
        suffix = "" if mode == "one_pass" else f"_{mode}"
        print(f"BENCH sim.panorama_obs_per_s{suffix} {rates[mode]:.2f} obs/s target >= 0")
        target = "<= 4" if mode == "one_pass" else ">= 0"  # the direct render: context
        print(f"BENCH sim.panorama_time_vs_single_view{suffix} {ratios[mode]:.2f} x target {target}")


def vector_rate(scene: str, processes: int, steps: int, renderer: str) -> float:
    envs = async_vector_env([functools.partial(make_env, scene, renderer)] * processes)
    try:
        envs.reset(seed=list(range(processes)))
        rng = np.random.default_rng(0)
        forward = np.ones(processes, dtype=np.int64)
        for _ in range(3):
            envs.step(forward)
        start = time.perf_counter()
        for _ in range(steps):
            envs.step(rng.choice([1, 1, 1, 2, 3], size=processes).astype(np.int64))
        return steps * processes / (time.perf_counter() - start)
    finally:
        envs.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scene", default=None)
    parser.add_argument("--steps", type=int, default=40, help="env steps per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--vector-rounds", type=int, default=5)
    parser.add_argument("--renderer", default="auto", help="renderer of the env measured (auto, gl, tiny)")
    parser.add_argument("--panorama-only", action="store_true", help="measure and print the panorama figures alone")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        scene = str(pick_scene(args.scene, Path(tmp)))
        if args.panorama_only:
            env = make_env(scene, args.renderer)
            env.reset(seed=0)
            print_panorama(*panorama_figures(env, args.renderer, args.rounds))
            env.close()
            return
        env, tiny_env = make_env(scene, args.renderer), make_env(scene, "tiny")
        renderer = env.sim.backend.renderer
        raw_render = render_gl if renderer == "gl" else render_tiny
        rng, tiny_rng = np.random.default_rng(0), np.random.default_rng(0)
        for e, r in ((env, rng), (tiny_env, tiny_rng)):
            e.reset(seed=0)
            env_block(e, r, 5)
        env_rates, raw_rates, tiny_rates, speedups, wall_speedups = [], [], [], [], []
        for _ in range(args.rounds):
            rate, cameras = env_block(env, rng, args.steps)
            env_rates.append(rate)
            raw_rates.append(1.0 / timed(raw_render, env, cameras)[0])
            tiny_rates.append(env_block(tiny_env, tiny_rng, args.steps)[0])
            if renderer == "gl":
                (gl_wall, gl_cpu), (tiny_wall, tiny_cpu) = timed(render_gl, env, cameras), timed(render_tiny, env, cameras)
                speedups.append(tiny_cpu / gl_cpu)
                wall_speedups.append(tiny_wall / gl_wall)
        memory = rss_mb()
        ratios = [e / r for e, r in zip(env_rates, raw_rates, strict=True)]
        steps_per_s, raw_per_s = statistics.median(env_rates), statistics.median(raw_rates)
        print(f"scene {scene}: {len(env.scene.triangles)} triangles, {len(env.scene.objects)} objects; "
              f"renderer {renderer}")
        print(f"env {steps_per_s:.1f} steps/s, raw render {raw_per_s:.1f} frames/s, ratios {np.round(ratios, 3).tolist()}; "
              f"{env.sim.backend.coarse_moves}/{5 + args.rounds * args.steps} moves glided (no contact could begin), "
              "the rest at the full physics rate")
        if speedups:
            print(f"gl over tiny, same views: CPU {np.round(speedups, 2).tolist()}, wall {np.round(wall_speedups, 2).tolist()}")
        panorama_rates, panorama_ratios = panorama_figures(env, args.renderer, args.rounds)
        env.close()
        tiny_env.close()
        pairs = [(vector_rate(scene, 1, args.steps, args.renderer), vector_rate(scene, 2, args.steps, args.renderer))
                 for _ in range(args.vector_rounds)]  # back to back: a pair sees the same VM speed
        one, two = statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)
        scaling = statistics.median(b / a for a, b in pairs)
        print(f"vector env: {one:.1f} steps/s with 1 process, {two:.1f} with 2 (medians); pairs "
              f"{[(round(a, 1), round(b, 1)) for a, b in pairs]}")
        print(f"BENCH sim.step_ratio_vs_raw_render {statistics.median(ratios):.3f} x target >= 0.85")
        if speedups:
            print(f"BENCH sim.render_gl_speedup_vs_tiny {statistics.median(speedups):.2f} x target >= 3")
            print(f"BENCH sim.render_gl_speedup_vs_tiny_wall {statistics.median(wall_speedups):.2f} x target >= 0")
        print(f"BENCH sim.steps_per_s {steps_per_s:.1f} steps/s target >= 0")
        print(f"BENCH sim.steps_per_s_tiny {statistics.median(tiny_rates):.1f} steps/s target >= 0")
        print_panorama(panorama_rates, panorama_ratios)
        print(f"BENCH sim.vector_scaling_2proc {scaling:.2f} x target >= 1.7")
        print(f"BENCH sim.rss_mb {memory:.0f} MB target <= 1024")


if __name__ == "__main__":
    main()
