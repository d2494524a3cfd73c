"""Pictures of sensor readings for people: PNGs of RGB, depth with a colour bar in metres,
semantics with a legend of the instances in view, LiDAR plots, and labelled panorama sheets."""

from __future__ import annotations

import math
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


def depth_metres(depth: np.ndarray, spec: DepthSensor) -> np.ndarray:
    """A depth reading in metres, whether the sensor normalizes it or not."""
    d = np.asarray(depth, dtype=np.float64)
    d = d.squeeze(-1) if d.ndim == 3 else d
    return d * spec.max_depth if spec.normalize else d


def _figure(width_px: int, height_px: int, extra_px: int = 0):
    """A :class:`matplotlib.figure.Figure` of that many pixels (no pyplot: the caller's
    backend is left alone)."""
    from matplotlib.figure import Figure

    dpi = 100
    return Figure(figsize=((width_px + extra_px) / dpi, height_px / dpi), dpi=dpi)


def _save_figure(fig, path: Path) -> None:
    with atomic_open(path, "wb") as handle:
        fig.savefig(handle, format="png", bbox_inches="tight")


def save_depth_picture(path: Path, depth: np.ndarray, spec: DepthSensor) -> None:
    """Depth in the ``turbo`` colour map beside a colour bar in metres."""
    metres = depth_metres(depth, spec)
    h, w = metres.shape
    fig = _figure(max(w, 224), max(h, 224) + 60, 120)
    ax = fig.add_subplot(1, 1, 1)
    shown = ax.imshow(metres, cmap="turbo", vmin=0.0, vmax=spec.max_depth, interpolation="nearest")
    ax.set_axis_off()
    ax.set_title(f"depth, {spec.hfov_deg:g}° wide (clipped at {spec.max_depth:g} m)", fontsize=9)
    fig.colorbar(shown, ax=ax, fraction=0.046, pad=0.04).set_label("metres")
    _save_figure(fig, path)


def semantic_legend(ids: np.ndarray, table: InstanceTable, limit: int = 12) -> list[tuple[int, str, float]]:
    """``(id, label, share of pixels)`` of the instances in view, largest first (at most ``limit``)."""
    counts = np.bincount(np.clip(np.asarray(ids).ravel(), 0, table.max_id), minlength=len(table))
    order = [int(i) for i in np.argsort(-counts, kind="stable") if counts[i] > 0][:limit]
    total = max(int(counts.sum()), 1)
    return [(i, "nothing" if i == 0 else f"{table.instances[i].category} #{i}", counts[i] / total) for i in order]


def save_semantic_picture(path: Path, ids: np.ndarray, table: InstanceTable) -> None:
    """Instance colours beside a legend of the instances in view (category and id)."""
    from matplotlib.patches import Patch

    h, w = np.asarray(ids).shape
    palette = instance_palette(len(table))
    fig = _figure(max(w, 224), max(h, 224) + 40, 200)
    ax = fig.add_subplot(1, 1, 1)
    ax.imshow(colourise_semantic(ids, table), interpolation="nearest")
    ax.set_axis_off()
    ax.set_title("semantic instances", fontsize=9)
    handles = [Patch(color=palette[i] / 255.0, label=f"{label} ({share:.0%})")
               for i, label, share in semantic_legend(ids, table)]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=7, frameon=False)
    _save_figure(fig, path)


def save_lidar_plot(path: Path, scan: np.ndarray, spec: LidarSensor) -> None:
    """A top-down plot of a scan in the agent frame (forward = up)."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Circle

    directions = spec.ray_directions()
    hit = scan < spec.max_range
    x, y = directions[..., 0] * scan, directions[..., 1] * scan
    fig = Figure(figsize=(5, 5), dpi=100)
    ax = fig.subplots()
    ax.scatter(-y[hit], x[hit], s=4, c=scan[hit], cmap="viridis", vmin=0, vmax=spec.max_range)
    ax.add_patch(Circle((0, 0), 0.3, color="tab:red", alpha=0.6))
    ax.arrow(0, 0, 0, 0.5, width=0.05, color="tab:red")
    limit = min(spec.max_range, float(np.max(scan[hit], initial=1.0)) + 0.5)
    ax.set(xlim=(-limit, limit), ylim=(-limit, limit), aspect="equal", xlabel="right (m)", ylabel="forward (m)",
           title=f"LiDAR: {int(hit.sum())}/{scan.size} hits")
    _save_figure(fig, path)


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
            save_depth_picture(path, value, spec)
        elif isinstance(spec, SemanticSensor):
            save_semantic_picture(path, value, table)
        elif isinstance(spec, LidarSensor):
            save_lidar_plot(path, value, spec)
        else:
            continue
        written.append(path)
    return written


def heading_label(degrees: float) -> str:
    """``"ahead"``, ``"behind"`` or the turn from the heading: ``"30° left"``, ``"90° right"``."""
    d = (degrees + 180.0) % 360.0 - 180.0
    if abs(d) < 1e-6:
        return "ahead"
    if abs(abs(d) - 180.0) < 1e-6:
        return "behind"
    return f"{abs(d):g}° {'left' if d > 0 else 'right'}"


def save_panorama_sheet(path: Path, views: list[np.ndarray], step_deg: float, hfov_deg: float, title: str,
                        *, colour_scale: tuple[str, float] | None = None,
                        legend: list[tuple[np.ndarray, str]] | None = None) -> None:
    """A labelled panorama sheet: a 360° strip made of the central ``step_deg`` of each view
    (so no direction is shown twice; left of the strip is the agent's left, ahead in the
    middle), then every full view titled with its heading. View ``i`` looks ``i * step_deg``
    to the left. ``colour_scale`` is ``(label, max)`` for a colour bar (depth in metres),
    ``legend`` ``(colour, label)`` pairs (semantic instances).
    """
    n = len(views)
    order = [(n // 2 - j) % n for j in range(n)]  # behind (left edge) → left → ahead → right → behind
    width = views[0].shape[1]
    share = min(1.0, math.tan(math.radians(step_deg / 2)) / math.tan(math.radians(hfov_deg / 2)))
    keep = max(1, round(width * share))
    start = (width - keep) // 2
    strip = np.concatenate([views[i][:, start:start + keep] for i in order], axis=1)
    columns = 6 if n % 6 == 0 else n
    rows = -(-n // columns)
    fig = _figure(1200, 260 + 200 * rows)
    grid = fig.add_gridspec(rows + 1, columns, height_ratios=[1.3] + [1.0] * rows, hspace=0.45)
    ax = fig.add_subplot(grid[0, :])
    ax.imshow(strip, interpolation="nearest", aspect="auto")
    ticks = [(k + 0.5) * keep for k in range(n)]
    ax.set_xticks(ticks, [heading_label(order[k] * step_deg) for k in range(n)], fontsize=7)
    ax.set_yticks([])
    ax.set_title(f"{title}: 360° around the agent, the central {step_deg:g}° of each view "
                 f"(each view is {hfov_deg:g}° wide, views {step_deg:g}° apart)", fontsize=9)
    for k, i in enumerate(range(n)):
        sub = fig.add_subplot(grid[1 + k // columns, k % columns])
        sub.imshow(views[i], interpolation="nearest")
        sub.set_title(f"view {i}: {heading_label(i * step_deg)}", fontsize=7)
        sub.set_axis_off()
    if colour_scale is not None:
        from matplotlib.cm import ScalarMappable
        from matplotlib.colors import Normalize

        label, vmax = colour_scale
        bar = ScalarMappable(Normalize(0.0, vmax), "turbo")
        fig.colorbar(bar, ax=fig.axes, fraction=0.02, pad=0.01).set_label(label)
    if legend:
        from matplotlib.patches import Patch

        fig.legend(handles=[Patch(color=np.asarray(c) / 255.0, label=text) for c, text in legend],
                   loc="lower center", ncol=min(6, len(legend)), fontsize=7, frameon=False,
                   bbox_to_anchor=(0.5, -0.02))
    _save_figure(fig, path)
