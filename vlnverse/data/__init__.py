"""Files the package reads at run time, shipped inside it (and so inside its wheel).

``tracks/<name>/SHA256SUMS``: the published content checksums of each built-in track;
``waypoints/waypoint_predictor.pt``: the trained waypoint predictor LLM agents use by default.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def data_path(*parts: str) -> Path:
    """The path of a file of this package (it is installed as files, never zipped)."""
    return Path(str(resources.files(__name__).joinpath(*parts))).resolve()
