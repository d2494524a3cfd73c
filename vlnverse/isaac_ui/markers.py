"""Episode markers drawn in the stage: start pose, goal discs and the reference path.

Pure USD (usd-core), so the extension's "Show episode" button is tested without Kit.
Markers are visual only: no collision, no physics, no semantics, and they live under
their own root so clearing them never touches the scene.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pxr import Gf, Usd, UsdGeom, Vt

from vlnverse.errors import ConfigError
from vlnverse.sim.backends.isaac_usd import set_pose, yaw_quaternion

MARKER_ROOT = "/World/VLNVerseMarkers"
START_COLOR = (0.10, 0.45, 0.95)
GOAL_COLOR = (0.15, 0.80, 0.25)
PATH_COLOR = (0.95, 0.55, 0.10)


@dataclass(frozen=True)
class EpisodeMarkers:
    """What to draw for one episode.

    Attributes:
        start_position: Agent base position (x, y, z), meters.
        start_yaw: Agent heading in radians (0 = +X, CCW).
        goals: Goal positions (x, y, z).
        success_radius: Radius of the success disc around each goal, meters.
        path: Reference path polyline points (K, 3); may be empty.
    """

    start_position: tuple[float, float, float]
    start_yaw: float
    goals: tuple[tuple[float, float, float], ...]
    success_radius: float
    path: tuple[tuple[float, float, float], ...] = ()

    def __post_init__(self) -> None:
        if len(self.start_position) != 3:
            raise ConfigError("start_position must be (x, y, z)")
        if not self.goals:
            raise ConfigError("an episode needs at least one goal to draw")
        if any(len(g) != 3 for g in self.goals) or any(len(p) != 3 for p in self.path):
            raise ConfigError("goals and path points must be (x, y, z)")
        if not (math.isfinite(self.success_radius) and self.success_radius > 0):
            raise ConfigError(f"success_radius must be > 0, got {self.success_radius}")


def clear_markers(stage: Usd.Stage, root: str = MARKER_ROOT) -> bool:
    """Remove previously drawn markers; returns whether there were any."""
    if stage.GetPrimAtPath(root):
        return stage.RemovePrim(root)
    return False


def _fit_extent(boundable: UsdGeom.Boundable) -> None:
    """Author the extent USD computes for the prim's geometry (the validator checks it)."""
    extent = UsdGeom.Boundable.ComputeExtentFromPlugins(boundable, Usd.TimeCode.Default())
    boundable.CreateExtentAttr(extent)


def _color(gprim: UsdGeom.Gprim, rgb: Sequence[float], opacity: float = 1.0) -> None:
    gprim.CreateDisplayColorAttr(Vt.Vec3fArray([Gf.Vec3f(*rgb)]))
    gprim.CreateDisplayOpacityAttr(Vt.FloatArray([float(opacity)]))


def draw_episode(
    stage: Usd.Stage,
    markers: EpisodeMarkers,
    root: str = MARKER_ROOT,
    lift: float = 0.02,
    path_width: float = 0.05,
) -> Usd.Prim:
    """Draw ``markers`` under ``root`` (replacing earlier ones) and return the root prim.

    Args:
        stage: The open stage.
        markers: Start, goals and reference path.
        root: Prim path of the marker group.
        lift: Height above the given z at which discs and the path float (avoids z-fighting).
        path_width: Width of the drawn path, meters.
    """
    clear_markers(stage, root)
    group = UsdGeom.Scope.Define(stage, root)

    start = UsdGeom.Cone.Define(stage, f"{root}/Start")
    start.CreateAxisAttr(UsdGeom.Tokens.x)  # the tip points along the start heading
    start.CreateRadiusAttr(0.15)
    start.CreateHeightAttr(0.4)
    _fit_extent(start)
    x, y, z = (float(v) for v in markers.start_position)
    set_pose(start.GetPrim(), (x, y, z + 0.15 + lift), yaw_quaternion(markers.start_yaw))
    _color(start, START_COLOR)

    goals = UsdGeom.Scope.Define(stage, f"{root}/Goals")
    for index, goal in enumerate(markers.goals):
        disc = UsdGeom.Cylinder.Define(stage, f"{goals.GetPath()}/Goal_{index}")
        disc.CreateAxisAttr(UsdGeom.Tokens.z)
        disc.CreateRadiusAttr(float(markers.success_radius))
        disc.CreateHeightAttr(0.01)
        _fit_extent(disc)
        gx, gy, gz = (float(v) for v in goal)
        set_pose(disc.GetPrim(), (gx, gy, gz + lift), Gf.Quatd(1.0))
        _color(disc, GOAL_COLOR, opacity=0.5)

    if len(markers.path) >= 2:
        points = np.asarray(markers.path, dtype=float) + np.array([0.0, 0.0, lift])
        curve = UsdGeom.BasisCurves.Define(stage, f"{root}/ReferencePath")
        curve.CreateTypeAttr(UsdGeom.Tokens.linear)
        curve.CreateWrapAttr(UsdGeom.Tokens.nonperiodic)
        curve.CreateCurveVertexCountsAttr(Vt.IntArray([len(points)]))
        curve.CreatePointsAttr(Vt.Vec3fArray([Gf.Vec3f(*p) for p in points.tolist()]))
        curve.CreateWidthsAttr(Vt.FloatArray([float(path_width)]))
        curve.SetWidthsInterpolation(UsdGeom.Tokens.constant)
        _fit_extent(curve)
        _color(curve, PATH_COLOR)
    return group.GetPrim()


def path_length(points: Sequence[Sequence[float]]) -> float:
    """Length of a polyline in meters (the "length" column of the episode browser)."""
    array = np.asarray(points, dtype=float)
    if len(array) < 2:
        return 0.0
    return float(np.linalg.norm(np.diff(array, axis=0), axis=1).sum())
