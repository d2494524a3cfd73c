"""``vlnverse sim …``: look through the simulator's sensors."""

from __future__ import annotations

import argparse
import logging
import math
from pathlib import Path

from vlnverse.cli.output import print_json, print_table
from vlnverse.errors import ConfigError
from vlnverse.fileio import prepare_output_dir
from vlnverse.sim.gl.context import RENDERERS

CAMERA_KINDS = ("rgb", "depth", "semantic")
PANORAMA_VIEWS, PANORAMA_STEP_DEG = 12, 30.0
logger = logging.getLogger(__name__)


def register(subparsers) -> None:
    parser = subparsers.add_parser("sim", help="render what the agent's sensors see")
    sim = parser.add_subparsers(dest="sim_command", metavar="SUBCOMMAND")
    parser.set_defaults(handler=lambda args: parser.print_help() or 2)

    render = sim.add_parser("render", help="write sensor PNGs (RGB, depth, semantics, LiDAR) at a pose")
    render.add_argument("scene", type=Path, help="USD file (.usd/.usda/.usdc/.usdz)")
    render.add_argument("--pose", required=True, type=_pose, help="X,Y,YAW: metres and degrees (0 faces +X, CCW)")
    render.add_argument("--sensors", default="rgb,depth,semantic,lidar",
                        help="comma-separated: rgb, depth, semantic, lidar (default: all)")
    render.add_argument("--panorama", action="store_true", help="12 camera views at 30° steps (paper C.2.1)")
    render.add_argument("--width", type=int, default=224, help="camera width in pixels (default 224)")
    render.add_argument("--height", type=int, default=224, help="camera height in pixels (default 224)")
    render.add_argument("--hfov", type=float, default=90.0, help="horizontal field of view in degrees (default 90)")
    render.add_argument("--renderer", choices=RENDERERS, default="auto",
                        help="camera renderer: gl (textured, lit OpenGL on the CPU), tiny (PyBullet's "
                             "TinyRenderer) or auto (gl where headless EGL works; default)")
    render.add_argument("--out", type=Path, required=True, help="output folder")
    render.add_argument("--json", action="store_true", help="print one JSON object")
    render.set_defaults(handler=_render)


def _pose(text: str) -> tuple[float, float, float]:
    try:
        x, y, yaw = (float(v) for v in text.split(","))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected X,Y,YAW (three numbers), got {text!r}") from exc
    if not all(math.isfinite(v) for v in (x, y, yaw)):
        raise argparse.ArgumentTypeError(f"expected three finite numbers, got {text!r}")
    return x, y, yaw


def _render(args) -> int:
    from vlnverse.scene import build_occupancy, load_scene
    from vlnverse.scene.occupancy import require_on_map
    from vlnverse.sim import Pose, SensorRig, Simulator, make_sensor
    from vlnverse.sim.pictures import save_observation_pictures
    from vlnverse.sim.sensors import SENSOR_TYPES

    kinds = [k.strip() for k in args.sensors.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in SENSOR_TYPES or k == "pose"]
    if unknown or not kinds:
        raise ConfigError(f"--sensors: unknown sensor(s) {', '.join(unknown) or '(none given)'}; "
                          "valid: rgb, depth, semantic, lidar")
    camera = {"width": args.width, "height": args.height, "hfov_deg": args.hfov}
    rig = SensorRig()
    for kind in kinds:
        if kind in CAMERA_KINDS and args.panorama:
            rig.add_panorama(make_sensor(kind, camera), views=PANORAMA_VIEWS, step_deg=PANORAMA_STEP_DEG,
                             prefix=kind)
        else:
            rig.attach(kind, make_sensor(kind, camera if kind in CAMERA_KINDS else {}))
    prepare_output_dir(args.out)
    scene = load_scene(args.scene)
    occupancy = build_occupancy(scene)
    x, y, yaw = args.pose
    require_on_map(occupancy, (x, y), "--pose")
    pose = Pose(x, y, occupancy.floor_height, math.radians(yaw))
    navigable = bool(occupancy.is_navigable(pose.position))
    if not navigable:
        nearest = occupancy.nearest_navigable(pose.position)
        logger.warning("--pose (%g, %g) is not on the navigable map (inside furniture or a wall, or too close "
                       "to one for the agent): the cameras may see through what they stand in; the nearest "
                       "navigable point is (%.2f, %.2f), %.2f m away", x, y, nearest[0], nearest[1],
                       math.hypot(nearest[0] - x, nearest[1] - y))
    with Simulator(scene, sensors=rig, occupancy=occupancy, pose=pose, renderer=args.renderer) as simulator:
        observation = simulator.observe()
        written = save_observation_pictures(args.out, observation, dict(rig.items()), simulator.instances)
        if args.panorama:
            for kind in kinds:
                if kind in CAMERA_KINDS:
                    path = args.out / f"{kind}_panorama.png"
                    _panorama_sheet(path, kind, observation, rig, simulator.instances)
                    written.append(path)
        renderer = getattr(simulator.backend, "renderer", None)
    result = {"scene": str(args.scene), "pose": [x, y, yaw], "navigable": navigable, "renderer": renderer,
              "renderer_requested": args.renderer, "files": [str(p) for p in written]}
    if args.json:
        print_json(result)
    else:
        how = f"renderer {renderer}" + (" (picked by auto)" if args.renderer == "auto" and renderer else "")
        print_table(f"sim render → {args.out} · {how}", ("file", "sensor"), [(str(p), p.stem) for p in written])
    return 0


def _panorama_sheet(path, kind, observation, rig, instances) -> None:
    """The labelled sheet of one camera kind's panorama views."""
    import numpy as np

    from vlnverse.sim.pictures import (
        colourise_depth,
        colourise_semantic,
        depth_metres,
        instance_palette,
        save_panorama_sheet,
        semantic_legend,
    )

    spec = rig[f"{kind}_00"]
    views = [observation[f"{kind}_{i:02d}"] for i in range(PANORAMA_VIEWS)]
    options = {}
    if kind == "depth":
        views = [colourise_depth(depth_metres(v, spec), spec.max_depth) for v in views]
        options["colour_scale"] = ("depth (metres)", spec.max_depth)
    elif kind == "semantic":
        palette = instance_palette(len(instances))
        options["legend"] = [(palette[i], label) for i, label, _ in semantic_legend(np.stack(views), instances)]
        views = [colourise_semantic(v, instances) for v in views]
    save_panorama_sheet(path, views, PANORAMA_STEP_DEG, spec.hfov_deg, f"{kind} panorama", **options)
