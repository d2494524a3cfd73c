"""2D occupancy and navigable maps of a scene for a cylinder agent (paper §3.2, §3.3.2).

A cell is *free* when there is floor under it (an upward surface within ``step_height`` of
the floor level), no colliding geometry intersects the slab
``[floor + step_height, floor + agent_height]`` over it, and it is reachable floor: it is
not in a pocket smaller than the agent's footprint, nor in a region enclosed by collision
geometry on every side (the inside of a wall, a hollow pillar, a fridge, a sealed box or a
room without an opening), whatever its size. The largest free region is always kept (a
house is enclosed by its outer walls); any other region survives only where its border
opens onto space that has neither floor nor geometry (an open edge). The *navigable* map
is the free map eroded by the agent radius (exact Euclidean distance transform), so any
navigable point is a collision-free centre for the agent's cylinder.

The lowest floor level is where colliding upward surfaces of at least
``MIN_FLOOR_AREA_M2`` lie lowest. A scene without a floor (only furniture) would make a
table top that level; :func:`floor_levels` warns, naming the level it chose, when
colliding geometry reaches more than ``FLOATING_FLOOR_M`` below it.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from scipy import ndimage

from vlnverse.errors import ConfigError, NavigationError, SceneError
from vlnverse.scene.rasterize import rasterize
from vlnverse.scene.types import Room, Scene

log = logging.getLogger(__name__)

MIN_FLOOR_AREA_M2 = 1.0  # an upward surface level must cover this much to count as a floor
MAX_CELLS = 20_000_000  # cap on grid cells (peak memory measured ~860 B/cell: a 100 m room at 0.05 m)
LARGE_GRID_CELLS = 2_000_000  # grids this large take tens of seconds: say so before building one
DOOR_GAP_M = 0.5  # free cells this close to a room, but outside every room floor, join it
UPWARD_COS = 0.9
FLOATING_FLOOR_M = 0.5  # geometry this far below the lowest level: that level is no floor


@dataclass(frozen=True)
class OccupancyConfig:
    """How to build an occupancy map.

    Attributes:
        agent_radius: Cylinder radius in metres (paper A.2.4: 0.30).
        agent_height: Cylinder height in metres (paper A.2.4: 1.50).
        resolution: Cell size in metres.
        step_height: Surfaces within this height of the floor level count as floor, and
            geometry below ``floor + step_height`` does not block.
        max_cells: Refuse grids larger than this (memory cap).
    """

    agent_radius: float = 0.30
    agent_height: float = 1.50
    resolution: float = 0.05
    step_height: float = 0.10
    max_cells: int = MAX_CELLS

    def __post_init__(self) -> None:
        for name in ("agent_radius", "agent_height", "resolution"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value > 0):
                raise ConfigError(f"{name} must be a positive number, got {value!r}")
        if not (0 <= self.step_height < self.agent_height):
            raise ConfigError(f"step_height must be in [0, agent_height), got {self.step_height!r}")
        if self.max_cells <= 0:
            raise ConfigError(f"max_cells must be positive, got {self.max_cells!r}")


@dataclass
class OccupancyMap:
    """Free / navigable grids of one floor level. Row = y, column = x.

    Cell ``(r, c)`` covers ``x ∈ [x0 + c·res, x0 + (c+1)·res)`` and ``y ∈ [y0 + r·res, …)``.
    """

    free: np.ndarray
    navigable: np.ndarray
    clearance: np.ndarray  # metres from the cell centre to the nearest non-free cell
    components: np.ndarray
    room_map: np.ndarray
    rooms: list[Room]
    resolution: float
    origin: np.ndarray
    floor_height: float
    agent_radius: float
    agent_height: float
    scene_path: str = ""
    _nearest_cache: dict = field(default_factory=dict, repr=False)

    @property
    def shape(self) -> tuple[int, int]:
        return self.free.shape

    def world_to_cell(self, xy) -> np.ndarray:
        """(…,2) world xy → (…,2) integer (row, col) (may lie outside the grid)."""
        return np.stack(self._rows_cols(xy), axis=-1)

    def _rows_cols(self, xy) -> tuple[np.ndarray, np.ndarray]:
        """Integer rows and columns of world points (…,2|3), possibly outside the grid."""
        xy = np.asarray(xy, dtype=np.float64)
        cols = np.floor((xy[..., 0] - self.origin[0]) / self.resolution).astype(np.int64)
        rows = np.floor((xy[..., 1] - self.origin[1]) / self.resolution).astype(np.int64)
        return rows, cols

    def cell_to_world(self, rc) -> np.ndarray:
        """(…,2) (row, col) → (…,3) world point at the cell centre, on the floor."""
        rc = np.asarray(rc, dtype=np.float64)
        x = self.origin[0] + (rc[..., 1] + 0.5) * self.resolution
        y = self.origin[1] + (rc[..., 0] + 0.5) * self.resolution
        return np.stack([x, y, np.full_like(x, self.floor_height)], axis=-1)

    def in_grid(self, rc) -> np.ndarray:
        rc = np.asarray(rc)
        return (rc[..., 0] >= 0) & (rc[..., 0] < self.shape[0]) & (rc[..., 1] >= 0) & (rc[..., 1] < self.shape[1])

    def cell_indices(self, points) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rows and columns of world ``points`` (…,2|3) clamped into the grid, and whether
        each point lies inside it (the per-step lookups of the env and the oracle)."""
        rows, cols = self._rows_cols(points)
        height, width = self.shape
        inside = (rows >= 0) & (rows < height) & (cols >= 0) & (cols < width)
        # np.minimum/maximum: np.clip costs several times more on the few points of a step.
        return np.minimum(np.maximum(rows, 0), height - 1), np.minimum(np.maximum(cols, 0), width - 1), inside

    def cell_of(self, x: float, y: float) -> tuple[int, int, bool] | None:
        """:meth:`cell_indices` of one point ``(x, y)``: the same arithmetic on plain floats,
        without numpy's per-call cost (the per-step lookups of one pose); None when the
        point is not finite."""
        if not (math.isfinite(x) and math.isfinite(y)):
            return None
        ox, oy = self._origin_xy
        row, col = math.floor((y - oy) / self.resolution), math.floor((x - ox) / self.resolution)
        height, width = self.free.shape
        inside = 0 <= row < height and 0 <= col < width
        return min(max(row, 0), height - 1), min(max(col, 0), width - 1), inside

    @cached_property
    def _origin_xy(self) -> tuple[float, float]:
        return float(self.origin[0]), float(self.origin[1])

    def lookup(self, grid: np.ndarray, points, fill) -> np.ndarray:
        """Values of a per-cell ``grid`` at world ``points`` (…,2|3); ``fill`` outside the grid."""
        if isinstance(points, np.ndarray) and points.shape in ((2,), (3,)) and points.dtype == np.float64 \
                and grid.ndim == 2:
            cell = self.cell_of(float(points[0]), float(points[1]))
            if cell is not None:
                row, col, inside = cell
                return grid[row, col] if inside else grid.dtype.type(fill)
        rows, cols, inside = self.cell_indices(points)
        return np.where(inside, grid[rows, cols], fill)

    def is_navigable(self, point) -> bool | np.ndarray:
        """Whether the agent's centre may stand at ``point`` (xy or xyz; vectorized)."""
        result = self.lookup(self.navigable, point, False)
        return bool(result) if result.ndim == 0 else result

    def is_free(self, point) -> bool | np.ndarray:
        result = self.lookup(self.free, point, False)
        return bool(result) if result.ndim == 0 else result

    def component_of(self, point) -> int:
        """Navigable component id at ``point`` (-1 if not navigable)."""
        return int(self.lookup(self.components, point, -1))

    def room_at(self, point) -> int:
        """Room index at ``point`` (-1 outside every room)."""
        return int(self.lookup(self.room_map, point, -1))

    @cached_property
    def component_areas(self) -> np.ndarray:
        """Area in m² of each navigable component (indexed by component id)."""
        count = int(self.components.max()) + 1 if self.components.size else 0
        sizes = np.bincount(self.components[self.components >= 0].ravel(), minlength=count)
        return sizes * self.resolution**2

    @property
    def largest_component(self) -> int:
        return int(np.argmax(self.component_areas)) if self.component_areas.size else -1

    def _nearest_index(self, component: int | None) -> tuple[np.ndarray, np.ndarray]:
        key = -2 if component is None else component
        if key not in self._nearest_cache:
            target = self.navigable if component is None else self.components == component
            if not target.any():
                raise NavigationError(f"{self.scene_path}: no navigable cell"
                                      + ("" if component is None else f" in component {component}"))
            _, idx = ndimage.distance_transform_edt(~target, return_indices=True)
            self._nearest_cache[key] = (idx[0], idx[1])
        return self._nearest_cache[key]

    def nearest_navigable(self, point, component: int | None = None) -> np.ndarray:
        """The navigable cell centre nearest to ``point`` (optionally within ``component``)."""
        point = np.asarray(point, dtype=np.float64)
        if not np.all(np.isfinite(point)):
            raise NavigationError(f"non-finite point {point.tolist()}")
        rows, cols = self._nearest_index(component)
        rc = np.clip(self.world_to_cell(point), 0, np.array(self.shape) - 1)
        if (component is None and self.navigable[rc[0], rc[1]]) or (
                component is not None and self.components[rc[0], rc[1]] == component):
            return np.array([point[0], point[1], self.floor_height])
        return self.cell_to_world((rows[rc[0], rc[1]], cols[rc[0], rc[1]]))

    def sample_navigable(self, rng: np.random.Generator, n: int = 1, component: int | None = None) -> np.ndarray:
        """``n`` uniformly random navigable points (xyz), optionally within one component."""
        mask = self.navigable if component is None else self.components == component
        cells = np.argwhere(mask)
        if len(cells) == 0:
            raise NavigationError(f"{self.scene_path}: no navigable cell to sample")
        picks = cells[rng.integers(0, len(cells), size=n)]
        return self.cell_to_world(picks)

    @property
    def navigable_area_m2(self) -> float:
        return float(self.navigable.sum() * self.resolution**2)

    @property
    def free_area_m2(self) -> float:
        return float(self.free.sum() * self.resolution**2)


def floor_levels(scene: Scene, config: OccupancyConfig = OccupancyConfig()) -> list[float]:
    """Heights of the walkable floor levels, lowest first.

    A level is a height where colliding upward-facing surfaces cover at least
    ``MIN_FLOOR_AREA_M2`` and that lies at least one agent height above the level below
    (so table tops and beds are not floors).
    """
    tris = scene.triangles[scene.collision_mask]
    if len(tris) == 0:
        raise SceneError(f"{scene.path}: no colliding geometry, so no floor")
    normals = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
    area2 = np.linalg.norm(normals, axis=1)
    upward = normals[:, 2] > UPWARD_COS * np.maximum(area2, 1e-12)
    if not upward.any():
        raise SceneError(f"{scene.path}: no upward-facing surface to stand on")
    heights = tris[upward][:, :, 2].mean(axis=1)
    areas = area2[upward] / 2.0
    order = np.argsort(heights)
    heights, areas = heights[order], areas[order]
    clusters: list[list[float]] = []  # [start height, height·area sum, area]
    for h, a in zip(heights, areas, strict=False):
        if clusters and h - clusters[-1][0] <= config.step_height / 2:
            clusters[-1][1] += h * a
            clusters[-1][2] += a
        else:
            clusters.append([h, h * a, a])
    levels: list[float] = []
    for _, weighted, area in clusters:
        if area < MIN_FLOOR_AREA_M2:
            continue
        height = weighted / area
        if not levels or height - levels[-1] >= config.agent_height:
            levels.append(float(height))
    if not levels:
        raise SceneError(f"{scene.path}: no floor surface of at least {MIN_FLOOR_AREA_M2} m²")
    depth = levels[0] - float(tris[:, :, 2].min())
    if depth > FLOATING_FLOOR_M:
        log.warning("%s: colliding geometry reaches %.2f m below the lowest walkable level (z = %.2f m): "
                    "the scene seems to have no floor, so a raised surface (a table top?) is used as the "
                    "floor", scene.path, depth, levels[0])
    return levels


def build_occupancy(scene: Scene, agent_radius: float = 0.30, agent_height: float = 1.50,
                    resolution: float = 0.05, step_height: float = 0.10, level: int | None = None,
                    z: float | None = None, max_cells: int = MAX_CELLS) -> OccupancyMap:
    """Occupancy + navigable maps of one floor level, chosen by index or by height ``z``."""
    config = OccupancyConfig(agent_radius, agent_height, resolution, step_height, max_cells)
    levels = floor_levels(scene, config)
    floor = _choose_level(levels, level, z, scene)
    tris = scene.triangles
    colliding = tris[scene.collision_mask]
    floor_mask_tris = _floor_triangles(colliding, floor, step_height)
    if len(floor_mask_tris) == 0:
        raise SceneError(f"{scene.path}: no floor at height {floor:.2f} m")
    lo = floor_mask_tris.reshape(-1, 3)[:, :2].min(axis=0)
    hi = floor_mask_tris.reshape(-1, 3)[:, :2].max(axis=0)
    origin = np.floor(lo / resolution) * resolution - resolution
    shape = (int(np.ceil((hi[1] - origin[1]) / resolution)) + 1, int(np.ceil((hi[0] - origin[0]) / resolution)) + 1)
    if shape[0] * shape[1] > max_cells:
        raise SceneError(
            f"{scene.path}: a {shape[1]}x{shape[0]} grid at {resolution} m exceeds the memory cap of "
            f"{max_cells} cells ({(hi - lo).round(1).tolist()} m floor extent); use a coarser resolution, "
            f"e.g. {resolution * np.sqrt(shape[0] * shape[1] / max_cells) * 1.1:.2f} m"
        )
    if shape[0] * shape[1] >= LARGE_GRID_CELLS:
        log.warning("%s: building a %dx%d occupancy grid (%.1f M cells at %g m); this takes a while and "
                    "much memory on a large scene (a coarser resolution is faster)",
                    scene.path, shape[1], shape[0], shape[0] * shape[1] / 1e6, resolution)
    has_floor = np.zeros(shape, dtype=bool)
    rasterize(floor_mask_tris, has_floor, origin, resolution)
    blocked = np.zeros(shape, dtype=bool)
    slab = (floor + step_height, floor + agent_height)
    zmin, zmax = colliding[:, :, 2].min(axis=1), colliding[:, :, 2].max(axis=1)
    in_slab = colliding[(zmax >= slab[0]) & (zmin <= slab[1])]
    rasterize(in_slab, blocked, origin, resolution, z_range=slab, into_solid=True)
    free = _drop_enclosed(_drop_pockets(has_floor & ~blocked, np.pi * agent_radius**2 / resolution**2),
                          open_edge=~has_floor & ~blocked)
    clearance = _clearance(free, resolution)
    navigable = free & (clearance >= agent_radius - 1e-9)
    components, _ = ndimage.label(navigable, structure=np.ones((3, 3), dtype=int))
    components = components.astype(np.int32) - 1
    room_map, rooms = _room_map(scene, free, origin, resolution)
    log.debug("occupancy %s: %s cells, floor %.2f m, %d rooms", scene.path, shape, floor, len(rooms))
    return OccupancyMap(
        free=free, navigable=navigable, clearance=clearance.astype(np.float32), components=components,
        room_map=room_map, rooms=rooms, resolution=float(resolution), origin=origin, floor_height=floor,
        agent_radius=float(agent_radius), agent_height=float(agent_height), scene_path=str(scene.path),
    )


def _clearance(free: np.ndarray, resolution: float) -> np.ndarray:
    """Metres from each cell centre to the nearest non-free cell's square (0 on non-free cells).

    The exact Euclidean distance transform finds the nearest non-free cell; measuring to its
    square rather than its centre lets the agent round convex corners as closely as it may.
    """
    if free.all():
        return np.full(free.shape, np.inf)
    _, (rows, cols) = ndimage.distance_transform_edt(free, return_indices=True)
    grid_r, grid_c = np.indices(free.shape)
    dr = np.maximum(np.abs(grid_r - rows) - 0.5, 0.0)
    dc = np.maximum(np.abs(grid_c - cols) - 0.5, 0.0)
    return np.where(free, np.hypot(dr, dc) * resolution, 0.0)


def _drop_pockets(free: np.ndarray, min_cells: float) -> np.ndarray:
    """Remove free pockets smaller than the agent's footprint (e.g. cells inside a wall's faces)."""
    labels, count = ndimage.label(free)
    if count == 0:
        return free
    sizes = np.bincount(labels.ravel())
    small = sizes < min_cells
    small[0] = False
    return free & ~small[labels]


def _drop_enclosed(free: np.ndarray, open_edge: np.ndarray) -> np.ndarray:
    """Keep the largest free region and the regions whose border touches an open edge
    (no floor and no geometry); drop the rest: regions walled in by collision geometry."""
    labels, count = ndimage.label(free)
    if count <= 1:
        return free
    sizes = np.bincount(labels.ravel())
    sizes[0] = 0
    keep = np.zeros(count + 1, dtype=bool)
    keep[int(np.argmax(sizes))] = True
    opening = np.pad(open_edge, 1, constant_values=True)  # beyond the grid is open too
    near_open = ndimage.binary_dilation(opening)[1:-1, 1:-1]
    keep[np.unique(labels[near_open & free])] = True
    keep[0] = False
    dropped = count - int(keep.sum())
    if dropped:
        log.debug("occupancy: dropped %d free region(s) enclosed by collision geometry", dropped)
    return free & keep[labels]


def _choose_level(levels: list[float], level: int | None, z: float | None, scene: Scene) -> float:
    if z is not None:
        below = [h for h in levels if h <= z + 1e-6]
        return below[-1] if below else levels[0]
    index = 0 if level is None else level
    if not 0 <= index < len(levels):
        raise SceneError(f"{scene.path}: floor level {index} does not exist (levels: {len(levels)})")
    return levels[index]


def _floor_triangles(tris: np.ndarray, floor: float, step_height: float) -> np.ndarray:
    normals = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
    upward = normals[:, 2] > UPWARD_COS * np.maximum(np.linalg.norm(normals, axis=1), 1e-12)
    top = tris[:, :, 2].mean(axis=1)
    return tris[upward & (np.abs(top - floor) <= step_height)]


def _room_map(scene: Scene, free: np.ndarray, origin: np.ndarray, resolution: float) -> tuple[np.ndarray, list[Room]]:
    """Room index per cell: annotated room floors, else rooms segmented from the free map."""
    room_map = np.full(free.shape, -1, dtype=np.int32)
    if not scene.rooms:
        from vlnverse.scene.rooms import segment_rooms

        room_map = segment_rooms(free, resolution)
        count = int(room_map.max()) + 1
        return room_map, [Room(room_id=f"room_{k}", room_type="unknown") for k in range(count)]
    for index, room in enumerate(scene.rooms):
        mask = np.zeros(free.shape, dtype=bool)
        rasterize(scene.triangles[room.floor_triangle_indices], mask, origin, resolution)
        room_map[mask & (room_map < 0)] = index
    # doorway floors belong to no room: give free cells near a room to the nearest one
    unassigned = free & (room_map < 0)
    if unassigned.any() and (room_map >= 0).any():
        dist, (rows, cols) = ndimage.distance_transform_edt(room_map < 0, return_indices=True)
        near = unassigned & (dist * resolution <= DOOR_GAP_M)
        room_map[near] = room_map[rows[near], cols[near]]
    return room_map, list(scene.rooms)


def require_on_map(occupancy: OccupancyMap, point, what: str = "point") -> None:
    """Refuse a point ``(x, y, …)`` outside the map's grid (off the scene altogether).

    Raises:
        NavigationError: the point is not finite or lies off the map (names the map's extent).
    """
    x, y = (float(v) for v in np.asarray(point, dtype=np.float64)[:2])
    if np.isfinite([x, y]).all() and occupancy.cell_indices((x, y))[2]:
        return
    (x0, y0), (rows, cols) = occupancy.origin[:2], occupancy.shape
    raise NavigationError(f"{what} ({x:g}, {y:g}) is off the map of {occupancy.scene_path or 'the scene'} "
                          f"(x {x0:.2f}..{x0 + cols * occupancy.resolution:.2f}, "
                          f"y {y0:.2f}..{y0 + rows * occupancy.resolution:.2f})")
