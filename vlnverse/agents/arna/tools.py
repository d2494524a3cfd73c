"""ARNA's robotic toolset (paper §4.3, Appendix C): pydantic interfaces offered as tools.

Each interface is a pydantic model (its docstring and field descriptions are what the
model reads); :data:`INTERFACES` become the OpenAI-style tool list (native tool calling,
or :mod:`vlnverse.llm.structured`'s prompt emulation for servers without it). A call is
validated by its model and answered by :class:`ToolLibrary` from the agent's own
:class:`~vlnverse.agents.arna.worldmodel.SceneMemoryGraph`; a call that cannot be
answered (an unknown object, a point off the map) returns feedback, as in the paper, and
navigation calls return a :class:`NavGoal` that the executor drives the robot to.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from vlnverse.agents.arna.worldmodel import FREE, OBSTACLE, SceneMemoryGraph, bearing_text
from vlnverse.agents.parsing import ReplyError, parse_option

#: Most items of a list argument (landmarks, points, images) in one call.
MAX_ITEMS = 32
_FRONTIER_WORD = re.compile(r"^\s*frontier\b\s*(?:[:#]\s*)?", re.IGNORECASE)  # "frontier B" names B


class Interface(BaseModel):
    """A tool's arguments: numbers must be finite (JSON's NaN/Infinity would crash navigation)."""

    model_config = ConfigDict(allow_inf_nan=False)


class ObjectInterface(Interface):
    """Query the detected objects of the agent's scene graph (large physical items such as
    chairs or tables, not rooms): the list of object ids, an object's location, objects near
    an object or a point, and the ids of images showing an object."""

    rationale: str = Field(description="Think step by step and explain the reasoning.")
    information_action: Literal["get_object_IDs_list", "get_object_location", "get_nearby_objects",
                                "get_image_ids_of_object"] = Field(description="Information to gather.")
    object_action: str = Field(default="none", description="The object id (e.g. 'sofa_1') or category to investigate.")
    point_x: float | None = Field(default=None, description="X of a point (get_nearby_objects without an object).")
    point_y: float | None = Field(default=None, description="Y of a point (get_nearby_objects without an object).")
    close_distance: float = Field(default=1.5, description="Distance (m) to check for nearby objects.")


class RoomInterface(Interface):
    """Investigate rooms: clusters of places the robot stood, labelled by room type (they
    may not match a person's idea of a room). Gives the room ids, a room's location, its
    top-down layout on the occupancy grid (black traversable, grey occupied, white
    unexplored), the objects detected in it and the ids of images taken there."""

    rationale: str = Field(description="Think step by step and explain the reasoning.")
    information_action: Literal["get_room_IDs_list", "get_room_location", "get_top_down_room_layout",
                                "get_detected_objects_in_room", "get_image_ids_of_the_room"] = Field(
        description="Information to gather about the room.")
    room_action: str = Field(default="none", description="The room id (e.g. 'kitchen_1') to investigate.")


class SensorInterface(Interface):
    """Look back at prior sensor information: image ids whose content matches a description,
    the image taken at a past pose (by image id or time step), the best stored view of a
    point, and random traversable points of the occupancy grid (stored as landmarks
    Point_<id>)."""

    rationale: str = Field(description="Think step by step and explain the reasoning.")
    sensor_action: Literal["get_image_ids_given_description", "get_image_from_a_past_pose",
                           "get_best_view_around_the_point", "sample_random_traversable_points_from_bev"] = Field(
        description="Sensor action to perform.")
    description: str | None = Field(default=None, description="Object or content to look for (description search).")
    image_id: int | None = Field(default=None, description="Image id (get_image_from_a_past_pose).")
    time_step: int | None = Field(default=None, description="Time step of a past pose (instead of an image id).")
    position_x: float | None = Field(default=None, description="X of the point (best view).")
    position_y: float | None = Field(default=None, description="Y of the point (best view).")


class GoToInterface(Interface):
    """Move the robot: to a known node (an object or room id such as 'chair_1' or
    'kitchen_1'), to a landmark Point_<id>, to a specific (x, y), or to where an image was
    taken. Give at least the argument that defines the goal."""

    rationale: str = Field(description="Think step by step and explain the reasoning.")
    motion_action: Literal["to_known_node", "to_point", "to_specific_location", "to_image_pose"] = Field(
        description="Motion action.")
    node_name: str | None = Field(default=None, description="Node to go to, e.g. 'chair_1' or 'living_room_2'.")
    point_to_investigate: int | None = Field(default=None, description="The id of a landmark Point_<id>.")
    specific_location_argument_x: float | None = Field(default=None, description="X of the location.")
    specific_location_argument_y: float | None = Field(default=None, description="Y of the location.")
    image_id: int | None = Field(default=None, description="Go to where this image was taken.")


class ExploreInterface(Interface):
    """Explore unseen space: go to one of the frontiers listed in the memory (letters A, B,
    ... on the occupancy grid), or rotate in place to look around."""

    rationale: str = Field(description="Reasoning for choosing this exploration strategy.")
    strategy: Literal["goto_frontier", "rotate_in_place"] = Field(description="Exploration strategy.")
    frontier: str | None = Field(default=None, description="The frontier letter (goto_frontier).")
    angle_deg: float | None = Field(default=None, description="Rotation, counter-clockwise degrees (rotate_in_place).")


class OverlayInterface(Interface):
    """Overlay detected objects, rooms and points on the occupancy grid or on stored images,
    to relate landmarks to the map or to what an image shows."""

    rationale: str = Field(description="Think step by step and explain the reasoning.")
    fusion_action: Literal["overlay_on_occupancy_grid", "overlay_on_images"] = Field(description="Type of overlay.")
    objects: list[str] | None = Field(default=None, max_length=MAX_ITEMS, description="Object ids to overlay (empty: all).")
    rooms: list[str] | None = Field(default=None, max_length=MAX_ITEMS, description="Room ids to overlay.")
    points_x: list[float] | None = Field(default=None, max_length=MAX_ITEMS, description="X of points to overlay.")
    points_y: list[float] | None = Field(default=None, max_length=MAX_ITEMS, description="Y of points to overlay.")
    image_ids: list[int] | None = Field(default=None, max_length=MAX_ITEMS, description="Images to overlay on (overlay_on_images).")


class VisualAnalysisInterface(Interface):
    """Analyse stored images in depth (visual proximity, small items, states) and return
    the findings, without adding the images to the conversation."""

    rationale: str = Field(description="What to look for in the images, as a full sentence.")
    mode: Literal["independent", "joint"] = Field(
        default="independent", description="'independent': one image at a time (cheaper); 'joint': all at once.")
    image_ids: list[int] = Field(max_length=MAX_ITEMS, description="Image ids to analyse.")


class MemoryReadInterface(Interface):
    """Read the parts of the agent's memory relevant to the next step."""

    next_step: str = Field(description="Description of the next step to be executed.")
    rationale: str = Field(description="Rationale for the next step.")


INTERFACES: dict[str, type[BaseModel]] = {
    "ObjectInterface": ObjectInterface, "RoomInterface": RoomInterface, "SensorInterface": SensorInterface,
    "GoToInterface": GoToInterface, "ExploreInterface": ExploreInterface, "OverlayInterface": OverlayInterface,
    "VisualAnalysisInterface": VisualAnalysisInterface, "MemoryReadInterface": MemoryReadInterface,
}
#: The tools a high-level plan step of each kind may use.
KIND_TOOLS: dict[str, tuple[str, ...]] = {
    "goto": ("GoToInterface", "ObjectInterface", "RoomInterface"),
    "explore": ("ExploreInterface",),
    "rotate": ("ExploreInterface",),
    "getinfo": ("ObjectInterface", "RoomInterface", "SensorInterface", "OverlayInterface", "MemoryReadInterface"),
    "analyze": ("VisualAnalysisInterface", "SensorInterface", "ObjectInterface", "OverlayInterface"),
}


def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of a pydantic model in the subset :mod:`vlnverse.llm.schema` checks:
    titles dropped, ``$defs`` references inlined."""
    raw = model.model_json_schema()
    defs = raw.pop("$defs", {})

    def clean(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return clean(defs[node["$ref"].rsplit("/", 1)[-1]])
            return {k: clean(v) for k, v in node.items() if k != "title"}
        if isinstance(node, list):
            return [clean(v) for v in node]
        return node

    return clean(raw)


def tool_specs(names: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The tool list (``{"name", "description", "parameters"}``) of ``names`` (default all)."""
    specs = []
    for name in names or INTERFACES:
        model = INTERFACES[name]
        schema = model_schema(model)
        description = " ".join((schema.pop("description", "") or "").split())
        specs.append({"name": name, "description": description, "parameters": schema})
    return specs


def argument_problems(name: str) -> Callable[[Mapping[str, Any]], list[str]]:
    """A checker of ``name``'s arguments (what :func:`~vlnverse.agents.arna.plan.validate` needs)."""
    def check(args: Mapping[str, Any]) -> list[str]:
        try:
            INTERFACES[name].model_validate({"rationale": "planned", **dict(args)})
        except ValidationError as exc:
            return [f"{name} {'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
        return []
    return check


def mark_columns(rgb: np.ndarray, bearings: Sequence[float], hfov: float) -> np.ndarray:
    """A copy of ``rgb`` with a numbered-by-order vertical marker at each relative bearing
    (radians, counter-clockwise; 0 = the image centre), as the paper overlays landmarks."""
    out = np.array(rgb, dtype=np.uint8, copy=True)
    height, width = out.shape[:2]
    focal = (width / 2.0) / math.tan(hfov / 2.0)
    palette = ((230, 40, 40), (40, 200, 40), (40, 90, 230), (230, 200, 30), (200, 40, 200), (30, 200, 200))
    for k, bearing in enumerate(bearings):
        col = int(round(width / 2.0 - focal * math.tan(bearing) - 0.5))
        if 0 <= col < width:
            colour = palette[k % len(palette)]
            out[:, max(0, col - 1):col + 2] = colour
            top = min(height, 4 + 3 * k)
            out[:top, max(0, col - 3):col + 4] = colour
    return out


@dataclass(frozen=True)
class NavGoal:
    """Where a navigation tool sends the robot (odometry frame), or a rotation."""

    label: str
    point: np.ndarray | None = None
    rotate: float | None = None   # radians, counter-clockwise


@dataclass
class ToolResult:
    """What a tool returns: ``found`` (the flag plan conditions read), the text for the
    model, images (label, array) and a navigation goal."""

    found: bool
    text: str
    images: list[tuple[str, np.ndarray]] = field(default_factory=list)
    goal: NavGoal | None = None


class ToolLibrary:
    """Answers tool calls from the agent's own scene graph.

    Args:
        graph: The agent's scene graph.
        pose: Returns the robot's current pose ``(x, y, z, yaw)``.
        rng: Randomness (traversable point sampling).
        analyse: ``analyse(rationale, records, joint) -> text``: the visual analysis model call.
        memory_text: Returns the textual memory (memory reads).
        hfov_deg: The cameras' horizontal field of view (where overlays fall in an image).
    """

    def __init__(self, graph: SceneMemoryGraph, pose: Callable[[], np.ndarray], rng: np.random.Generator,
                 analyse: Callable[[str, list[Any], bool], str], memory_text: Callable[[], str],
                 hfov_deg: float = 90.0) -> None:
        self.graph = graph
        self.hfov = math.radians(hfov_deg)
        self.pose = pose
        self.rng = rng
        self.analyse = analyse
        self.memory_text = memory_text
        self.points: dict[int, np.ndarray] = {}
        self.frontier_points: dict[str, np.ndarray] = {}
        self.visited_frontiers: list[np.ndarray] = []

    def call(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Run one validated call (``ValidationError`` for arguments outside the model)."""
        args = INTERFACES[name].model_validate(dict(arguments))
        return getattr(self, "_" + name)(args)

    # -- helpers ---------------------------------------------------------------------

    def _where(self, point: np.ndarray) -> str:
        pose = self.pose()
        return f"({point[0]:.1f}, {point[1]:.1f}), {bearing_text(pose[:2], float(pose[3]), point)} of you"

    def _image_result(self, ids: Sequence[int], text: str) -> ToolResult:
        records = [self.graph.images[i] for i in ids]
        images = [(f"image {r.image_id}", r.rgb) for r in records if r.rgb is not None]
        lines = [text] + [r.description for r in records]
        return ToolResult(bool(records), "\n".join(lines), images)

    def landmark(self, point: np.ndarray) -> int:
        """Store ``point`` as landmark ``Point_<id>``; returns the id."""
        index = len(self.points)
        self.points[index] = np.asarray(point[:2], dtype=np.float64)
        return index

    # -- interfaces -------------------------------------------------------------------

    def _ObjectInterface(self, a: ObjectInterface) -> ToolResult:  # noqa: N802 - named after the tool
        g = self.graph
        if a.information_action == "get_object_IDs_list":
            nodes = g.matching(a.object_action) if a.object_action not in ("none", "") else list(g.objects.values())
            if not nodes:
                return ToolResult(False, f"No detected object matches {a.object_action!r}.")
            return ToolResult(True, "Detected objects: " + "; ".join(f"{n.name} at {self._where(n.position)}" for n in nodes))
        if a.information_action == "get_nearby_objects" and a.object_action in ("none", ""):
            if a.point_x is None or a.point_y is None:
                return ToolResult(False, "Give an object id or point_x and point_y.")
            centre = np.array([a.point_x, a.point_y])
            near = g.nearby(centre, a.close_distance)
            return ToolResult(bool(near), f"Objects within {a.close_distance:.1f} m of ({a.point_x:.1f}, {a.point_y:.1f}): "
                              + (", ".join(n.name for n in near) or "none"))
        nodes = g.matching(a.object_action)
        if not nodes:
            known = ", ".join(sorted(g.objects)) or "none yet"
            return ToolResult(False, f"No detected object {a.object_action!r}. Known objects: {known}.")
        if a.information_action == "get_object_location":
            return ToolResult(True, "; ".join(f"{n.name} is at {self._where(n.position)}" for n in nodes))
        if a.information_action == "get_nearby_objects":
            lines = []
            for n in nodes:
                near = [m.name for m in g.nearby(n.position, a.close_distance) if m.name != n.name]
                lines.append(f"near {n.name} (within {a.close_distance:.1f} m): {', '.join(near) or 'nothing detected'}")
            return ToolResult(any("nothing detected" not in line for line in lines), "\n".join(lines))
        ids = sorted({i for n in nodes for i in n.image_ids})
        return ToolResult(bool(ids), f"Images showing {a.object_action}: {ids or 'none'}")

    def _RoomInterface(self, a: RoomInterface) -> ToolResult:  # noqa: N802
        g = self.graph
        if a.information_action == "get_room_IDs_list":
            return ToolResult(bool(g.rooms), "Rooms: " + ("; ".join(f"{r.name} at {self._where(r.centre)}" for r in g.rooms)
                                                       or "none yet"))
        room = g.room(a.room_action)
        if room is None:
            return ToolResult(False, f"No room {a.room_action!r}. Known rooms: {', '.join(r.name for r in g.rooms) or 'none'}.")
        if a.information_action == "get_room_location":
            return ToolResult(True, f"{room.name} is at {self._where(room.centre)}")
        if a.information_action == "get_top_down_room_layout":
            picture, ascii_map = self.overlay_grid(room.centre, 4.0, [], [(room.name, room.centre)])
            return ToolResult(True, f"Layout around {room.name}:\n{ascii_map}", [(f"layout {room.name}", picture)])
        if a.information_action == "get_detected_objects_in_room":
            inside = [n.name for n in g.objects.values() if g.room_of(n.position) is room]
            return ToolResult(bool(inside), f"Objects in {room.name}: {', '.join(inside) or 'none detected'}")
        return ToolResult(bool(room.image_ids), f"Images of {room.name}: {room.image_ids[-12:] or 'none'}")

    def _SensorInterface(self, a: SensorInterface) -> ToolResult:  # noqa: N802
        g = self.graph
        if a.sensor_action == "get_image_ids_given_description":
            if not a.description:
                return ToolResult(False, "Give a description to search for.")
            words = [w for w in a.description.lower().replace("_", " ").split() if len(w) > 2]
            ids = [r.image_id for r in g.images if any(w in r.description.lower().replace("_", " ") for w in words)]
            return ToolResult(bool(ids), f"Images matching {a.description!r}: {ids[-12:] or 'none'}")
        if a.sensor_action == "get_image_from_a_past_pose":
            if a.image_id is not None and 0 <= a.image_id < len(g.images):
                return self._image_result([a.image_id], "The image:")
            ids = [r.image_id for r in g.images if r.step == a.time_step]
            return self._image_result(ids[:4], f"Images of time step {a.time_step}:") if ids else \
                ToolResult(False, f"No image with id {a.image_id} or time step {a.time_step}.")
        if a.sensor_action == "get_best_view_around_the_point":
            if a.position_x is None or a.position_y is None:
                return ToolResult(False, "Give position_x and position_y.")
            point = np.array([a.position_x, a.position_y])
            best = self.best_view(point)
            return self._image_result([best], f"Best view of ({a.position_x:.1f}, {a.position_y:.1f}):") \
                if best is not None else ToolResult(False, "No stored image looks toward that point.")
        free = g.grid.free_points()
        if len(free) == 0:
            return ToolResult(False, "No traversable space mapped yet.")
        picks = free[self.rng.choice(len(free), size=min(5, len(free)), replace=False)]
        ids = [self.landmark(p) for p in picks]
        return ToolResult(True, "Sampled traversable points: " + "; ".join(
            f"Point_{i} at {self._where(self.points[i])}" for i in ids))

    def best_view(self, point: np.ndarray) -> int | None:
        """The stored image that looks most directly at ``point`` from nearest."""
        best, score = None, math.inf
        for r in self.graph.images:
            dx, dy = point - r.position
            off = abs(math.remainder(math.atan2(dy, dx) - r.yaw, 2 * math.pi))
            if off < math.radians(40):
                value = math.hypot(dx, dy) + 2.0 * off
                if value < score:
                    best, score = r.image_id, value
        return best

    def _GoToInterface(self, a: GoToInterface) -> ToolResult:  # noqa: N802
        g = self.graph
        target, label = None, ""
        if a.motion_action == "to_known_node" and a.node_name:
            nodes = g.matching(a.node_name)
            room = g.room(a.node_name)
            if nodes:
                target, label = nodes[0].position, nodes[0].name
            elif room is not None:
                target, label = room.centre, room.name
        elif a.motion_action == "to_point" and a.point_to_investigate in self.points:
            target, label = self.points[a.point_to_investigate], f"Point_{a.point_to_investigate}"
        elif a.motion_action == "to_specific_location" and None not in (a.specific_location_argument_x,
                                                                         a.specific_location_argument_y):
            target = np.array([a.specific_location_argument_x, a.specific_location_argument_y])
            label = f"({target[0]:.1f}, {target[1]:.1f})"
        elif a.motion_action == "to_image_pose" and a.image_id is not None and 0 <= a.image_id < len(g.images):
            target, label = g.images[a.image_id].position, f"the pose of image {a.image_id}"
        if target is None:
            return ToolResult(False, f"Cannot go there: {a.motion_action} needs a known node, landmark, location "
                              "or image id (see the memory for the known ones).")
        return ToolResult(True, f"Going to {label}.", goal=NavGoal(label, np.asarray(target[:2], dtype=np.float64)))

    def frontier_listing(self, limit: int = 8) -> str:
        """Refresh the lettered frontiers (nearest unvisited ones) and describe them."""
        pose = self.pose()
        found = [p for p, _ in self.graph.grid.frontiers()
                 if all(np.linalg.norm(p - v) > 1.0 for v in self.visited_frontiers)]
        found = sorted(found, key=lambda p: float(np.linalg.norm(p - pose[:2])))[:limit]
        self.frontier_points = {chr(ord("A") + i): p for i, p in enumerate(found)}
        return "\n".join(f"{k}: {self._where(p)}" for k, p in self.frontier_points.items()) or "(no frontier left)"

    def _ExploreInterface(self, a: ExploreInterface) -> ToolResult:  # noqa: N802
        if a.strategy == "rotate_in_place":
            angle = math.radians(a.angle_deg if a.angle_deg is not None else 90.0)
            return ToolResult(True, f"Rotating {math.degrees(angle):.0f} deg.", goal=NavGoal("rotation", rotate=angle))
        if not self.frontier_points:
            self.frontier_listing()
        if not self.frontier_points:
            return ToolResult(False, "No frontier left: the reachable space is explored.")
        try:  # the shared parser's rule: exactly one of the letters ("frontier B" is B, "Frontier" is none)
            letter = parse_option(_FRONTIER_WORD.sub("", str(a.frontier or ""), count=1), list(self.frontier_points))
        except ReplyError:
            return ToolResult(False, f"Unknown frontier {a.frontier!r}; the frontiers are {', '.join(self.frontier_points)}.")
        point = self.frontier_points[letter]
        self.visited_frontiers.append(point)
        return ToolResult(True, f"Exploring frontier {letter}.", goal=NavGoal(f"frontier {letter}", point))

    def overlay_grid(self, centre: np.ndarray, radius: float, names: Sequence[str],
                     points: Sequence[tuple[str, np.ndarray]]) -> tuple[np.ndarray, str]:
        """The grid around ``centre`` with the robot, objects ``names`` and labelled points:
        an RGB picture and a coarse text map."""
        window, origin = self.graph.grid.crop(centre, radius)
        colours = np.array([[255, 255, 255], [0, 0, 0], [128, 128, 128]], dtype=np.uint8)
        picture = colours[window][::-1].copy()   # north up
        marks = [("@", self.pose()[:2], (220, 30, 30))]
        marks += [(n[:1].upper(), self.graph.objects[n].position, (30, 30, 220)) for n in names if n in self.graph.objects]
        marks += [(label[:1].upper(), p, (30, 180, 30)) for label, p in points]
        res = self.graph.grid.resolution
        for _, p, colour in marks:
            r = window.shape[0] - 1 - int((p[1] - origin[1]) / res)
            c = int((p[0] - origin[0]) / res)
            picture[max(0, r - 1):r + 2, max(0, c - 1):c + 2] = colour
        step = max(1, int(round(0.5 / res)))
        coarse = window[::step, ::step][::-1]
        chars = np.where(coarse == OBSTACLE, "#", np.where(coarse == FREE, ".", " ")).astype("<U1")
        for glyph, p, _ in marks:
            r = coarse.shape[0] - 1 - int((p[1] - origin[1]) / (res * step))
            c = int((p[0] - origin[0]) / (res * step))
            if 0 <= r < coarse.shape[0] and 0 <= c < coarse.shape[1]:
                chars[r, c] = glyph
        legend = f"(north up, one character = {res * step:.1f} m, x grows to the right; '@' you, # occupied, . free)"
        return np.repeat(np.repeat(picture, 3, axis=0), 3, axis=1), legend + "\n" + "\n".join("".join(r).rstrip() for r in chars)

    def _OverlayInterface(self, a: OverlayInterface) -> ToolResult:  # noqa: N802
        g = self.graph
        names = a.objects or list(g.objects)
        points = [(r.name, r.centre) for r in g.rooms if r.name in (a.rooms or [])]
        xs, ys = a.points_x or [], a.points_y or []
        for x, y in zip(xs, ys, strict=False):
            i = self.landmark(np.array([x, y]))
            points.append((f"Point_{i}", self.points[i]))
        if a.fusion_action == "overlay_on_occupancy_grid":
            picture, ascii_map = self.overlay_grid(self.pose()[:2], 6.0, names, points)
            legend = "; ".join([f"{n} ({n[:1].upper()}) at {self._where(g.objects[n].position)}" for n in names if n in g.objects]
                               + [f"{label} at {self._where(p)}" for label, p in points])
            return ToolResult(True, f"Occupancy grid with landmarks: {legend or 'none'}\n{ascii_map}",
                              [("occupancy grid", picture)])
        ids = [i for i in (a.image_ids or []) if 0 <= i < len(g.images)]
        if not ids:
            return ToolResult(False, "Give the ids of stored images to overlay on.")
        marks = [(n, g.objects[n].position) for n in names if n in g.objects] + points
        lines, images = [], []
        for i in ids:
            r = g.images[i]
            inside = [(label, p, math.remainder(math.atan2(p[1] - r.position[1], p[0] - r.position[0]) - r.yaw,
                                                2 * math.pi)) for label, p in marks]
            inside = [(label, p, rel) for label, p, rel in inside if abs(rel) < self.hfov / 2]
            lines.append(f"image {i}: in view: " + (", ".join(
                f"{label} (marker {k + 1}) {bearing_text(r.position, r.yaw, p)}" for k, (label, p, _) in enumerate(inside))
                or "none of the landmarks"))
            if r.rgb is not None:
                images.append((f"image {i} with markers", mark_columns(r.rgb, [rel for _, _, rel in inside], self.hfov)))
        lines += [g.images[i].description for i in ids]
        return ToolResult(True, "\n".join(lines), images)

    def _VisualAnalysisInterface(self, a: VisualAnalysisInterface) -> ToolResult:  # noqa: N802
        records = [self.graph.images[i] for i in a.image_ids if 0 <= i < len(self.graph.images)]
        if not records:
            return ToolResult(False, f"No stored image among {a.image_ids}.")
        text = self.analyse(a.rationale, records, a.mode == "joint")
        return ToolResult(True, f"Visual analysis of images {[r.image_id for r in records]}: {text}")

    def _MemoryReadInterface(self, a: MemoryReadInterface) -> ToolResult:  # noqa: N802
        text = self.memory_text()
        return ToolResult(bool(text.strip()), text or "(memory is empty)")
