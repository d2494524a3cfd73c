"""Pictures of sensor readings for people: PNGs of RGB, colourised depth and semantics, LiDAR plots."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from vlnverse.fileio import atomic_open
from vlnverse.sim.semantics import InstanceTable
from vlnverse.sim.sensors import DepthSensor, LidarSensor, RGBSensor, SemanticSensor, SensorSpec


def _save_png(path: Path, image: np.ndarray) -> None:
    import matplotlib.image

    with atomic_open(path, "wb") as handle:
        matplotlib.image.imsave(handle, image, format="png")


def colourise_depth(depth: np.ndarray, max_depth: float) -> np.ndarray:
    """(H, W[, 1]) metres → (H, W, 3) uint8 with the ``turbo`` colour map (near = blue)."""
    from matplotlib import colormaps

    d = np.clip(np.asarray(depth, dtype=np.float64).squeeze(-1) if depth.ndim == 3 else depth, 0, max_depth)
    return (colormaps["turbo"](d / max(max_depth, 1e-9))[..., :3] * 255).astype(np.uint8)


def instance_palette(n: int) -> np.ndarray:
    """(n, 3) uint8 distinct, deterministic colours; id 0 (nothing) is black."""
    golden = 0.6180339887498949
    hue = (np.arange(n) * golden) % 1.0
    from matplotlib.colors import hsv_to_rgb

    colours = hsv_to_rgb(np.stack([hue, np.full(n, 0.65), np.full(n, 0.95)], axis=1))
    colours[0] = 0.0
    return (colours * 255).astype(np.uint8)


def colourise_semantic(ids: np.ndarray, table: InstanceTable) -> np.ndarray:
    """(H, W) instance ids → (H, W, 3) uint8 colours."""
    return instance_palette(len(table))[np.clip(ids, 0, table.max_id)]


def save_lidar_plot(path: Path, scan: np.ndarray, spec: LidarSensor) -> None:
    """A top-down plot of a scan in the agent frame (forward = up)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directions = spec.ray_directions()
    hit = scan < spec.max_range
    x, y = directions[..., 0] * scan, directions[..., 1] * scan
    fig, ax = plt.subplots(figsize=(5, 5), dpi=100)
    ax.scatter(-y[hit], x[hit], s=4, c=scan[hit], cmap="viridis", vmin=0, vmax=spec.max_range)
    ax.add_patch(plt.Circle((0, 0), 0.3, color="tab:red", alpha=0.6))
    ax.arrow(0, 0, 0, 0.5, width=0.05, color="tab:red")
    limit = min(spec.max_range, float(np.max(scan[hit], initial=1.0)) + 0.5)
    ax.set(xlim=(-limit, limit), ylim=(-limit, limit), aspect="equal", xlabel="right (m)", ylabel="forward (m)",
           title=f"LiDAR: {int(hit.sum())}/{scan.size} hits")
    with atomic_open(path, "wb") as handle:
        fig.savefig(handle, format="png", bbox_inches="tight")
    plt.close(fig)


def save_observation_pictures(out: Path, observation: dict[str, np.ndarray], rig: dict[str, SensorSpec],
                              table: InstanceTable) -> list[Path]:
    """Write one PNG per sensor reading in ``observation``; returns the paths written."""
    out = Path(out)
    written = []
    for name, value in observation.items():
        spec = rig.get(name)
        path = out / f"{name}.png"
        if isinstance(spec, RGBSensor):
            _save_png(path, value)
        elif isinstance(spec, DepthSensor):
            _save_png(path, colourise_depth(value, 1.0 if spec.normalize else spec.max_depth))
        elif isinstance(spec, SemanticSensor):
            _save_png(path, colourise_semantic(value, table))
        elif isinstance(spec, LidarSensor):
            save_lidar_plot(path, value, spec)
        else:
            continue
        written.append(path)
    return written


def save_panorama_strip(path: Path, views: list[np.ndarray]) -> None:
    """Stitch counter-clockwise panorama views into one strip: behind at the left edge,
    straight ahead in the middle, sweeping clockwise (left to right) as a person turns."""
    n = len(views)
    _save_png(path, np.concatenate([views[(n // 2 - j) % n] for j in range(n)], axis=1))
