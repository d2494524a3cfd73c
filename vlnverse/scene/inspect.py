"""One call that prepares everything a person or a task needs to know about a scene."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import numpy as np

from vlnverse.fileio import atomic_open, write_json_atomic
from vlnverse.scene.bev import save_bev
from vlnverse.scene.loading import scene_with_occupancy
from vlnverse.scene.navigation import Navigator
from vlnverse.scene.occupancy import OccupancyMap
from vlnverse.scene.scene_graph import build_scene_graph, save_scene_graph
from vlnverse.scene.types import Scene


@dataclass
class PreparedScene:
    """A loaded scene with its occupancy map, navigator and scene graph."""

    scene: Scene
    occupancy: OccupancyMap
    navigator: Navigator
    graph: nx.MultiDiGraph


def prepare_scene(path: str | Path, agent_radius: float = 0.30, agent_height: float = 1.50,
                  resolution: float = 0.05) -> PreparedScene:
    """Load → occupancy (both cached, see :mod:`vlnverse.scene.loading`) → navigator → scene graph."""
    scene, occupancy = scene_with_occupancy(path, agent_radius=agent_radius, agent_height=agent_height,
                                            resolution=resolution)
    return PreparedScene(scene, occupancy, Navigator(occupancy), build_scene_graph(scene, occupancy))


def scene_summary(prepared: PreparedScene) -> dict:
    """The figures of ``summary.json``."""
    occ = prepared.occupancy
    areas = occ.component_areas
    return {
        "scene_id": prepared.scene.scene_id,
        "scene_path": str(prepared.scene.path),
        "navigable_area_m2": round(occ.navigable_area_m2, 4),
        "free_area_m2": round(occ.free_area_m2, 4),
        "rooms": dict(sorted(Counter(r.room_type for r in occ.rooms).items())),
        "room_count": len(occ.rooms),
        "objects": dict(sorted(Counter(o.category for o in prepared.scene.objects).items())),
        "object_count": len(prepared.scene.objects),
        "doors": len(prepared.scene.doors),
        "navigable_components": int(areas.size),
        "largest_component_share": round(float(areas.max() / areas.sum()), 4) if areas.size and areas.sum() else 0.0,
        "resolution": occ.resolution,
        "agent_radius": occ.agent_radius,
        "agent_height": occ.agent_height,
        "floor_height": round(occ.floor_height, 4),
        "grid_shape": list(occ.shape),
    }


def write_inspection(prepared: PreparedScene, out_dir: str | Path) -> dict:
    """Write occupancy.npz, bev.png, scene_graph.json and summary.json; return the summary."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    occ = prepared.occupancy
    with atomic_open(out / "occupancy.npz", "wb") as handle:
        np.savez_compressed(handle, free=occ.free, navigable=occ.navigable, room_map=occ.room_map,
                            resolution=occ.resolution, origin=occ.origin, floor_height=occ.floor_height)
    save_bev(out / "bev.png", prepared.scene, occ)
    save_scene_graph(prepared.graph, out / "scene_graph.json")
    summary = scene_summary(prepared)
    write_json_atomic(out / "summary.json", summary)
    return summary
