"""``vlnverse sim …``: look through the simulator's sensors."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from vlnverse.cli.output import print_json, print_table
from vlnverse.errors import ConfigError
from vlnverse.fileio import prepare_output_dir
from vlnverse.sim.gl.context import RENDERERS

CAMERA_KINDS = ("rgb", "depth", "semantic")


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
    from vlnverse.sim.pictures import save_observation_pictures, save_panorama_strip
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
            rig.add_panorama(make_sensor(kind, camera), prefix=kind)
        else:
            rig.attach(kind, make_sensor(kind, camera if kind in CAMERA_KINDS else {}))
    prepare_output_dir(args.out)
    scene = load_scene(args.scene)
    occupancy = build_occupancy(scene)
    x, y, yaw = args.pose
    require_on_map(occupancy, (x, y), "--pose")
    pose = Pose(x, y, occupancy.floor_height, math.radians(yaw))
    with Simulator(scene, sensors=rig, occupancy=occupancy, pose=pose, renderer=args.renderer) as simulator:
        observation = simulator.observe()
        written = save_observation_pictures(args.out, observation, dict(rig.items()), simulator.instances)
        if args.panorama:
            for kind in kinds:
                if kind in CAMERA_KINDS:
                    views = [observation[f"{kind}_{i:02d}"] for i in range(12)]
                    views = [_picture(kind, v, rig[f"{kind}_00"], simulator.instances) for v in views]
                    path = args.out / f"{kind}_panorama.png"
                    save_panorama_strip(path, views)
                    written.append(path)
        navigable = bool(occupancy.is_navigable(pose.position))
        renderer = getattr(simulator.backend, "renderer", None)
    result = {"scene": str(args.scene), "pose": [x, y, yaw], "navigable": navigable, "renderer": renderer,
              "files": [str(p) for p in written]}
    if args.json:
        print_json(result)
    else:
        print_table(f"sim render → {args.out}", ("file", "sensor"), [(str(p), p.stem) for p in written])
    return 0


def _picture(kind, value, spec, instances):
    from vlnverse.sim.pictures import colourise_depth, colourise_semantic

    if kind == "depth":
        return colourise_depth(value, spec.max_depth)
    if kind == "semantic":
        return colourise_semantic(value, instances)
    return value
