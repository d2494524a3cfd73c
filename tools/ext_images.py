"""Draw the Isaac Sim extension's icon and preview (``exts/vlnverse.isaac/data/``).

Run ``python tools/ext_images.py`` to regenerate them; the output is deterministic.
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Circle, FancyArrow, Rectangle  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "exts" / "vlnverse.isaac" / "data"
ROOMS = [(0.0, 0.0, 4.0, 3.0), (4.0, 0.0, 3.0, 3.0), (0.0, 3.0, 3.0, 3.0), (3.0, 3.0, 4.0, 3.0)]
ROOM_COLORS = ["#f3e3c3", "#cfe3f0", "#d9ecd0", "#ecd6e6"]
PATH = [(1.0, 1.0), (3.6, 1.5), (4.4, 1.5), (5.5, 2.6), (5.3, 3.4), (4.6, 4.8)]


def _plan(ax: plt.Axes, caption: str | None) -> None:
    for (x, y, w, h), color in zip(ROOMS, ROOM_COLORS, strict=True):
        ax.add_patch(Rectangle((x, y), w, h, facecolor=color, edgecolor="#3a3a3a", linewidth=3))
    xs, ys = zip(*PATH, strict=True)
    ax.plot(xs, ys, color="#f28c1a", linewidth=5, solid_capstyle="round")
    ax.add_patch(Circle(PATH[-1], 0.45, color="#2bb34a", alpha=0.6))
    ax.add_patch(FancyArrow(*PATH[0], 0.6, 0.23, width=0.18, color="#1a73e8"))
    ax.set_xlim(-0.3, 7.3)
    ax.set_ylim(-0.3, 6.3 if caption is None else 7.2)
    if caption:
        ax.text(3.5, 6.7, caption, ha="center", va="center", fontsize=22, weight="bold")
    ax.set_aspect("equal")
    ax.axis("off")


def draw(out_dir: Path = DATA) -> list[Path]:
    """Write ``icon.png`` (256×256) and ``preview.png`` (1024×512); returns their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    icon = out_dir / "icon.png"
    fig = plt.figure(figsize=(2.56, 2.56), dpi=100)
    _plan(fig.add_axes((0, 0, 1, 1)), None)
    fig.savefig(icon, dpi=100, metadata={"Software": None})
    plt.close(fig)

    preview = out_dir / "preview.png"
    fig = plt.figure(figsize=(10.24, 5.12), dpi=100)
    _plan(fig.add_axes((0.0, 0.0, 0.5, 1.0)), "VLNVerse")
    text = fig.add_axes((0.5, 0.0, 0.5, 1.0))
    text.axis("off")
    lines = [
        "Vision-Language Navigation",
        "in Isaac Sim",
        "",
        "open scenes · browse episodes",
        "run agents · teleoperate & record",
        "Strict and Tel-Hop physics",
    ]
    for i, line in enumerate(lines):
        text.text(0.05, 0.8 - 0.11 * i, line, fontsize=20 if i < 2 else 15, va="center")
    fig.savefig(preview, dpi=100, metadata={"Software": None})
    plt.close(fig)
    return [icon, preview]


if __name__ == "__main__":
    for path in draw(Path(sys.argv[1]) if len(sys.argv) > 1 else DATA):
        print(path)
