"""Procedural scene corpus throughput and diversity.

Times ``generate --validate`` (generation, USD writing, NVIDIA's asset validator and our
reachability checks per scene) over a sample of the 263-scene corpus on a process pool
and extrapolates linearly to 263 scenes (``--count 263`` measures the whole corpus
instead). Also reports generation alone, and diversity over the sample.

Usage: python benchmarks/procgen_bench.py [--count N] [--workers K] [--keep DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import tempfile
import time
from pathlib import Path

from vlnverse.scene.procgen.corpus import CorpusOptions, generate_corpus
from vlnverse.scene.procgen.stats import corpus_stats, load_metas

PAPER_CORPUS = 263


def _run(out: Path, count: int, workers: int, validate: bool) -> tuple[float, list[dict]]:
    metas: list[dict] = []
    start = time.perf_counter()
    generate_corpus(out, CorpusOptions(count=count, seed=2026, validate=validate), workers=workers,
                    on_scene=lambda meta, skipped: metas.append(meta))
    return time.perf_counter() - start, metas


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=24, help="scenes to time (263 = the full corpus)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--keep", type=Path, default=None, help="keep the validated sample here")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="procgen_bench_"))
    try:
        gen_s, _ = _run(tmp / "gen_only", args.count, args.workers, validate=False)
        full_s, metas = _run(tmp / "validated", args.count, args.workers, validate=True)
        failures = [m["scene_id"] for m in metas if not m["validation"]["ok"]]
        stats = corpus_stats(load_metas(tmp / "validated"))
        hashes = {hashlib.sha256(p.read_bytes()).hexdigest() for p in (tmp / "validated").glob("*/scene.usdc")}
        extrapolated_min = full_s / args.count * PAPER_CORPUS / 60.0
        print(f"sample: {args.count} scenes, {args.workers} workers "
              f"({'measured' if args.count >= PAPER_CORPUS else 'extrapolated linearly to 263'})")
        print(f"generate only: {gen_s:.1f} s; generate+validate: {full_s:.1f} s "
              f"({full_s / args.count:.2f} s/scene wall)")
        print(f"validation failures: {failures or 'none'}")
        print(f"rooms {stats['num_rooms']}, objects {stats['num_objects']}, "
              f"navigable m² {stats['navigable_area_m2']}, on-relations {stats['num_on_relations']}")
        if args.keep:
            shutil.copytree(tmp / "validated", args.keep, dirs_exist_ok=True)
        print(f"BENCH procgen.corpus_263_min {extrapolated_min:.2f} min target <= 10")
        print(f"BENCH procgen.generate_only_263_min {gen_s / args.count * PAPER_CORPUS / 60.0:.2f} min target <= 10")
        print(f"BENCH procgen.validation_error_scenes {len(failures)} scenes target == 0")
        print(f"BENCH procgen.distinct_floorplan_graphs_ratio "
              f"{stats['distinct_floorplan_graphs'] / args.count:.3f} x target >= 0.75")
        print(f"BENCH procgen.distinct_scene_files_ratio {len(hashes) / args.count:.3f} x target == 1")
        print(f"BENCH procgen.categories_used {stats['num_categories']} categories target >= 40")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
