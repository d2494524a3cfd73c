"""Environment-layer benchmark (issue: foundation/environment layer).

Prints BENCH lines:
  scene.preprocess_s        load → occupancy → scene graph of a 10-room, ~300-object stage (one core)
  scene.astar_paths_per_s   smoothed A* paths per second on a 400×400 grid
  scene.geodesic_error_pct  worst path-length error against an exact visibility-graph shortest
                            path on polygonal test scenes (obstacles dilated by the agent radius)
References measured in the same run: the raw USD open+traverse time, and raw (unsmoothed)
pyastar2d calls on the same pairs.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import heapq  # noqa: E402
import math  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pyastar2d  # noqa: E402
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdSemantics  # noqa: E402

from vlnverse.scene import Navigator, build_occupancy, load_scene  # noqa: E402
from vlnverse.scene.scene_graph import build_scene_graph  # noqa: E402

AGENT_RADIUS = 0.3


def box(stage, path, center, size, label=None):
    cube = UsdGeom.Cube.Define(stage, path)
    cube.GetSizeAttr().Set(1.0)
    api = UsdGeom.XformCommonAPI(cube)
    api.SetTranslate(Gf.Vec3d(*center))
    api.SetScale(Gf.Vec3f(*size))
    UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
    if label:
        UsdSemantics.LabelsAPI.Apply(cube.GetPrim(), "class").CreateLabelsAttr().Set([label])
    return cube


def ten_room_stage(path: Path, rng: np.random.Generator) -> Path:
    """A 5×2 grid of 5×5 m rooms with doorways and 30 labelled objects per room (300 total)."""
    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    stage.SetDefaultPrim(UsdGeom.Xform.Define(stage, "/World").GetPrim())
    categories = ["chair", "table", "cup", "book", "lamp", "plant", "box", "vase"]
    for k in range(10):
        ix, iy = k % 5, k // 5
        x0, y0 = ix * 5.0, iy * 5.0
        room = f"/World/Rooms/room_{k}"
        UsdGeom.Xform.Define(stage, room).GetPrim().CreateAttribute(
            "vlnverse:roomType", Sdf.ValueTypeNames.String).Set(["bedroom", "kitchen", "study"][k % 3])
        box(stage, f"{room}/Floor", (x0 + 2.5, y0 + 2.5, -0.05), (5.0, 5.0, 0.1))
        # walls on the west and south sides with a 1 m doorway each (outer walls closed below)
        box(stage, f"{room}/Walls/W0", (x0, y0 + 1.0, 1.3), (0.1, 2.0, 2.6))
        box(stage, f"{room}/Walls/W1", (x0, y0 + 4.0, 1.3), (0.1, 2.0, 2.6))
        box(stage, f"{room}/Walls/S0", (x0 + 1.0, y0, 1.3), (2.0, 0.1, 2.6))
        box(stage, f"{room}/Walls/S1", (x0 + 4.0, y0, 1.3), (2.0, 0.1, 2.6))
        for j in range(30):
            cx, cy = x0 + rng.uniform(0.8, 4.2), y0 + rng.uniform(0.8, 4.2)
            size = rng.uniform(0.1, 0.6, size=3)
            box(stage, f"{room}/Objects/obj_{k}_{j}", (cx, cy, size[2] / 2), size, categories[j % len(categories)])
    box(stage, "/World/Outer/N", (12.5, 10.0, 1.3), (25.0, 0.1, 2.6))
    box(stage, "/World/Outer/E", (25.0, 5.0, 1.3), (0.1, 10.0, 2.6))
    stage.GetRootLayer().Save()
    return path


def open_grid_stage(path: Path, rng: np.random.Generator) -> Path:
    """A 20×20 m hall (a 400×400 grid at 5 cm) with 40 random pillars."""
    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    stage.SetDefaultPrim(UsdGeom.Xform.Define(stage, "/World").GetPrim())
    box(stage, "/World/Floor", (10, 10, -0.05), (19.9, 19.9, 0.1))
    for j in range(40):
        box(stage, f"/World/P{j}", (rng.uniform(1, 19), rng.uniform(1, 19), 1.0), (rng.uniform(0.3, 2.0), rng.uniform(0.3, 2.0), 2.0))
    stage.GetRootLayer().Save()
    return path


def time_preprocess(path: Path, repeats: int = 3) -> tuple[float, float]:
    best, raw = math.inf, math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        stage = Usd.Stage.Open(str(path))
        sum(1 for _ in stage.Traverse())
        raw = min(raw, time.perf_counter() - t0)
        t0 = time.perf_counter()
        scene = load_scene(path)
        occ = build_occupancy(scene)
        build_scene_graph(scene, occ)
        best = min(best, time.perf_counter() - t0)
    return best, raw


def time_paths(path: Path, rng: np.random.Generator, count: int = 300) -> tuple[float, float, tuple]:
    occ = build_occupancy(load_scene(path))
    nav = Navigator(occ)
    comp = occ.largest_component
    starts, goals = occ.sample_navigable(rng, count, comp), occ.sample_navigable(rng, count, comp)
    t0 = time.perf_counter()
    for a, g in zip(starts, goals, strict=False):
        nav.shortest_path(a, g)
    ours = count / (time.perf_counter() - t0)
    cells_a, cells_g = occ.world_to_cell(starts), occ.world_to_cell(goals)
    weights = np.where(occ.navigable, 1.0, np.inf).astype(np.float32)
    t0 = time.perf_counter()
    for a, g in zip(cells_a, cells_g, strict=False):
        pyastar2d.astar_path(weights, tuple(a), tuple(g), allow_diagonal=True)
    raw = count / (time.perf_counter() - t0)
    return ours, raw, occ.shape


# -- exact reference: visibility graph over polygonal (dilated) obstacles --------------------

def dilated_rectangles(rects, radius, arc_points=24):
    """Rounded rectangles (Minkowski sum with a disc) as circumscribed polygons."""
    from shapely.geometry import box as sbox

    polys = []
    for x0, y0, x1, y1 in rects:
        polys.append(sbox(x0, y0, x1, y1).buffer(radius / math.cos(math.pi / (4 * arc_points)), quad_segs=arc_points))
    return polys


def visibility_shortest(start, goal, polys, bounds):
    from shapely.geometry import LineString, Point
    from shapely.ops import unary_union
    from shapely.prepared import prep

    blocked = unary_union(polys)
    inner = prep(blocked.buffer(-1e-7))
    x0, y0, x1, y1 = bounds
    nodes = [tuple(start), tuple(goal)]
    for poly in (blocked.geoms if hasattr(blocked, "geoms") else [blocked]):
        for x, y in list(poly.exterior.coords)[:-1]:
            if x0 < x < x1 and y0 < y < y1:
                nodes.append((x, y))
    nodes = [n for n in nodes if not inner.contains(Point(n))]
    n = len(nodes)
    dist = [math.inf] * n
    dist[0] = 0.0
    heap = [(0.0, 0)]
    done = [False] * n
    while heap:
        d, i = heapq.heappop(heap)
        if done[i]:
            continue
        done[i] = True
        if i == 1:
            return d
        for j in range(n):
            if done[j]:
                continue
            nd = d + math.dist(nodes[i], nodes[j])
            if nd < dist[j] and not inner.intersects(LineString([nodes[i], nodes[j]])):
                dist[j] = nd
                heapq.heappush(heap, (nd, j))
    return math.inf


def polygonal_scene(path: Path, rects, size=10.0) -> Path:
    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    stage.SetDefaultPrim(UsdGeom.Xform.Define(stage, "/World").GetPrim())
    box(stage, "/World/Floor", (size / 2, size / 2, -0.05), (size, size, 0.1))
    for k, (x0, y0, x1, y1) in enumerate(rects):
        box(stage, f"/World/Block{k}", ((x0 + x1) / 2, (y0 + y1) / 2, 1.0), (x1 - x0, y1 - y0, 2.0))
    stage.GetRootLayer().Save()
    return path


def geodesic_errors(tmp: Path, rng: np.random.Generator) -> list[float]:
    layouts = [
        [(2.0, 0.0, 2.5, 7.0), (5.0, 3.0, 5.5, 10.0), (7.5, 0.0, 8.0, 7.0)],  # zig-zag walls
        [(3.0, 3.0, 7.0, 7.0)],  # a central block
        [(1.5, 1.5, 3.0, 3.0), (4.0, 5.0, 6.0, 6.0), (6.5, 2.0, 7.5, 4.0), (2.0, 6.5, 3.5, 8.5)],
    ]
    errors = []
    for k, rects in enumerate(layouts):
        occ = build_occupancy(load_scene(polygonal_scene(tmp / f"poly{k}.usda", rects)))
        nav = Navigator(occ)
        polys = dilated_rectangles(rects, AGENT_RADIUS)
        inner = (AGENT_RADIUS, AGENT_RADIUS, 10 - AGENT_RADIUS, 10 - AGENT_RADIUS)
        comp = occ.largest_component
        pairs = 0
        while pairs < 8:
            a, g = occ.sample_navigable(rng, 2, comp)
            exact = visibility_shortest(a[:2], g[:2], polys, inner)
            if not math.isfinite(exact) or exact < 3.0:
                continue
            ours = nav.shortest_path(a, g).length
            errors.append(100.0 * (ours - exact) / exact)
            pairs += 1
    return errors


def main() -> None:
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        preprocess, raw_usd = time_preprocess(ten_room_stage(tmp / "ten_rooms.usda", rng))
        paths_per_s, raw_per_s, shape = time_paths(open_grid_stage(tmp / "hall.usda", rng), rng)
        errors = geodesic_errors(tmp, rng)
    print(f"10-room/300-object stage: preprocess {preprocess:.3f} s (raw USD open+traverse {raw_usd:.3f} s, "
          f"ratio {preprocess / raw_usd:.1f}x)")
    print(f"paths on a {shape[1]}x{shape[0]} grid: {paths_per_s:.0f}/s smoothed vs {raw_per_s:.0f}/s raw A* "
          f"(ratio {paths_per_s / raw_per_s:.2f})")
    print(f"geodesic error vs visibility graph over {len(errors)} pairs: mean {np.mean(errors):.2f} %, "
          f"max {np.max(errors):.2f} %, min {np.min(errors):.2f} %")
    print(f"BENCH scene.preprocess_s {preprocess:.3f} s target <= 2")
    print(f"BENCH scene.astar_paths_per_s {paths_per_s:.0f} paths/s target >= 200")
    print(f"BENCH scene.astar_ratio_vs_raw {paths_per_s / raw_per_s:.2f} x target >= 0.2")
    print(f"BENCH scene.geodesic_error_pct {max(abs(e) for e in errors):.2f} % target <= 2")


if __name__ == "__main__":
    main()
