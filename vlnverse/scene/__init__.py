"""Environment layer: USD scenes, occupancy maps, navigation and scene graphs."""

from vlnverse.scene.navigation import DistanceField, Navigator, NavPath
from vlnverse.scene.occupancy import OccupancyMap, build_occupancy
from vlnverse.scene.types import Door, PrimGeometry, Room, Scene, SceneObject
from vlnverse.scene.usd_loader import load_scene

__all__ = ["DistanceField", "Door", "NavPath", "Navigator", "OccupancyMap", "PrimGeometry", "Room",
           "Scene", "SceneObject", "build_occupancy", "load_scene"]
