"""Waypoint predictors by name, and what every predictor offers: ``predict(panorama)`` →
candidates (:class:`WaypointPredictor`)."""

from __future__ import annotations

from typing import Protocol

from vlnverse.agents.config import WaypointConfig
from vlnverse.agents.panorama import Panorama
from vlnverse.agents.waypoints.candidate import Candidate
from vlnverse.agents.waypoints.depth import DepthWaypoints


class WaypointPredictor(Protocol):
    """Anything that proposes candidates from a panorama."""

    def predict(self, panorama: Panorama) -> list[Candidate]:
        """The candidates of this step, in id order."""


def predictor_named(name: str, config: WaypointConfig, checkpoint: str | None = None) -> WaypointPredictor:
    """The predictor ``name`` names: ``learned`` (``checkpoint``, default the shipped one;
    needs torch), ``depth`` or a ``module:attr`` factory called with ``config``."""
    if name == "depth":
        return DepthWaypoints(config)
    if name == "learned":
        from vlnverse.agents.waypoints.learned.predictor import LearnedWaypoints

        return LearnedWaypoints(config, checkpoint)
    from vlnverse.registry import load_entry_point

    return load_entry_point(name)(config)


def describe_predictor(predictor: WaypointPredictor, name: str) -> dict[str, object]:
    """What ``run.json`` records of a predictor (its own ``describe()`` when it has one)."""
    describe = getattr(predictor, "describe", None)
    return dict(describe()) if callable(describe) else {"name": name}
