"""``vlnverse scenes …``: inspect scenes and query paths."""

from __future__ import annotations

import argparse
from pathlib import Path

from vlnverse.cli.output import print_json, print_table
from vlnverse.errors import ConfigError
from vlnverse.fileio import prepare_output_dir


def register(subparsers) -> None:
    parser = subparsers.add_parser("scenes", help="inspect, query, generate and validate scenes")
    scenes = parser.add_subparsers(dest="scenes_command", metavar="SUBCOMMAND")
    parser.set_defaults(handler=lambda args: parser.print_help() or 2)

    inspect = scenes.add_parser("inspect", help="occupancy maps, BEV picture, scene graph and summary of a scene")
    inspect.add_argument("scene", type=Path, help="USD file (.usd/.usda/.usdc/.usdz)")
    inspect.add_argument("--out", type=Path, default=None, help="output folder (default: inspect_<scene id>)")
    _agent_args(inspect)
    inspect.add_argument("--json", action="store_true", help="print the summary as JSON")
    inspect.set_defaults(handler=_inspect)

    path = scenes.add_parser("path", help="geodesic distance and shortest path between two points")
    path.add_argument("scene", type=Path)
    path.add_argument("--start", required=True, type=_xy, help="X,Y in metres")
    path.add_argument("--goal", required=True, type=_xy, help="X,Y in metres")
    path.add_argument("--out", type=Path, default=None, help="folder for path.png")
    _agent_args(path)
    path.add_argument("--json", action="store_true", help="print one JSON object")
    path.set_defaults(handler=_path)

    from vlnverse.cli.scenes_procgen import register_scene_commands

    register_scene_commands(scenes)


def _agent_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agent-radius", type=float, default=0.30, help="metres (default 0.30)")
    parser.add_argument("--agent-height", type=float, default=1.50, help="metres (default 1.50)")
    parser.add_argument("--resolution", type=float, default=0.05, help="cell size in metres (default 0.05)")


def _xy(text: str) -> tuple[float, float]:
    try:
        x, y = (float(v) for v in text.split(","))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected X,Y (two numbers), got {text!r}") from exc
    return x, y


def _prepare(args):
    from vlnverse.scene.inspect import prepare_scene

    if args.resolution <= 0 or args.agent_radius <= 0 or args.agent_height <= 0:
        raise ConfigError("--resolution, --agent-radius and --agent-height must be positive")
    return prepare_scene(args.scene, args.agent_radius, args.agent_height, args.resolution)


def _inspect(args) -> int:
    from vlnverse.scene.inspect import write_inspection

    if args.out is not None:
        prepare_output_dir(args.out)
    prepared = _prepare(args)
    out = prepare_output_dir(args.out or Path(f"inspect_{prepared.scene.scene_id}"))
    summary = write_inspection(prepared, out)
    if args.json:
        print_json({**summary, "out": str(out)})
        return 0
    rows = [(key, summary[key]) for key in ("navigable_area_m2", "free_area_m2", "room_count", "object_count",
                                            "doors", "navigable_components", "largest_component_share")]
    rows += [(f"rooms: {k}", v) for k, v in summary["rooms"].items()]
    print_table(f"{summary['scene_id']} → {out}", ("figure", "value"), rows)
    return 0


def _path(args) -> int:
    import numpy as np

    from vlnverse.scene.bev import save_bev

    if args.out is not None:
        prepare_output_dir(args.out)
    prepared = _prepare(args)
    result = prepared.navigator.shortest_path(args.start, args.goal)
    if args.out is not None:
        markers = [(args.start, "limegreen", "start"), (args.goal, "red", "goal")]
        save_bev(args.out / "path.png", prepared.scene, prepared.occupancy,
                 paths=[result.points] if result.reachable else [], markers=markers,
                 title=f"geodesic distance {result.length:.2f} m" if result.reachable else "unreachable")
    used = {"start": result.points[0, :2], "goal": result.points[-1, :2]} if result.reachable else {}
    if args.json:
        print_json({"geodesic_distance": result.length if result.reachable else None,
                    "path": result.points.round(4).tolist(), "reachable": result.reachable,
                    **{f"{k}_used": v.round(4).tolist() for k, v in used.items()}})
        return 0
    distance = f"{result.length:.3f} m" if result.reachable else "unreachable"
    print_table("shortest path", ("start", "goal", "geodesic distance", "waypoints"),
                [(args.start, args.goal, distance, len(result.points))])
    for name, point in used.items():
        requested = getattr(args, name)
        moved = float(np.hypot(*(np.asarray(requested) - point)))
        if moved > 1e-6:
            print(f"{name} ({requested[0]:g}, {requested[1]:g}) is not navigable: the path uses the nearest "
                  f"navigable point ({point[0]:.2f}, {point[1]:.2f}), {moved:.2f} m away")
    return 0
