"""ARNA's own online scene graph (paper Appendix A), built only from its observations.

- **Occupancy grid** (odometry frame, metres): depth hits between the step height and the
  body's top are obstacles, floor hits and the space in front of the nearest obstacle are
  free, the rest is unknown. A* over it (:meth:`OccupancyGrid.plan`) and geometric
  frontiers (free cells next to unknown ones, clustered: :meth:`OccupancyGrid.frontiers`).
- **Object graph**: one node per observed instance, placed at the mean of its back-projected
  pixels. Labels come from the semantic sensor in ``gt`` perception (the env's id →
  category table) or from the model in ``vlm`` perception (:meth:`SceneMemoryGraph.add_labelled`).
- **Room graph**: the places the robot stood, clustered by the room label it had there.
- **Sensor graph**: the views that added something to the map, with their pose, so the
  agent can look back at them by image id.

Nothing here reads the env's privileged scene graph or its maps.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from vlnverse.agents.gt_perception import MIN_PIXEL_FRACTION, NOT_LANDMARKS
from vlnverse.agents.panorama import Panorama, direction_phrase

UNKNOWN, FREE, OBSTACLE = 0, 1, 2
RAY_BIN_DEG = 2.0
UNKNOWN_COST = 4.0          # A* may cross unseen cells at a price (a bump marks them), unless told not to
ROOM_RADIUS = 4.0           # a place farther than this from a room node of its label starts a new node


def to_world(pose: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Agent-frame ``(N, 2)`` points (x forward, y left) in the odometry frame of ``pose``."""
    x, y, yaw = float(pose[0]), float(pose[1]), float(pose[3])
    c, s = math.cos(yaw), math.sin(yaw)
    return np.stack([x + points[:, 0] * c - points[:, 1] * s, y + points[:, 0] * s + points[:, 1] * c], axis=1)


class OccupancyGrid:
    """A square grid centred on the start pose.

    Args:
        centre: The odometry-frame point at the grid's centre.
        extent: Side of the mapped square (m).
        resolution: Cell side (m).
    """

    def __init__(self, centre: np.ndarray, extent: float, resolution: float) -> None:
        self.resolution = float(resolution)
        self.size = int(round(extent / resolution))
        self.origin = np.asarray(centre[:2], dtype=np.float64) - extent / 2.0
        self.grid = np.full((self.size, self.size), UNKNOWN, dtype=np.int8)
        self.weights: np.ndarray | None = None     # the cost grid of the last plan
        self.clearance: np.ndarray | None = None   # metres from each cell to the nearest obstacle (last plan)
        self.floor = 0.0                           # the least clearance the last plan allowed

    def cells(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(rows, cols, inside)`` of odometry-frame points (row = y, col = x)."""
        idx = np.floor((np.asarray(points, dtype=np.float64)[:, :2] - self.origin) / self.resolution).astype(int)
        inside = (idx >= 0).all(axis=1) & (idx < self.size).all(axis=1)
        return idx[:, 1], idx[:, 0], inside

    def point(self, row: int, col: int) -> np.ndarray:
        """The centre of a cell."""
        return self.origin + (np.array([col, row], dtype=np.float64) + 0.5) * self.resolution

    def mark(self, points: np.ndarray, value: int, *, keep_obstacles: bool = False) -> int:
        """Set the cells of ``points`` to ``value``; returns how many cells were unknown."""
        if len(points) == 0:
            return 0
        rows, cols, inside = self.cells(points)
        rows, cols = rows[inside], cols[inside]
        if keep_obstacles:
            keep = self.grid[rows, cols] != OBSTACLE
            rows, cols = rows[keep], cols[keep]
        new = int(np.count_nonzero(self.grid[rows, cols] == UNKNOWN))
        self.grid[rows, cols] = value
        return new

    def integrate(self, pose: np.ndarray, panorama: Panorama, step_height: float, body_height: float,
                  view: int | None = None) -> int:
        """Add one panorama (or one of its views); returns the cells newly observed."""
        views = range(panorama.config.views) if view is None else (view,)
        free, obstacles = [], []
        for v in views:
            x, y, z, hit = panorama.rays(v, panorama.config.depth_stride)
            floor = hit & (z <= step_height)
            blocking = hit & (z > step_height) & (z < body_height)
            free.append(np.stack([x[floor], y[floor]], axis=1))
            obstacles.append(np.stack([x[blocking], y[blocking]], axis=1))
            free.append(_free_rays(np.stack([x, y], axis=1)[hit & (z < body_height)],
                                   panorama.yaws[v], panorama.config.hfov_deg, self.resolution))
        free_pts, obstacle_pts = np.concatenate(free), np.concatenate(obstacles)
        new = self.mark(to_world(pose, free_pts), FREE, keep_obstacles=True) if len(free_pts) else 0
        new += self.mark(to_world(pose, obstacle_pts), OBSTACLE) if len(obstacle_pts) else 0
        self.mark(np.asarray(pose[None, :2]), FREE)
        return new

    def _weights(self, clearance: float, unknown_cost: float, start: tuple[int, int]) -> np.ndarray:
        """A* costs: cells nearer than ``clearance`` to an obstacle are blocked, except that
        a robot already that near may move away (cells no nearer than where it stands)."""
        from scipy import ndimage

        self.clearance = ndimage.distance_transform_edt(self.grid != OBSTACLE) * self.resolution
        here = self.clearance[start]
        self.floor = min(clearance, here)
        weights = np.where(self.grid == UNKNOWN, unknown_cost, 1.0).astype(np.float32)
        weights[self.clearance < self.floor - 1e-6] = np.inf
        if here < clearance:  # beyond the escape zone the full clearance holds
            yy, xx = np.ogrid[:self.size, :self.size]
            far = (yy - start[0]) ** 2 + (xx - start[1]) ** 2 > ((clearance + self.resolution) / self.resolution) ** 2
            weights[far & (self.clearance < clearance)] = np.inf
        weights[start] = 1.0
        return weights

    def plan(self, start: np.ndarray, goal: np.ndarray, clearance: float, *,
             unknown_cost: float = UNKNOWN_COST) -> list[np.ndarray] | None:
        """An A* path (odometry-frame points, start excluded) keeping ``clearance`` from
        obstacles, to the reachable cell nearest ``goal``, or None when there is none.
        ``unknown_cost`` is the price of crossing an unseen cell (``inf``: never)."""
        import pyastar2d

        (sr,), (sc,), inside = self.cells(np.asarray(start)[None, :2])
        if not inside[0]:
            return None
        weights = self.weights = self._weights(clearance, unknown_cost, (int(sr), int(sc)))
        target = self._nearest_open(weights, np.asarray(goal[:2]))
        if target is None:
            return None
        path = pyastar2d.astar_path(weights, (int(sr), int(sc)), target, allow_diagonal=True)
        if path is None:
            return None
        return [self.point(int(r), int(c)) for r, c in path[1:]]

    def straight(self, start: np.ndarray, path: list[np.ndarray], distance: float) -> np.ndarray:
        """The farthest point of ``path`` within ``distance`` (path length) that the body can
        reach in a straight line from ``start`` on the last plan's costs, never nearer an
        obstacle than the plan allows (the first path point when none is farther)."""
        best, travelled, previous = path[0], 0.0, np.asarray(start[:2])
        for point in path:
            travelled += float(np.linalg.norm(point - previous))
            previous = point
            if travelled > distance:
                break
            if self._segment_clear(start[:2], point):
                best = point
        return best

    def _segment_clear(self, a: np.ndarray, b: np.ndarray) -> bool:
        count = max(2, int(np.linalg.norm(b - a) / (self.resolution / 2.0)) + 1)
        rows, cols, inside = self.cells(np.linspace(a, b, count)[1:])
        if not inside.all():
            return False
        cost = self.weights[rows, cols]
        return bool(np.isfinite(cost).all() and (cost <= self.weights[rows[-1], cols[-1]]).all()
                    and (self.clearance[rows, cols] >= self.floor - 1e-6).all())

    def _nearest_open(self, weights: np.ndarray, goal: np.ndarray, search: float = 2.5) -> tuple[int, int] | None:
        rows, cols, inside = self.cells(goal[None])
        r0, c0 = (int(np.clip(rows[0], 0, self.size - 1)), int(np.clip(cols[0], 0, self.size - 1)))
        reach = int(search / self.resolution)
        r_lo, r_hi = max(0, r0 - reach), min(self.size, r0 + reach + 1)
        c_lo, c_hi = max(0, c0 - reach), min(self.size, c0 + reach + 1)
        window = weights[r_lo:r_hi, c_lo:c_hi]
        rr, cc = np.nonzero(np.isfinite(window) & (window <= 1.0))
        if len(rr) == 0:
            return None
        best = int(np.argmin((rr + r_lo - r0) ** 2 + (cc + c_lo - c0) ** 2))
        return int(rr[best] + r_lo), int(cc[best] + c_lo)

    def frontiers(self, min_cells: int = 4) -> list[tuple[np.ndarray, int]]:
        """Geometric frontiers: clusters of free cells beside unknown ones, as
        ``(point, cells)``, largest first."""
        from scipy import ndimage

        unknown = self.grid == UNKNOWN
        near_unknown = ndimage.binary_dilation(unknown, structure=np.array([[0, 1, 0], [1, 1, 1], [0, 1, 0]]))
        edge = (self.grid == FREE) & near_unknown
        labels, count = ndimage.label(edge, structure=np.ones((3, 3)))
        found = []
        for index in range(1, count + 1):
            rr, cc = np.nonzero(labels == index)
            if len(rr) < min_cells:
                continue
            centre = np.array([rr.mean(), cc.mean()])
            pick = int(np.argmin((rr - centre[0]) ** 2 + (cc - centre[1]) ** 2))
            found.append((self.point(int(rr[pick]), int(cc[pick])), len(rr)))
        return sorted(found, key=lambda item: -item[1])

    def free_points(self) -> np.ndarray:
        """Centres of every free cell, ``(N, 2)``."""
        rr, cc = np.nonzero(self.grid == FREE)
        return self.origin + (np.stack([cc, rr], axis=1) + 0.5) * self.resolution

    def crop(self, centre: np.ndarray, radius: float) -> tuple[np.ndarray, np.ndarray]:
        """``(grid window, its odometry-frame origin)`` around ``centre``."""
        rows, cols, _ = self.cells(np.asarray(centre)[None, :2])
        reach = int(radius / self.resolution)
        r_lo, c_lo = max(0, int(rows[0]) - reach), max(0, int(cols[0]) - reach)
        r_hi, c_hi = min(self.size, int(rows[0]) + reach + 1), min(self.size, int(cols[0]) + reach + 1)
        return self.grid[r_lo:r_hi, c_lo:c_hi], self.origin + np.array([c_lo, r_lo]) * self.resolution


def _free_rays(hits: np.ndarray, yaw: float, hfov_deg: float, resolution: float) -> np.ndarray:
    """Points along each angular bin of a view up to its nearest hit (agent frame)."""
    if len(hits) == 0:
        return np.zeros((0, 2))
    angle = np.arctan2(hits[:, 1], hits[:, 0])
    dist = np.hypot(hits[:, 0], hits[:, 1])
    bins = np.round(angle / math.radians(RAY_BIN_DEG)).astype(int)
    reach: dict[int, float] = {}
    for b, d in zip(bins.tolist(), dist.tolist(), strict=True):
        reach[b] = min(reach.get(b, math.inf), d)
    out = []
    for b, d in reach.items():
        steps = np.arange(0.0, max(d - resolution, 0.0), resolution / 2.0)
        a = b * math.radians(RAY_BIN_DEG)
        out.append(np.stack([steps * math.cos(a), steps * math.sin(a)], axis=1))
    return np.concatenate(out) if out else np.zeros((0, 2))


@dataclass
class ObjectNode:
    """An observed object instance."""

    name: str
    category: str
    position: np.ndarray
    weight: float
    image_ids: list[int] = field(default_factory=list)

    def describe(self) -> str:
        return f"{self.name} at ({self.position[0]:.1f}, {self.position[1]:.1f})"


@dataclass
class RoomNode:
    """A cluster of places the robot stood that share a room label."""

    name: str
    label: str
    places: list[np.ndarray] = field(default_factory=list)
    image_ids: list[int] = field(default_factory=list)

    @property
    def centre(self) -> np.ndarray:
        return np.mean(self.places, axis=0)


@dataclass
class ImageRecord:
    """One stored view (the sensor graph)."""

    image_id: int
    step: int
    position: np.ndarray
    yaw: float
    rgb: np.ndarray | None
    objects: tuple[str, ...]
    description: str


@dataclass
class SceneMemoryGraph:
    """The agent's object, room and sensor graphs plus its occupancy grid."""

    grid: OccupancyGrid
    objects: dict[str, ObjectNode] = field(default_factory=dict)
    rooms: list[RoomNode] = field(default_factory=list)
    images: list[ImageRecord] = field(default_factory=list)
    _instances: dict[int, str] = field(default_factory=dict)
    _per_category: dict[str, int] = field(default_factory=dict)

    def _node(self, key: int | None, category: str, position: np.ndarray, weight: float) -> ObjectNode:
        name = self._instances.get(key) if key is not None else None
        if name is None and key is None:  # model labels: merge with a near node of the same category
            name = next((n.name for n in self.objects.values()
                         if n.category == category and np.linalg.norm(n.position - position) < 1.0), None)
        if name is None:
            self._per_category[category] = self._per_category.get(category, 0) + 1
            name = f"{category.replace(' ', '_')}_{self._per_category[category]}"
            self.objects[name] = ObjectNode(name, category, position, weight)
            if key is not None:
                self._instances[key] = name
            return self.objects[name]
        node = self.objects[name]
        total = node.weight + weight
        node.position = (node.position * node.weight + position * weight) / total
        node.weight = total
        return node

    def add_semantic(self, pose: np.ndarray, panorama: Panorama, categories: Sequence[str], view: int) -> list[str]:
        """``gt`` perception: the instances the semantic sensor sees in one view; returns
        their node names."""
        stride = panorama.config.depth_stride
        ids = np.asarray(panorama.semantic[view])[stride // 2::stride, stride // 2::stride].ravel()
        x, y, _z, hit = panorama.rays(view, stride)
        counts = np.bincount(ids, minlength=len(categories))
        names = []
        for instance in np.flatnonzero(counts >= max(1, MIN_PIXEL_FRACTION * ids.size)):
            category = categories[instance] if instance < len(categories) else "unknown"
            mask = (ids == instance) & hit
            if category in NOT_LANDMARKS or category == "unknown" or not mask.any():
                continue
            centre = to_world(pose, np.stack([x[mask], y[mask]], axis=1)).mean(axis=0)
            names.append(self._node(int(instance), category, centre, float(mask.sum())).name)
        return names

    def add_labelled(self, pose: np.ndarray, panorama: Panorama, view: int, label: str, column: float) -> str | None:
        """``vlm`` perception: an object the model named in view ``view`` at horizontal
        image position ``column`` (0 left .. 1 right), placed by the depth there."""
        depth = np.asarray(panorama.depth[view])
        width = depth.shape[1]
        col = int(np.clip(round(column * (width - 1)), 0, width - 1))
        band = depth[depth.shape[0] // 3:, max(0, col - 2):col + 3]
        valid = band[band < panorama.config.max_depth * 0.999]
        if valid.size == 0:
            return None
        distance = float(np.median(valid))
        focal = (width / 2.0) / math.tan(math.radians(panorama.config.hfov_deg) / 2.0)
        bearing = float(panorama.yaws[view]) + math.atan2(width / 2.0 - (col + 0.5), focal)
        local = np.array([[distance * math.cos(bearing), distance * math.sin(bearing)]])
        return self._node(None, label.strip().lower(), to_world(pose, local)[0], 1.0).name

    def add_place(self, position: np.ndarray, label: str) -> RoomNode:
        """Record that the robot stood at ``position`` in a room labelled ``label``."""
        label = (label or "unknown").strip().lower().replace(" ", "_")
        for room in self.rooms:
            if room.label == label and np.linalg.norm(room.centre - position) < ROOM_RADIUS:
                room.places.append(np.asarray(position[:2], dtype=np.float64))
                return room
        index = sum(r.label == label for r in self.rooms) + 1
        room = RoomNode(f"{label}_{index}", label, [np.asarray(position[:2], dtype=np.float64)])
        self.rooms.append(room)
        return room

    def add_image(self, step: int, pose: np.ndarray, yaw: float, rgb: np.ndarray | None,
                  objects: Sequence[str], room: RoomNode | None) -> ImageRecord:
        names = tuple(dict.fromkeys(objects))
        where = f"from ({pose[0]:.1f}, {pose[1]:.1f}) looking {math.degrees(yaw) % 360:.0f} deg"
        seen = ", ".join(f"{n} {np.linalg.norm(self.objects[n].position - pose[:2]):.1f} m" for n in names)
        record = ImageRecord(len(self.images), step, np.asarray(pose[:2], dtype=np.float64), yaw, rgb, names,
                             f"image {len(self.images)} {where}" + (f"; shows {seen}" if seen else "; no objects"))
        self.images.append(record)
        for name in names:
            self.objects[name].image_ids.append(record.image_id)
        if room is not None:
            room.image_ids.append(record.image_id)
        return record

    def nearby(self, point: np.ndarray, radius: float) -> list[ObjectNode]:
        """Objects within ``radius`` of ``point``, nearest first."""
        found = [(float(np.linalg.norm(n.position - point[:2])), n) for n in self.objects.values()]
        return [n for d, n in sorted(found, key=lambda item: item[0]) if d <= radius]

    def matching(self, query: str) -> list[ObjectNode]:
        """Objects whose name or category matches ``query`` (an id like ``sofa_1`` or a category)."""
        q = query.strip().lower().replace(" ", "_")
        if q in self.objects:
            return [self.objects[q]]
        return [n for n in self.objects.values()
                if n.category.replace(" ", "_") == q or q in n.category.replace(" ", "_")]

    def room(self, name: str) -> RoomNode | None:
        q = name.strip().lower().replace(" ", "_")
        return next((r for r in self.rooms if r.name == q), None) or next((r for r in self.rooms if r.label == q), None)

    def room_of(self, point: np.ndarray) -> RoomNode | None:
        """The room node with a place nearest ``point``."""
        best = min(((min(np.linalg.norm(p - point[:2]) for p in r.places), r) for r in self.rooms),
                   key=lambda item: item[0], default=None)
        return best[1] if best is not None else None

    def statistics(self) -> str:
        """The scene-graph statistics the next-step prompt shows."""
        cats: dict[str, int] = {}
        for node in self.objects.values():
            cats[node.category] = cats.get(node.category, 0) + 1
        free = int(np.count_nonzero(self.grid.grid == FREE))
        return (f"{len(self.objects)} objects ({', '.join(f'{k} x{v}' for k, v in sorted(cats.items())) or 'none'}); "
                f"{len(self.rooms)} rooms ({', '.join(r.name for r in self.rooms) or 'none'}); "
                f"{len(self.images)} images; {free * self.grid.resolution ** 2:.0f} m2 mapped free")


def bearing_text(origin: np.ndarray, yaw: float, point: np.ndarray) -> str:
    """``2.3 m forward-left`` of ``point`` seen from ``origin`` facing ``yaw``."""
    dx, dy = float(point[0] - origin[0]), float(point[1] - origin[1])
    return f"{math.hypot(dx, dy):.1f} m {direction_phrase(math.atan2(dy, dx) - yaw)}"
