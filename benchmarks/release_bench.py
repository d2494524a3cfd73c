"""Release build cost: a scaled ``vlnverse release build`` measured, the full build extrapolated.

Builds ``--scale`` of the 263-scene release (default 0.05: 13 scenes, all tasks, 75 coarse
trajectories per scene, reference images, prior instructions) on ``--workers`` processes,
reads each stage's wall time from ``build.json`` and EXTRAPOLATES the full build linearly:
the corpus and episode stages by scenes (their measured per-scene cost), the report and
card by episodes. It does not build 263 scenes; per-scene costs vary with home size, so a
small sample carries sampling error (and a loaded machine inflates every figure).

Usage: python benchmarks/release_bench.py [--scale S] [--workers K] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from vlnverse.release import ReleaseConfig, build_release
from vlnverse.release.build import PAPER_SCENES
from vlnverse.release.table2 import TABLE2

PAPER_EPISODES = sum(n for row in TABLE2.values() for n in row.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.05)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--keep", type=Path, default=None, help="build here and keep it")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="release_bench_"))
    out = args.keep or tmp / "release"
    try:
        load = os.getloadavg()[0]
        started = time.perf_counter()
        summary = build_release(ReleaseConfig(out=str(out), scale=args.scale, workers=args.workers))
        wall = time.perf_counter() - started
        stages = {k: v["seconds"] for k, v in summary.log.stages.items()}
        scenes = sum(1 for _ in (out / "scenes").glob("scene_*/meta.json"))
        episodes = summary.manifest["total_episodes"]
        table2 = sum(cell["episodes"] for split in summary.manifest["splits"].values()
                     for task, cell in split.items() if task in TABLE2)
        by_scenes = PAPER_SCENES / scenes
        by_episodes = PAPER_EPISODES / max(table2, 1)
        full = {"scenes": stages["scenes"] * by_scenes, "episodes": stages["episodes"] * by_scenes,
                "report": stages["report"] * by_episodes, "card": (wall - sum(stages.values()) + stages["card"]) * by_episodes}  # + checksums
        workers_mb = [summary.log.peak_mb(w) for w in summary.log.workers if w != "main"]
        main_mb = summary.log.peak_mb("main")
        size_mb = sum(p.stat().st_size for p in out.rglob("*") if p.is_file()) / 2**20
        print(f"measured: {scenes} scenes, {episodes} episodes ({table2} of Table 2's tasks), {args.workers} workers, "
              f"{wall:.1f} s wall, {size_mb:.0f} MiB; load average at start {load:.2f} on {os.cpu_count()} cores")
        for stage, seconds in stages.items():
            print(f"  {stage:9s} {seconds:8.1f} s measured -> {full[stage] / 60:6.1f} min extrapolated to 263 scenes")
        print(f"EXTRAPOLATED (not built) full release: {sum(full.values()) / 60:.1f} min, "
              f"{size_mb * by_scenes / 1024:.1f} GiB; peak RSS per worker {max(workers_mb, default=0):.0f} MiB, "
              f"main process {main_mb:.0f} MiB")
        print(f"BENCH release.full_build_extrapolated_min {sum(full.values()) / 60:.2f} min target <= 45")
        print(f"BENCH release.scenes_s_per_scene {stages['scenes'] / scenes * args.workers:.2f} s target >= 0")
        print(f"BENCH release.episodes_s_per_scene {stages['episodes'] / scenes * args.workers:.2f} s target >= 0")
        print(f"BENCH release.episodes_vs_table2_per_scene {table2 / scenes / (PAPER_EPISODES / PAPER_SCENES):.3f} x "
              f"target >= 0.97")
        print(f"BENCH release.peak_rss_worker_mb {max(workers_mb, default=0):.0f} MiB target <= 1024")
        if args.keep:
            print(json.dumps(summary.log.workers))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
