"""Spatial-semantic scene graph (paper §3.2 "Meta Information and Scene Prior").

Nodes are rooms, doors and objects; edges carry a ``relation``: ``in`` (object → room),
``on`` (object → its supporting object), ``near``/``next_to`` (objects, both directions),
``connects`` (door → room) and ``adjacent`` (room ↔ room). View-dependent relations
(left/right of the agent) depend on a pose, so they are computed on demand by
:func:`relative_direction`, never stored.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import numpy as np
from scipy import ndimage

from vlnverse.fileio import write_json_atomic
from vlnverse.scene.occupancy import OccupancyMap
from vlnverse.scene.types import Scene, SceneObject

UPWARD_COS = 0.9


@dataclass(frozen=True)
class RelationConfig:
    """Thresholds of the stored relations (metres).

    Attributes:
        on_tolerance: Max gap between an object's bottom and its support's top surface.
        near_distance: Max box-to-box gap for ``near``.
        next_to_distance: Max box-to-box gap for ``next_to``.
    """

    on_tolerance: float = 0.03
    near_distance: float = 1.0
    next_to_distance: float = 0.3


def build_scene_graph(scene: Scene, occupancy: OccupancyMap, config: RelationConfig = RelationConfig()) -> nx.MultiDiGraph:
    """The scene graph of ``scene`` with rooms taken from ``occupancy`` (annotated or segmented)."""
    graph = nx.MultiDiGraph(scene_id=scene.scene_id, scene_path=str(scene.path))
    _add_rooms(graph, occupancy)
    room_ids = [room.room_id for room in occupancy.rooms]
    object_rooms = [_object_room(obj, occupancy) for obj in scene.objects]
    for obj, room_index in zip(scene.objects, object_rooms, strict=False):
        room_id = room_ids[room_index] if room_index >= 0 else None
        graph.add_node(obj.object_id, kind="object", category=obj.category,
                       position=_round(obj.center), size=_round(obj.size), color=obj.color,
                       material=obj.material, state=obj.state, room=room_id, movable=obj.movable)
        if room_id is not None:
            graph.add_edge(obj.object_id, room_id, key="in", relation="in")
    for child, support in _on_pairs(scene, config.on_tolerance):
        graph.add_edge(child, support, key="on", relation="on")
    _add_proximity(graph, scene, object_rooms, config)
    _add_doors(graph, scene, occupancy)
    return graph


def _round(values) -> list[float]:
    return [round(float(v), 3) for v in values]


def _add_rooms(graph: nx.MultiDiGraph, occupancy: OccupancyMap) -> None:
    counts = np.bincount(occupancy.room_map[occupancy.room_map >= 0].ravel(), minlength=len(occupancy.rooms))
    centers = ndimage.center_of_mass(np.ones(occupancy.shape), occupancy.room_map, range(len(occupancy.rooms)))
    for index, room in enumerate(occupancy.rooms):
        center = occupancy.cell_to_world(np.array(centers[index])) if counts[index] else np.full(3, np.nan)
        graph.add_node(room.room_id, kind="room", room_type=room.room_type,
                       area=round(float(counts[index] * occupancy.resolution**2), 3),
                       position=_round(center) if counts[index] else None)


def _object_room(obj: SceneObject, occupancy: OccupancyMap) -> int:
    """The room under the object's footprint (majority of room cells), or -1."""
    lo = occupancy.world_to_cell(obj.aabb_min[:2])
    hi = occupancy.world_to_cell(obj.aabb_max[:2])
    lo = np.clip(lo, 0, np.array(occupancy.shape) - 1)
    hi = np.clip(hi, 0, np.array(occupancy.shape) - 1)
    window = occupancy.room_map[lo[0]:hi[0] + 1, lo[1]:hi[1] + 1]
    labels = window[window >= 0]
    if labels.size:
        return int(np.bincount(labels).argmax())
    return occupancy.room_at(obj.center)


def _on_pairs(scene: Scene, tolerance: float) -> list[tuple[str, str]]:
    """(object, support) pairs: the object's bottom rests on an upward surface of the support
    under the object's footprint centre; the highest such surface wins."""
    objects = scene.objects
    if len(objects) < 2:
        return []
    lo = np.array([o.aabb_min for o in objects])
    hi = np.array([o.aabb_max for o in objects])
    centers = (lo + hi) / 2
    tris = scene.triangles
    normals = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
    upward = normals[:, 2] > UPWARD_COS * np.maximum(np.linalg.norm(normals, axis=1), 1e-12)
    pairs = []
    # candidate supports: the child's centre lies within the support's footprint and its
    # bottom lies between the support's bottom and top (+ tolerance)
    inside_xy = ((centers[:, None, 0] >= lo[None, :, 0]) & (centers[:, None, 0] <= hi[None, :, 0])
                 & (centers[:, None, 1] >= lo[None, :, 1]) & (centers[:, None, 1] <= hi[None, :, 1]))
    bottom = lo[:, 2]
    in_z = (bottom[:, None] > lo[None, :, 2] + tolerance) & (bottom[:, None] <= hi[None, :, 2] + tolerance)
    candidates = inside_xy & in_z
    np.fill_diagonal(candidates, False)
    for child, support in zip(*np.nonzero(candidates), strict=False):
        surface = _support_height(tris, upward, objects[support].triangle_indices, centers[child, :2], bottom[child], tolerance)
        if surface is not None:
            pairs.append((child, support, surface))
    best: dict[int, tuple[int, float]] = {}
    for child, support, surface in pairs:
        if child not in best or surface > best[child][1]:
            best[child] = (support, surface)
    return [(objects[c].object_id, objects[s].object_id) for c, (s, _) in sorted(best.items())]


def _support_height(tris, upward, tri_indices, xy, bottom, tolerance) -> float | None:
    idx = tri_indices[upward[tri_indices]]
    if idx.size == 0:
        return None
    cand = tris[idx]
    heights = cand[:, :, 2].max(axis=1)
    close = np.abs(heights - bottom) <= tolerance
    if not close.any():
        return None
    cand, heights = cand[close], heights[close]
    tmin, tmax = cand[:, :, :2].min(axis=1), cand[:, :, :2].max(axis=1)
    covers = np.all((tmin <= xy + 1e-6) & (tmax >= xy - 1e-6), axis=1)
    return float(heights[covers].max()) if covers.any() else None


def box_gap(lo_a, hi_a, lo_b, hi_b) -> np.ndarray:
    """Euclidean gap between axis-aligned boxes (0 when they touch or overlap); broadcasts."""
    gap = np.maximum(0.0, np.maximum(lo_a - hi_b, lo_b - hi_a))
    return np.linalg.norm(gap, axis=-1)


def _add_proximity(graph, scene: Scene, object_rooms: list[int], config: RelationConfig) -> None:
    objects = scene.objects
    if len(objects) < 2:
        return
    lo = np.array([o.aabb_min for o in objects])
    hi = np.array([o.aabb_max for o in objects])
    gaps = box_gap(lo[:, None], hi[:, None], lo[None], hi[None])
    rooms = np.array(object_rooms)
    same_room = rooms[:, None] == rooms[None, :]
    near = (gaps <= config.near_distance) & same_room
    np.fill_diagonal(near, False)
    for a, b in zip(*np.nonzero(near), strict=False):
        relation = "next_to" if gaps[a, b] <= config.next_to_distance else "near"
        graph.add_edge(objects[a].object_id, objects[b].object_id, key=relation, relation=relation,
                       distance=round(float(gaps[a, b]), 3))


def _add_doors(graph, scene: Scene, occupancy: OccupancyMap) -> None:
    room_ids = {room.room_id for room in occupancy.rooms}
    for door in scene.doors:
        graph.add_node(door.door_id, kind="door", position=_round(door.position), width=round(door.width, 3),
                       state=door.state, open_plan=door.open_plan)
        connected = [r for r in door.connects if r in room_ids]
        for room in connected:
            graph.add_edge(door.door_id, room, key="connects", relation="connects")
        for a in connected:
            for b in connected:
                if a != b:
                    graph.add_edge(a, b, key="adjacent", relation="adjacent", via=door.door_id)
    # rooms whose free cells touch are adjacent too (open plans, unannotated scenes)
    rm = np.where(occupancy.free, occupancy.room_map, -1)
    for a_map, b_map in ((rm[:, :-1], rm[:, 1:]), (rm[:-1, :], rm[1:, :])):
        touch = (a_map >= 0) & (b_map >= 0) & (a_map != b_map)
        for a, b in set(zip(a_map[touch].tolist(), b_map[touch].tolist(), strict=False)):
            ra, rb = occupancy.rooms[a].room_id, occupancy.rooms[b].room_id
            for u, v in ((ra, rb), (rb, ra)):
                if not graph.has_edge(u, v, key="adjacent"):
                    graph.add_edge(u, v, key="adjacent", relation="adjacent", via="open")


# -- export -----------------------------------------------------------------------------

def scene_graph_to_json(graph: nx.MultiDiGraph) -> dict:
    """Node-link JSON of the graph."""
    return nx.node_link_data(graph, edges="edges")


def save_scene_graph(graph: nx.MultiDiGraph, path: str | Path) -> None:
    write_json_atomic(path, scene_graph_to_json(graph))


def load_scene_graph(path: str | Path) -> nx.MultiDiGraph:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return nx.node_link_graph(data, directed=True, multigraph=True, edges="edges")


def objects_in(graph: nx.MultiDiGraph, room_id: str) -> list[str]:
    return sorted(u for u, v, k in graph.in_edges(room_id, keys=True) if k == "in")


def support_of(graph: nx.MultiDiGraph, object_id: str) -> str | None:
    for _, v, k in graph.out_edges(object_id, keys=True):
        if k == "on":
            return v
    return None


def describe_object(graph: nx.MultiDiGraph, object_id: str) -> str:
    """``"red ceramic cup"``-style phrase from the node's attributes."""
    node = graph.nodes[object_id]
    words = [w for w in (node.get("color"), node.get("material"), node.get("category")) if w]
    return " ".join(words)


def scene_graph_summary(graph: nx.MultiDiGraph) -> str:
    """Compact text an LLM can read: one line per room with its objects, supports and doors."""
    lines = []
    rooms = sorted(n for n, d in graph.nodes(data=True) if d["kind"] == "room")
    for room in rooms:
        data = graph.nodes[room]
        items = []
        members = objects_in(graph, room)
        supported: dict[str, list[str]] = {}
        for obj in members:
            support = support_of(graph, obj)
            if support is not None:
                supported.setdefault(support, []).append(obj)
        for obj in members:
            if support_of(graph, obj) in members:
                continue
            text = f"{describe_object(graph, obj)} {obj}"
            if obj in supported:
                text += f" ({', '.join(supported[obj])} on it)"
            items.append(text)
        neighbours = sorted({v for _, v, k in graph.out_edges(room, keys=True) if k == "adjacent"})
        line = f"{room} ({data['room_type']}, {data['area']:.1f} m²): " + (", ".join(items) or "empty")
        if neighbours:
            line += f"; leads to {', '.join(neighbours)}"
        lines.append(line)
    return "\n".join(lines)


# -- view-dependent relations -------------------------------------------------------------

def relative_direction(pose: tuple[float, float, float], target, ahead_half_angle_deg: float = 30.0) -> str:
    """Where ``target`` (xy) lies for an agent at ``pose`` (x, y, yaw): ``ahead``, ``behind``,
    ``left`` or ``right``."""
    x, y, yaw = pose
    dx, dy = float(target[0]) - x, float(target[1]) - y
    bearing = math.degrees(math.atan2(dy, dx) - yaw)
    bearing = (bearing + 180.0) % 360.0 - 180.0  # CCW positive: left
    if abs(bearing) <= ahead_half_angle_deg:
        return "ahead"
    if abs(bearing) >= 180.0 - ahead_half_angle_deg:
        return "behind"
    return "left" if bearing > 0 else "right"
