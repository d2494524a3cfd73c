"""Draw the README's renderer comparison (``docs/images/renderers.png``): one view of each
bundled scene through the ``gl`` renderer and through ``tiny`` (PyBullet's TinyRenderer).

Each scene's view is the one, among a few seeded navigable poses, that sees the most
objects. Run ``python tools/renderer_pictures.py [OUT]``; the output is deterministic.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

from vlnverse.scene import load_scene
from vlnverse.scene.occupancy import build_occupancy
from vlnverse.sim import Pose, RGBSensor, SemanticSensor, Simulator

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "images" / "renderers.png"
SIZE = (192, 256)  # height, width of each view
CANDIDATES = 24


def best_pose(scene, occupancy) -> Pose:
    """The seeded candidate pose whose view holds the most distinct labelled objects."""
    points = occupancy.sample_navigable(np.random.default_rng(0), CANDIDATES)
    yaws = np.linspace(0.0, 2.0 * math.pi, CANDIDATES, endpoint=False)
    camera = SemanticSensor(width=SIZE[1] // 2, height=SIZE[0] // 2)
    best, best_count = None, -1
    with Simulator(scene, sensors={"semantic": camera}, occupancy=occupancy) as sim:
        for point, yaw in zip(points, yaws, strict=True):
            pose = Pose(float(point[0]), float(point[1]), float(point[2]), float(yaw))
            sim.backend.set_agent_pose(pose)
            ids = np.unique(sim.observe()["semantic"])
            count = int(np.sum((ids > 0) & (ids <= len(scene.objects))))
            if count > best_count:
                best, best_count = pose, count
    return best


def draw(out: Path = OUT) -> Path:
    """Write the grid (rows: scenes; columns: gl, tiny) as a small palette PNG."""
    from PIL import Image, ImageDraw

    rows = []
    for path in sorted((ROOT / "assets" / "scenes").glob("*/scene.usd*")):
        scene = load_scene(path)
        occupancy = build_occupancy(scene)
        pose = best_pose(scene, occupancy)
        views = []
        for renderer in ("gl", "tiny"):
            rgb = RGBSensor(width=SIZE[1], height=SIZE[0])
            with Simulator(scene, sensors={"rgb": rgb}, occupancy=occupancy, pose=pose, renderer=renderer) as sim:
                views.append(sim.observe()["rgb"])
        rows.append(np.concatenate(views, axis=1))
    grid = Image.fromarray(np.concatenate(rows, axis=0))
    pen = ImageDraw.Draw(grid)
    for column, label in enumerate(("gl", "tiny")):
        pen.text((column * SIZE[1] + 6, 4), label, fill=(0, 0, 0))
    out.parent.mkdir(parents=True, exist_ok=True)
    grid.quantize(colors=192, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(out, optimize=True)
    return out


if __name__ == "__main__":
    print(draw(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT))
