"""Embodied question answering (EQA): multiple-choice questions about a scene (ARNA §6, HM-EQA).

Questions come from the scene graph (:class:`~vlnverse.tasks.context.SceneContext`), one of
:data:`~vlnverse.tasks.episode.QUESTION_KINDS`:

- ``existence``: "Which of these is in the kitchen?" — one category present in the room
  type, three present elsewhere in the scene but not there;
- ``room``: "In which room is the bed?" — the object's room type, three other room types
  of the scene (generic household rooms only when the scene has fewer);
- ``color``: "What color is the sofa?" — its authored colour, three other colours seen
  in the scene (a household palette only when the scene has fewer), none of the answer's
  colour family (no "gray" against "silver", :data:`COLOR_FAMILIES`);
- ``state``: "Which of these is switched on?" — one object in that state, three objects
  of the scene that can take it but are in the opposite one;
- ``count``: "How many books are there in the bedroom?" — the count (0 included) among
  four consecutive numbers whose window is drawn at random around it;
- ``near``: "Which of these is near the bed?" — a category next to or near the anchor
  (the scene graph's relations: at most 1 m apart), three categories of the scene (of its
  room first) with no instance within :data:`FAR_GAP` of it, so the answer is clear.

Category options never share a head noun with the answer (no "sink" against "bathroom
sink"). Objects are only named when the name is unambiguous (the category is unique in the
scene, or in its room and that room's type is unique). Every question has exactly four
distinct options, one correct. The correct option's position is balanced per scene: each
block of four questions uses a seeded permutation of the positions, so no position can
win by guessing. Question kinds are drawn round-robin in a seeded order, so they stay
balanced as far as the scene offers each kind; within a kind, candidates are drawn
round-robin over their answers, so no answer value ("1", "living room", "white") dominates
where the scene offers others. Small counts still sit low in their window (a count of 1
has only 0 below it): the count kind's one known bias.

An episode's goals are the relevant objects' viewpoints (as ObjectNav's, radius
``success_distance``) or, for a count of zero, a point inside the room; its start lies
``min_start_distance``..``max_start_distance`` (geodesic) from the nearest one, and its
reference path leads there (a count visits every instance, nearest first; a count with an
instance that has no reachable viewpoint is not asked). The episode
ends with an answer action (:mod:`vlnverse.envs.eqa`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from vlnverse.errors import ConfigError
from vlnverse.scene.scene_graph import box_gap
from vlnverse.tasks.context import SceneContext, room_name
from vlnverse.tasks.corpus import stable_hash
from vlnverse.tasks.episode import (
    OPTION_COUNT,
    QUESTION_KINDS,
    Episode,
    Goal,
    Instruction,
    Question,
)
from vlnverse.tasks.objectnav import instance_goal

EQA = "eqa"
#: Household room types offered as distractors when a scene has too few of its own.
HOUSEHOLD_ROOMS = ("living room", "bedroom", "bathroom", "kitchen", "dining room", "hallway", "laundry", "study")
#: Colours offered as distractors when a scene has too few of its own.
PALETTE = ("white", "black", "gray", "red", "blue", "green", "brown", "yellow")
STATE_WORDS = {"on": "switched on", "off": "switched off", "open": "open", "closed": "closed"}
OPPOSITE_STATE = {"on": "off", "off": "on", "open": "closed", "closed": "open"}
#: Colours too alike to tell apart reliably: never a distractor of one another.
COLOR_FAMILIES = {"cream": "white", "mirror": "white", "silver": "gray", "glass": "gray", "dark brown": "brown",
                  "tan": "brown", "light wood": "brown", "beige": "brown", "navy": "blue", "teal": "blue",
                  "olive": "green"}
#: Near questions: distractor categories have no instance closer than this to the anchor (m).
FAR_GAP = 2.0


@dataclass(frozen=True)
class EQAConfig:
    """EQA generation settings.

    Attributes:
        success_distance: Radius of the goals around the relevant objects' viewpoints (m).
        min_start_distance: Starts are at least this geodesic distance from every goal (m).
        max_start_distance: ... and at most this far from the nearest one (m).
        kinds: Question kinds to generate (default: all of :data:`QUESTION_KINDS`).
    """

    success_distance: float = 1.0
    min_start_distance: float = 3.0
    max_start_distance: float = 30.0
    kinds: tuple[str, ...] = QUESTION_KINDS

    def __post_init__(self) -> None:
        values = (self.success_distance, self.min_start_distance, self.max_start_distance)
        if not all(isinstance(v, int | float) and math.isfinite(v) and v > 0 for v in values):
            raise ConfigError("eqa: distances must be positive numbers")
        if not self.success_distance < self.min_start_distance <= self.max_start_distance:
            raise ConfigError("eqa: need success_distance < min_start_distance <= max_start_distance")
        kinds = tuple(self.kinds)
        unknown = [k for k in kinds if k not in QUESTION_KINDS]
        if unknown or not kinds:
            raise ConfigError(f"eqa: unknown question kind(s) {', '.join(unknown) or '(none given)'}; "
                              f"valid: {', '.join(QUESTION_KINDS)}")
        object.__setattr__(self, "kinds", kinds)


@dataclass(frozen=True)
class Draft:
    """A question before its options are ordered: the correct option and three distractors."""

    kind: str
    text: str
    answer: str
    distractors: tuple[str, ...]
    object_ids: tuple[str, ...]
    room_ids: tuple[str, ...]

    def question(self, position: int, rng: np.random.Generator) -> Question:
        """The question with the answer at ``position`` and the distractors shuffled around it."""
        options = [self.distractors[i] for i in rng.permutation(len(self.distractors))]
        options.insert(position, self.answer)
        return Question(self.text, tuple(options), position, self.kind, self.object_ids, self.room_ids)


def label(category: str) -> str:
    """``side_table`` → ``side table``."""
    return category.replace("_", " ")


def plural(category: str) -> str:
    """English plural of a category label (``shelf`` → ``shelves``, ``box`` → ``boxes``)."""
    word = label(category)
    if word.endswith("shelf"):
        return word[:-1] + "ves"
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    return word + "s"


class QuestionMaker:
    """Every candidate question of one scene, by kind (see the module docs)."""

    def __init__(self, context: SceneContext, rng: np.random.Generator) -> None:
        self.context, self.rng = context, rng
        objects = context.objects
        self.categories = sorted({o.category for o in objects.values()})
        per_scene = Counter(o.category for o in objects.values())
        per_room = Counter((o.room_id, o.category) for o in objects.values())
        types = Counter(context.room_types.values())
        self.room_label = {r: room_name(t) for r, t in context.room_types.items()}
        #: Rooms whose type names them unambiguously.
        self.named_rooms = sorted(r for r, t in context.room_types.items() if types[t] == 1 and t != "unknown")
        self.names: dict[str, str] = {}
        for oid, info in sorted(objects.items()):
            if per_scene[info.category] == 1:
                self.names[oid] = label(info.category)
            elif per_room[(info.room_id, info.category)] == 1 and info.room_id in self.named_rooms:
                self.names[oid] = f"{label(info.category)} in the {self.room_label[info.room_id]}"

    def drafts(self, kind: str) -> list[Draft]:
        """All candidate questions of ``kind`` in the scene (deterministic order)."""
        return list(getattr(self, f"_{kind}")())

    def _pick(self, pool: Iterable[str], fallback: Iterable[str] = (), unlike: str | None = None
              ) -> tuple[str, ...] | None:
        """Three distinct distractors from ``pool`` (topped up from ``fallback``), or None;
        none of them sharing a head noun with ``unlike`` (the answer) when it is given."""
        if unlike is not None:
            pool = [p for p in pool if not same_head(p, unlike)]
            fallback = [f for f in fallback if not same_head(f, unlike)]
        pool = sorted(set(pool))
        chosen = [pool[i] for i in self.rng.permutation(len(pool))[:OPTION_COUNT - 1]]
        extra = [f for f in fallback if f not in chosen and f not in pool]
        chosen += [extra[i] for i in self.rng.permutation(len(extra))[:OPTION_COUNT - 1 - len(chosen)]]
        return tuple(chosen) if len(chosen) == OPTION_COUNT - 1 else None

    def _instances(self, category: str, rooms: Iterable[str | None]) -> tuple[str, ...]:
        rooms = set(rooms)
        return tuple(o for o, i in sorted(self.context.objects.items()) if i.category == category and i.room_id in rooms)

    def _existence(self) -> Iterable[Draft]:
        by_type: dict[str, list[str]] = {}
        for room, kind in sorted(self.context.room_types.items()):
            if kind != "unknown":
                by_type.setdefault(kind, []).append(room)
        for kind, rooms in sorted(by_type.items()):
            present = sorted({o.category for o in self.context.objects.values() if o.room_id in rooms})
            absent = [c for c in self.categories if c not in present]
            where = f"the {room_name(kind)}" if len(rooms) == 1 else f"a {room_name(kind)}"
            for category in present:
                distractors = self._pick(map(label, absent), unlike=label(category))
                if distractors:
                    yield Draft("existence", f"Which of these is in {where}?", label(category), distractors,
                                self._instances(category, rooms), tuple(rooms))

    def _room(self) -> Iterable[Draft]:
        labels = set(self.room_label.values()) - {"room"}
        for oid, name in sorted(self.names.items()):
            room = self.context.objects[oid].room_id
            if room is None or " in the " in name or self.room_label[room] == "room":
                continue
            answer = self.room_label[room]
            distractors = self._pick(labels - {answer}, [r for r in HOUSEHOLD_ROOMS if r != answer])
            if distractors:
                yield Draft("room", f"In which room is the {name}?", answer, distractors, (oid,), (room,))

    def _color(self) -> Iterable[Draft]:
        colors = {o.color for o in self.context.objects.values() if o.color}
        for oid, name in sorted(self.names.items()):
            color = self.context.objects[oid].color
            if not color:
                continue
            unlike = [c for c in (*sorted(colors), *PALETTE) if color_family(c) != color_family(color)]
            distractors = self._pick(set(unlike) & colors, unlike)
            if distractors:
                room = self.context.objects[oid].room_id
                yield Draft("color", f"What color is the {name}?", color, distractors, (oid,),
                            (room,) if room else ())

    def _state(self) -> Iterable[Draft]:
        states = {oid: self.context.scene.object_by_id(oid).state for oid in self.names}
        for oid, state in sorted(states.items()):
            if state not in OPPOSITE_STATE:
                continue
            others = [self.names[o] for o, s in states.items() if s == OPPOSITE_STATE[state]]
            distractors = self._pick(others)
            if distractors:
                room = self.context.objects[oid].room_id
                yield Draft("state", f"Which of these is {STATE_WORDS[state]}?", self.names[oid], distractors,
                            (oid,), (room,) if room else ())

    def _count(self) -> Iterable[Draft]:
        for room in self.named_rooms:
            counts = Counter(o.category for o in self.context.objects_in_room(room))
            absent = [c for c in self.categories if c not in counts]
            zero = [absent[int(self.rng.integers(len(absent)))]] if absent else []  # one "none" question per room
            for category in sorted(counts) + zero:
                n = counts.get(category, 0)
                low = int(self.rng.integers(max(0, n - OPTION_COUNT + 1), n + 1))
                window = [str(v) for v in range(low, low + OPTION_COUNT) if v != n]
                yield Draft("count", f"How many {plural(category)} are there in the {self.room_label[room]}?",
                            str(n), tuple(window), self._instances(category, [room]), (room,))

    def _near(self) -> Iterable[Draft]:
        for oid, name in sorted(self.names.items()):
            info = self.context.objects[oid]
            near = {self.context.objects[o].category for o, _, _ in self.context.neighbours(oid)} - {info.category}
            if not near:
                continue
            gaps = {c: min(box_gap(info.aabb_min, info.aabb_max, o.aabb_min, o.aabb_max)
                           for o in self.context.objects.values() if o.category == c) for c in self.categories}
            far = [c for c in self.categories if gaps[c] >= FAR_GAP]
            same_room = {o.category for o in self.context.objects_in_room(info.room_id)} & set(far)
            for category in sorted(near):
                distractors = self._pick(map(label, same_room), [label(c) for c in far], unlike=label(category))
                if distractors:
                    neighbours = tuple(o for o, _, _ in self.context.neighbours(oid)
                                       if self.context.objects[o].category == category)
                    yield Draft("near", f"Which of these is near the {name}?", label(category), distractors,
                                (oid, *neighbours), (info.room_id,) if info.room_id else ())


def same_head(a: str, b: str) -> bool:
    """Whether two object labels share a head noun ("sink" / "bathroom sink", "shelf" / "bookshelf")."""
    x, y = a.split()[-1], b.split()[-1]
    return x.endswith(y) or y.endswith(x)


def color_family(color: str) -> str:
    """The family of a colour name (:data:`COLOR_FAMILIES`; a colour of its own otherwise)."""
    return COLOR_FAMILIES.get(color, color)


def by_answer(drafts: list[Draft], rng: np.random.Generator) -> list[Draft]:
    """``drafts`` in draw order: round-robin over their answers (answers and drafts in seeded order)."""
    groups: dict[str, list[Draft]] = {}
    for k in rng.permutation(len(drafts)):
        groups.setdefault(drafts[k].answer, []).append(drafts[k])
    keys = sorted(groups)
    order = [groups[keys[i]] for i in rng.permutation(len(keys))]  # not the biggest group first
    return [group[i] for i in range(max(map(len, order), default=0)) for group in order if i < len(group)]


def balanced_positions(n: int, rng: np.random.Generator) -> list[int]:
    """``n`` answer positions: each block of :data:`OPTION_COUNT` is a permutation of them."""
    blocks = math.ceil(n / OPTION_COUNT)
    return [int(p) for _ in range(blocks) for p in rng.permutation(OPTION_COUNT)][:n]


def question_goals(context: SceneContext, draft: Draft, radius: float) -> list[Goal]:
    """Goals of a question: the viewpoint of each relevant object, else a point in its room."""
    goals = [g for g in (instance_goal(context, oid, radius) for oid in draft.object_ids) if g is not None]
    if goals or not draft.room_ids:
        return goals
    room = draft.room_ids[0]
    cells = context.room_cells.get(context.room_ids.index(room)) if room in context.room_ids else None
    if cells is None or not len(cells):
        return []
    points = context.occupancy.cell_to_world(cells)
    centre = points[int(np.argmin(np.hypot(*(points[:, :2] - points[:, :2].mean(axis=0)).T)))]
    return [Goal(position=tuple(centre), radius=radius, room_id=room)]


def _tour(context: SceneContext, start: np.ndarray, goals: list[Goal], every: bool):
    """The reference path from ``start``: to the nearest goal, or through every goal nearest-first."""
    points, length, here = [np.asarray(start, float)[None]], 0.0, np.asarray(start, float)
    left = list(goals)
    while left:
        paths = [context.navigator.shortest_path(here, g.position) for g in left]
        best = int(np.argmin([p.length for p in paths]))
        points.append(paths[best].points[1:])
        length += paths[best].length
        here = np.asarray(left.pop(best).position, float)
        if not every:
            break
    return np.concatenate(points), length


def eqa_episodes(context: SceneContext, config: EQAConfig, count: int, seed: int,
                 assign_splits: Callable[[int], list[str]], writer: Any) -> list[Episode]:
    """Up to ``count`` EQA episodes of one scene (kinds round-robin, answer positions balanced).

    ``assign_splits(n)`` gives the episodes' splits; ``writer`` builds them
    (:class:`vlnverse.tasks.generate._EpisodeWriter`)."""
    rng = np.random.default_rng([seed, stable_hash(context.scene_id), stable_hash(EQA)])
    maker = QuestionMaker(context, rng)
    pools = {kind: [d for d in (maker.drafts(kind)) if d.object_ids or d.room_ids] for kind in config.kinds}
    pools = {k: by_answer(v, rng)[::-1] for k, v in pools.items() if v}  # popped from the end
    order = [k for k in np.array(sorted(pools))[rng.permutation(len(pools))]] if pools else []
    cells = context.occupancy.cell_to_world(context.main_cells)
    chosen: list[tuple[Draft, list[Goal], np.ndarray, float]] = []
    turn = 0
    while len(chosen) < count and any(pools.values()):
        kind = order[turn % len(order)]
        turn += 1
        while pools[kind]:
            draft = pools[kind].pop()
            goals = question_goals(context, draft, config.success_distance)
            if not goals or (draft.kind == "count" and len(goals) < len(draft.object_ids)):
                continue  # a count must not include an instance no agent can get to
            field = context.navigator.distance_field(np.array([g.position for g in goals]))
            distance = np.asarray(field.distance_at(cells), dtype=np.float64)
            ok = np.flatnonzero(np.isfinite(distance) & (distance >= config.min_start_distance)
                                & (distance <= config.max_start_distance))
            if len(ok):
                chosen.append((draft, goals, cells[int(rng.choice(ok))], float(rng.uniform(-math.pi, math.pi))))
                break
    positions = balanced_positions(len(chosen), rng)
    out = []
    for k, ((draft, goals, start, yaw), position, split) in enumerate(
            zip(chosen, positions, assign_splits(len(chosen)), strict=True)):
        question = draft.question(position, rng)
        points, length = _tour(context, start, goals, every=draft.kind == "count")
        instruction = Instruction(question.prompt(), landmarks=question.object_ids, rooms=question.room_ids)
        out.append(writer._episode(f"{context.scene_id}-q{k:04d}", EQA, split, start, yaw, goals, points, length,
                                   instruction, writer._provenance(None), question=question))
    return out
