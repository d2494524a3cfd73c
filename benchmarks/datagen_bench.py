"""Dataset-generation benchmark (issue 5: task & dataset layer).

Prints BENCH lines:
  datagen.episodes_per_s      prior-only generation, all five task types mixed, one worker
                              (one core), scene loading and preparation included
  datagen.scaling_2workers    wall time of --workers 1 over --workers 2 on the same corpus
  datagen.render_ms_per_image visual-reference rendering cost (CPU backend), reported separately
Corpus: the bundled scenes in assets/scenes, each copied twice (six scenes). The disk cache
of prepared scenes is off, so every run parses and rasterizes its scenes.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ["VLNVERSE_CACHE_DIR"] = "off"

import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from vlnverse.tasks.datagen import DatagenConfig, run_datagen  # noqa: E402
from vlnverse.tasks.generate import GenerationConfig  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PER_SCENE = int(os.environ.get("DATAGEN_BENCH_PER_SCENE", "60"))


def make_corpus(root: Path) -> Path:
    source = ROOT / "assets" / "scenes"
    scenes = sorted(p for p in source.iterdir() if p.is_dir() and any(p.glob("scene.usd*")))
    if not scenes:
        sys.exit(f"no bundled scenes under {source}")
    for copy in range(2):
        for scene in scenes:
            shutil.copytree(scene, root / f"{scene.name}_{copy}")
    return root


def timed(config: DatagenConfig) -> tuple[float, int]:
    started = time.perf_counter()
    summary = run_datagen(config)
    return time.perf_counter() - started, summary.manifest["total_episodes"]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        corpus = make_corpus(tmp / "scenes")
        generation = GenerationConfig(per_scene=PER_SCENE)
        one, episodes = timed(DatagenConfig(scenes=str(corpus), out=str(tmp / "w1"), generation=generation))
        two, episodes2 = timed(DatagenConfig(scenes=str(corpus), out=str(tmp / "w2"), workers=2, generation=generation))
        assert episodes == episodes2
        render_cfg = GenerationConfig(per_scene=10, tasks=("visual_reference",), render=True)
        single = tmp / "one"
        single.mkdir()
        shutil.copytree(next(p for p in corpus.iterdir()), single / "scene_a")
        prior_only, _ = timed(DatagenConfig(scenes=str(single), out=str(tmp / "r0"),
                                            generation=GenerationConfig(per_scene=10, tasks=("visual_reference",))))
        rendered, n_images = timed(DatagenConfig(scenes=str(single), out=str(tmp / "r1"), generation=render_cfg))
        print(f"corpus: {len(list(corpus.iterdir()))} scenes, {PER_SCENE} coarse trajectories per scene, "
              f"{episodes} episodes (all five tasks)")
        print(f"--workers 1: {one:.2f} s ({episodes / one:.1f} episodes/s); --workers 2: {two:.2f} s "
              f"({episodes / two:.1f} episodes/s); cores: {os.cpu_count()}")
        print(f"visual reference: {n_images} images rendered in {rendered - prior_only:.2f} s extra")
        print(f"BENCH datagen.episodes_per_s {episodes / one:.1f} episodes/s target >= 100")
        print(f"BENCH datagen.scaling_2workers {one / two:.2f} x target >= 1.7")
        print(f"BENCH datagen.render_ms_per_image {1000 * (rendered - prior_only) / max(n_images, 1):.1f} ms target >= 0")


if __name__ == "__main__":
    main()
