"""Content checks of written pictures and pages (that a file exists proves little)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np


def picture(path: str | Path) -> np.ndarray:
    """The RGB pixels (floats in [0, 1]) of a PNG."""
    from matplotlib.image import imread

    return np.asarray(imread(str(path)))[..., :3]


def assert_drawn(path: str | Path, min_colours: int = 8, min_share: float = 0.02) -> None:
    """The PNG shows something: several colours, and at least ``min_share`` of its pixels
    differ from the most common (background) colour."""
    pixels = (picture(path) * 255).round().astype(np.uint8).reshape(-1, 3)
    colours, counts = np.unique(pixels, axis=0, return_counts=True)
    assert len(colours) >= min_colours, f"{path}: {len(colours)} colours"
    assert 1.0 - counts.max() / len(pixels) >= min_share, f"{path}: almost only background"


def index_rows(path: str | Path) -> list[str]:
    """The episode ids in the rows of an ``index.html``, in page order."""
    body = Path(path).read_text().split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    rows = re.findall(r'<tr data-i="\d+">(.*?)</tr>', body)
    return [re.sub(r"<[^>]+>", "", re.findall(r"<td[^>]*>(.*?)</td>", row)[1]) for row in rows]
