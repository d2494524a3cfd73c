"""ObjectNav: find any instance of an object category (Batra et al., 2020; DSCD-Nav's task).

An episode names a category present in the scene (``instruction.text`` = "Find a bed.").
Its goals are the category's instances, one goal per instance at the instance's
*viewpoint*: the navigable cell (main component, within 1 m of the object's footprint,
:meth:`~vlnverse.tasks.context.SceneContext.viewpoints`, in the object's room when it has
such cells) nearest the object's centre.

Success (judged by :mod:`vlnverse.eval.running.runner`): STOP within ``success_distance``
(1.0 m, stored as the goals' radius) geodesic of the viewpoint of any instance, **with
that instance visible**: one of the rays from the agent's eye to points of the instance's
box hits the instance first (:func:`instance_visible`). SPL's ``L`` is the geodesic
distance from the start to the closest viewpoint; starts are sampled beyond
``min_start_distance`` (> ``success_distance``) of every viewpoint.

HM3D's convention (habitat-lab ``ObjectNav``: ``success_distance`` 0.1 m to the nearest
of many viewpoints sampled within 1 m of the object) is the limit of this one with one
viewpoint per instance: here the agent must stop within 1.0 m of the instance's nearest
viewpoint, i.e. at most about 2 m from the object's footprint, and see it. Set
``success_distance`` at generation to tighten it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vlnverse.errors import ConfigError
from vlnverse.tasks.context import SceneContext
from vlnverse.tasks.corpus import stable_hash
from vlnverse.tasks.episode import Episode, Goal, Instruction

OBJECTNAV = "objectnav"
VISIBILITY_RAYS = 9  # the centre and the 8 corners of the box shrunk by half


@dataclass(frozen=True)
class ObjectNavConfig:
    """ObjectNav generation settings.

    Attributes:
        success_distance: Success radius around an instance's viewpoint (m), stored as the goals' radius.
        min_start_distance: Starts are at least this geodesic distance from every viewpoint (m).
        max_start_distance: ... and at most this far from the nearest one (m).
        categories: Categories to use; empty: every landmark-sized category of the scene.
    """

    success_distance: float = 1.0
    min_start_distance: float = 3.0
    max_start_distance: float = 30.0
    categories: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        values = (self.success_distance, self.min_start_distance, self.max_start_distance)
        if not all(isinstance(v, int | float) and math.isfinite(v) and v > 0 for v in values):
            raise ConfigError("objectnav: distances must be positive numbers")
        if not self.success_distance < self.min_start_distance <= self.max_start_distance:
            raise ConfigError("objectnav: need success_distance < min_start_distance <= max_start_distance")
        object.__setattr__(self, "categories", tuple(self.categories))


def instance_goal(context: SceneContext, object_id: str, radius: float) -> Goal | None:
    """The goal at an object's viewpoint (None when it has none)."""
    info = context.objects[object_id]
    points = context.viewpoints(object_id)
    rooms = context.rooms_along(points) if len(points) else np.zeros(0, dtype=np.int64)
    same_room = rooms == (context.room_ids.index(info.room_id) if info.room_id in context.room_ids
                          else -1 if info.room_id is None else -2)
    points = points[same_room] if same_room.any() else points  # not through a wall
    if not len(points):
        return None
    best = points[int(np.argmin(np.hypot(*(points[:, :2] - info.center[:2]).T)))]
    return Goal(position=tuple(best), radius=radius, object_id=object_id, room_id=info.room_id,
                category=info.category)


def category_goals(context: SceneContext, config: ObjectNavConfig) -> dict[str, list[Goal]]:
    """Per usable category, one goal per instance that has a viewpoint."""
    out: dict[str, list[Goal]] = {}
    for oid, info in sorted(context.objects.items()):
        if (info.category not in config.categories) if config.categories else not info.landmark:
            continue
        goal = instance_goal(context, oid, config.success_distance)
        if goal is not None:
            out.setdefault(info.category, []).append(goal)
    return out


def objectnav_episodes(context: SceneContext, config: ObjectNavConfig, count: int, seed: int,
                       assign_splits: Callable[[int], list[str]], writer: Any) -> list[Episode]:
    """Up to ``count`` ObjectNav episodes of one scene (categories drawn uniformly).

    ``assign_splits(n)`` gives the episodes' splits; ``writer`` builds them
    (:class:`vlnverse.tasks.generate._EpisodeWriter`)."""
    rng = np.random.default_rng([seed, stable_hash(context.scene_id), stable_hash(OBJECTNAV)])
    goals = category_goals(context, config)
    cells = context.occupancy.cell_to_world(context.main_cells)
    fields = {c: context.navigator.distance_field(np.array([g.position for g in gs])) for c, gs in goals.items()}
    sampled = []
    for _ in range(count if goals else 0):
        category = sorted(goals)[int(rng.integers(len(goals)))]
        distance = np.asarray(fields[category].distance_at(cells), dtype=np.float64)
        ok = np.flatnonzero(np.isfinite(distance) & (distance >= config.min_start_distance)
                            & (distance <= config.max_start_distance))
        if not len(ok):
            continue
        start = cells[int(rng.choice(ok))]
        nearest = min(goals[category], key=lambda g: context.navigator.geodesic_distance(start, g.position))
        path = context.navigator.shortest_path(start, nearest.position)
        sampled.append((category, start, float(rng.uniform(-math.pi, math.pi)), path))
    out = []
    for k, ((category, start, yaw, path), split) in enumerate(zip(sampled, assign_splits(len(sampled)), strict=True)):
        article = "an" if category[:1] in "aeiou" else "a"
        instruction = Instruction(f"Find {article} {category.replace('_', ' ')}.")
        out.append(writer._episode(f"{context.scene_id}-o{k:04d}", OBJECTNAV, split, start, yaw, goals[category],
                                   path.points, path.length, instruction, writer._provenance(None)))
    return out


# -- judging (eval) --------------------------------------------------------------------------

def instance_visible(sim: Any, object_id: str, position: Sequence[float], eye_height: float) -> bool:
    """Whether a ray from the eye at ``position`` reaches the object before anything else
    (rays to the centre and the corners of its box shrunk by half)."""
    index = next((i for i, o in enumerate(sim.scene.objects) if o.object_id == object_id), None)
    if index is None:
        return False
    obj = sim.scene.objects[index]
    lo, hi = np.asarray(obj.aabb_min, float), np.asarray(obj.aabb_max, float)
    centre, half = 0.5 * (lo + hi), 0.25 * (hi - lo)
    signs = np.array([[0, 0, 0]] + [[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    ends = centre + signs * half
    eye = np.array([float(position[0]), float(position[1]), eye_height])
    _, prims = sim.backend.cast_rays(np.repeat(eye[None], VISIBILITY_RAYS, axis=0), ends)
    return bool(np.any(sim.instances.ids_of_prims(prims) == index + 1))


def stops_with_target_in_view(env: Any, episode: Episode, positions: np.ndarray,
                              stops: Sequence[int]) -> tuple[bool, ...]:
    """Per STOP: whether an instance whose viewpoint lies within the success radius
    (geodesic) is visible from the stop position."""
    eye = env.occupancy.floor_height + env.agent_spec.camera_height
    out = []
    for index in stops:
        point = positions[index]
        distances = env.goal_distances(point[None, :2])[:, 0]
        near = [g for g, d in zip(episode.goals, distances, strict=True) if d < g.radius]
        out.append(any(instance_visible(env.sim, g.object_id, point, eye) for g in near))
    return tuple(out)
