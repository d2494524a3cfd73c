"""The one episode schema shared by all five tasks (paper §3.3.1).

Episodes are frozen dataclasses with a canonical JSON form (:meth:`Episode.to_dict` /
:meth:`Episode.from_dict`): coordinates are Z-up metres, rotations are quaternions
``(w, x, y, z)``, floats are rounded to :data:`DECIMALS` places so the same episode always
serializes to the same bytes. ``from_dict`` validates strictly and names the bad field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

from vlnverse.errors import DatasetError
from vlnverse.tasks.registry import task_families

#: The paper's five VLN tasks (fine, coarse, visual reference, long horizon, dialogue).
VLN_TASKS = tuple(f.name for f in task_families() if f.vln)
#: Every registered task (:mod:`vlnverse.tasks.registry`): the five VLN tasks, then those
#: generated on request (ObjectNav, embodied question answering, ...).
TASKS = tuple(f.name for f in task_families())
#: EQA question types (:mod:`vlnverse.tasks.eqa`).
QUESTION_KINDS = ("existence", "room", "color", "state", "count", "near")
#: Options per EQA question; the answer is an index into them.
OPTION_COUNT = 4
OPTION_LETTERS = "ABCD"
SPLITS = ("train", "val_seen", "val_unseen", "test")
STYLES = ("formal", "natural", "casual")
DECIMALS = 4
DEFAULT_GOAL_RADIUS = 3.0


def _round(values: Sequence[float], where: str, n: int) -> tuple[float, ...]:
    try:
        out = tuple(round(float(v), DECIMALS) + 0.0 for v in values)
    except (TypeError, ValueError) as exc:
        raise DatasetError(f"{where}: expected {n} numbers, got {values!r:.80}") from exc
    if len(out) != n or not all(math.isfinite(v) for v in out):
        raise DatasetError(f"{where}: expected {n} finite numbers, got {values!r:.80}")
    return out


def yaw_to_quaternion(yaw: float) -> tuple[float, float, float, float]:
    """Rotation by ``yaw`` (rad) about +Z as ``(w, x, y, z)``."""
    return (math.cos(yaw / 2.0), 0.0, 0.0, math.sin(yaw / 2.0))


def quaternion_to_yaw(q: Sequence[float]) -> float:
    """Heading (rad, about +Z) of a ``(w, x, y, z)`` rotation: where it sends +X."""
    w, x, y, z = (float(v) for v in q)
    fx = 1.0 - 2.0 * (y * y + z * z)
    fy = 2.0 * (x * y + w * z)
    return math.atan2(fy, fx)


@dataclass(frozen=True)
class Goal:
    """One goal of an episode.

    Attributes:
        position: Goal point (x, y, z) on the floor: the path end (fine) or a navigable
            viewpoint within 1 m of the target object (coarse).
        radius: Success radius in metres (3.0 as in VLN-CE and the public release).
        object_id: Target object (coarse-grained tasks), if any.
        room_id: Room of the goal point, if known.
        category: Category of ``object_id``.
    """

    position: tuple[float, float, float]
    radius: float = DEFAULT_GOAL_RADIUS
    object_id: str | None = None
    room_id: str | None = None
    category: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "position", _round(self.position, "goal.position", 3))
        if not (isinstance(self.radius, int | float) and self.radius > 0):
            raise DatasetError(f"goal.radius must be positive, got {self.radius!r}")
        object.__setattr__(self, "radius", round(float(self.radius), DECIMALS))


@dataclass(frozen=True)
class Instruction:
    """The language side of an episode.

    Attributes:
        text: The instruction the agent receives (for long-horizon: all sub-instructions joined).
        style: Style of ``text``: ``natural`` (fine, long-horizon) or one of :data:`STYLES`.
        styles: Coarse-grained variants, ``{"formal", "natural", "casual"}`` (empty otherwise).
        subgoals: Long-horizon: one instruction per sub-goal, in order (empty otherwise).
        landmarks: Ids of the scene objects the text mentions (grounding, statistics).
        rooms: Ids of the rooms the text mentions, in order of mention.
    """

    text: str
    style: str = "natural"
    styles: Mapping[str, str] = field(default_factory=dict)
    subgoals: tuple[str, ...] = ()
    landmarks: tuple[str, ...] = ()
    rooms: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or not self.text.strip():
            raise DatasetError("instruction.text must be a non-empty string")
        if self.style not in STYLES:
            raise DatasetError(f"instruction.style must be one of {STYLES}, got {self.style!r}")
        styles = dict(self.styles or {})
        bad = sorted(k for k, v in styles.items() if k not in STYLES or not isinstance(v, str) or not v.strip())
        if bad:
            raise DatasetError(f"instruction.styles: bad style entries {bad}")
        object.__setattr__(self, "styles", {k: styles[k] for k in STYLES if k in styles})
        for name in ("subgoals", "landmarks", "rooms"):
            value = tuple(getattr(self, name) or ())
            if not all(isinstance(v, str) for v in value):
                raise DatasetError(f"instruction.{name} must be a list of strings")
            object.__setattr__(self, name, value)


@dataclass(frozen=True)
class Question:
    """An EQA multiple-choice question (``task == "eqa"``).

    Attributes:
        text: The question, e.g. ``"In which room is the bed?"``.
        options: The :data:`OPTION_COUNT` answer options, distinct.
        answer: Index of the correct option (0 = A).
        kind: One of :data:`QUESTION_KINDS`.
        object_ids: The scene objects the answer rests on (the targets to look at).
        room_ids: The rooms the question is about.
    """

    text: str
    options: tuple[str, ...]
    answer: int
    kind: str
    object_ids: tuple[str, ...] = ()
    room_ids: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or not self.text.strip():
            raise DatasetError("question.text must be a non-empty string")
        options = tuple(self.options or ())
        if len(options) != OPTION_COUNT or not all(isinstance(o, str) and o.strip() for o in options):
            raise DatasetError(f"question.options must be {OPTION_COUNT} non-empty strings, got {options!r:.120}")
        if len({o.strip().lower() for o in options}) != OPTION_COUNT:
            raise DatasetError(f"question.options must be distinct, got {options!r:.120}")
        object.__setattr__(self, "options", options)
        if isinstance(self.answer, bool) or not isinstance(self.answer, int) or not 0 <= self.answer < OPTION_COUNT:
            raise DatasetError(f"question.answer must be an option index 0..{OPTION_COUNT - 1}, got {self.answer!r}")
        if self.kind not in QUESTION_KINDS:
            raise DatasetError(f"question.kind must be one of {QUESTION_KINDS}, got {self.kind!r}")
        for name in ("object_ids", "room_ids"):
            value = tuple(getattr(self, name) or ())
            if not all(isinstance(v, str) for v in value):
                raise DatasetError(f"question.{name} must be a list of strings")
            object.__setattr__(self, name, value)

    @property
    def answer_text(self) -> str:
        """The correct option."""
        return self.options[self.answer]

    def prompt(self) -> str:
        """The question with its lettered options, as one text (the EQA instruction)."""
        return " ".join([self.text, *(f"{OPTION_LETTERS[k]}) {o}" for k, o in enumerate(self.options))])


@dataclass(frozen=True)
class Provenance:
    """How an episode was produced (reproducibility and auditing).

    Attributes:
        seed: The dataset seed the episode's scene stream was derived from.
        generator: Versions of the generating code, e.g. ``{"vlnverse": "0.1.0", "sampler": "1"}``.
        instruction_source: ``"prior"`` or ``"llm:<model>"``.
        stages: Stages that produced the text, in order (``prior``, ``describer``,
            ``verifier``, ``synthesizer``; ``import:<format>`` for imported episodes).
        fallback: Why the LLM text was replaced by the prior (None when it was not).
    """

    seed: int | None = None
    generator: Mapping[str, str] = field(default_factory=dict)
    instruction_source: str = "prior"
    stages: tuple[str, ...] = ("prior",)
    fallback: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "generator", {str(k): str(v) for k, v in sorted(dict(self.generator).items())})
        object.__setattr__(self, "stages", tuple(str(s) for s in self.stages))


@dataclass(frozen=True)
class Episode:
    """One navigation episode of any task.

    Attributes:
        episode_id: Unique id within the dataset.
        trajectory_id: Episodes sharing a trajectory (coarse / visual-reference / dialogue)
            share this id.
        scene_id: Scene identifier.
        scene_path: Scene file, relative to the scenes directory (POSIX separators).
        split: One of :data:`SPLITS`.
        task: One of :data:`TASKS`.
        start_position: Agent start (x, y, z), z = floor height.
        start_rotation: Start orientation ``(w, x, y, z)``.
        goals: Goals in the order they must be reached (one, except long-horizon).
        reference_path: The shortest path (x, y, z) waypoints; empty when withheld (test).
        geodesic_distance: Geodesic start-to-(last-)goal length along the reference path (m).
        instruction: The instruction.
        reference_image: Visual reference: image path relative to the dataset root.
        subgoal_distances: Long-horizon: geodesic length of each leg (m), for SR_n bookkeeping.
        question_budget: Dialogue: questions the agent may ask the oracle.
        question: EQA: the multiple-choice question (required for, and only for, ``task == "eqa"``).
        provenance: Generation provenance.
    """

    episode_id: str
    trajectory_id: str
    scene_id: str
    scene_path: str
    split: str
    task: str
    start_position: tuple[float, float, float]
    start_rotation: tuple[float, float, float, float]
    goals: tuple[Goal, ...]
    reference_path: tuple[tuple[float, float, float], ...]
    geodesic_distance: float
    instruction: Instruction
    reference_image: str | None = None
    subgoal_distances: tuple[float, ...] = ()
    question_budget: int | None = None
    question: Question | None = None
    provenance: Provenance = field(default_factory=Provenance)

    def __post_init__(self) -> None:
        for name in ("episode_id", "trajectory_id", "scene_id", "scene_path"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise DatasetError(f"episode.{name} must be a non-empty string")
        where = f"episode {self.episode_id}"
        if self.split not in SPLITS:
            raise DatasetError(f"{where}: split must be one of {SPLITS}, got {self.split!r}")
        if self.task not in TASKS:
            raise DatasetError(f"{where}: task must be one of {TASKS}, got {self.task!r}")
        object.__setattr__(self, "start_position", _round(self.start_position, f"{where}.start_position", 3))
        rotation = _round(self.start_rotation, f"{where}.start_rotation", 4)
        norm = math.sqrt(sum(v * v for v in rotation))
        if abs(norm - 1.0) > 1e-2:
            raise DatasetError(f"{where}: start_rotation must be a unit quaternion (w, x, y, z), norm {norm:.4f}")
        object.__setattr__(self, "start_rotation", rotation)
        goals = tuple(g if isinstance(g, Goal) else Goal(**g) for g in self.goals)
        if not goals:
            raise DatasetError(f"{where}: needs at least one goal")
        object.__setattr__(self, "goals", goals)
        path = tuple(_round(p, f"{where}.reference_path", 3) for p in self.reference_path)
        object.__setattr__(self, "reference_path", path)
        if not (isinstance(self.geodesic_distance, int | float) and math.isfinite(self.geodesic_distance)
                and self.geodesic_distance >= 0):
            raise DatasetError(f"{where}: geodesic_distance must be a finite number >= 0")
        object.__setattr__(self, "geodesic_distance", round(float(self.geodesic_distance), DECIMALS))
        object.__setattr__(self, "subgoal_distances",
                           tuple(round(float(d), DECIMALS) for d in self.subgoal_distances))
        if self.task == "long_horizon" and self.subgoal_distances and len(self.subgoal_distances) != len(goals):
            raise DatasetError(f"{where}: subgoal_distances must have one entry per goal")
        if self.task == "long_horizon" and self.instruction.subgoals and len(self.instruction.subgoals) != len(goals):
            raise DatasetError(f"{where}: long-horizon instructions need one sub-instruction per goal")
        if self.question_budget is not None and (not isinstance(self.question_budget, int) or self.question_budget < 0):
            raise DatasetError(f"{where}: question_budget must be a non-negative integer")
        if (self.task == "eqa") != (self.question is not None):
            raise DatasetError(f"{where}: a question is required for, and only for, eqa episodes")
        if self.question is not None and not isinstance(self.question, Question):
            raise DatasetError(f"{where}: question must be a Question")

    # -- convenience -----------------------------------------------------------------------
    @property
    def start_yaw(self) -> float:
        """Start heading in radians (about +Z, 0 = +X)."""
        return quaternion_to_yaw(self.start_rotation)

    @property
    def goal(self) -> Goal:
        """The final goal."""
        return self.goals[-1]

    def with_split(self, split: str) -> Episode:
        return replace(self, split=split)

    def to_nav_mapping(self, goal_index: int | None = None) -> dict[str, Any]:
        """The mapping ``vlnverse.envs`` episodes are built from (``NavEnv(episodes=[...])``).

        Args:
            goal_index: Only this goal and its sub-instruction (long-horizon legs);
                None keeps every goal and the whole instruction.
        """
        goals = self.goals if goal_index is None else (self.goals[goal_index],)
        text = self.instruction.text
        if goal_index is not None and self.instruction.subgoals:
            text = self.instruction.subgoals[goal_index]
        start = (self.start_position[0], self.start_position[1], self.start_yaw)
        return {"episode_id": self.episode_id, "start": start, "instruction": text,
                "goals": [{"position": list(g.position), "radius": g.radius} for g in goals],
                "reference_path": [list(p) for p in self.reference_path] if self.reference_path else None}

    # -- JSON ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Canonical JSON-ready dict (optional fields omitted when empty)."""
        out: dict[str, Any] = {
            "episode_id": self.episode_id,
            "trajectory_id": self.trajectory_id,
            "scene_id": self.scene_id,
            "scene_path": self.scene_path,
            "split": self.split,
            "task": self.task,
            "start_position": list(self.start_position),
            "start_rotation": list(self.start_rotation),
            "goals": [_goal_dict(g) for g in self.goals],
            "reference_path": [list(p) for p in self.reference_path],
            "geodesic_distance": self.geodesic_distance,
            "instruction": _instruction_dict(self.instruction),
            "provenance": {
                "seed": self.provenance.seed,
                "generator": dict(self.provenance.generator),
                "instruction_source": self.provenance.instruction_source,
                "stages": list(self.provenance.stages),
                "fallback": self.provenance.fallback,
            },
        }
        if self.reference_image is not None:
            out["reference_image"] = self.reference_image
        if self.subgoal_distances:
            out["subgoal_distances"] = list(self.subgoal_distances)
        if self.question_budget is not None:
            out["question_budget"] = self.question_budget
        if self.question is not None:
            out["question"] = question_dict(self.question)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Episode:
        """Build an episode from its JSON form, strictly (unknown keys are errors)."""
        if not isinstance(data, Mapping):
            raise DatasetError(f"an episode must be a JSON object, got {type(data).__name__}")
        where = f"episode {data.get('episode_id', '?')}"
        _check_keys(data, {f.name for f in fields(cls)}, where)
        try:
            goals = []
            for goal in data["goals"]:
                _check_keys(goal, {f.name for f in fields(Goal)}, f"{where}.goals")
                goals.append(Goal(**goal))
            instruction = data["instruction"]
            _check_keys(instruction, {f.name for f in fields(Instruction)}, f"{where}.instruction")
            question = data.get("question")
            if question is not None:
                _check_keys(question, {f.name for f in fields(Question)}, f"{where}.question")
                question = Question(**question)
            provenance = data.get("provenance") or {}
            _check_keys(provenance, {f.name for f in fields(Provenance)}, f"{where}.provenance")
            return cls(
                episode_id=str(data["episode_id"]),
                trajectory_id=str(data.get("trajectory_id", data["episode_id"])),
                scene_id=data["scene_id"],
                scene_path=data["scene_path"],
                split=data["split"],
                task=data["task"],
                start_position=data["start_position"],
                start_rotation=data["start_rotation"],
                goals=tuple(goals),
                reference_path=tuple(data.get("reference_path") or ()),
                geodesic_distance=data["geodesic_distance"],
                instruction=Instruction(**instruction),
                reference_image=data.get("reference_image"),
                subgoal_distances=tuple(data.get("subgoal_distances") or ()),
                question_budget=data.get("question_budget"),
                question=question,
                provenance=Provenance(**provenance),
            )
        except KeyError as exc:
            raise DatasetError(f"{where}: missing field {exc.args[0]!r}") from None
        except TypeError as exc:
            raise DatasetError(f"{where}: {exc}") from None


def _check_keys(data: Any, valid: set[str], where: str) -> None:
    if not isinstance(data, Mapping):
        raise DatasetError(f"{where}: expected an object, got {type(data).__name__}")
    unknown = sorted(set(data) - valid)
    if unknown:
        raise DatasetError(f"{where}: unknown field(s) {', '.join(unknown)}; valid: {', '.join(sorted(valid))}")


def _goal_dict(goal: Goal) -> dict[str, Any]:
    out: dict[str, Any] = {"position": list(goal.position), "radius": goal.radius}
    for name in ("object_id", "room_id", "category"):
        if getattr(goal, name) is not None:
            out[name] = getattr(goal, name)
    return out


def _instruction_dict(instruction: Instruction) -> dict[str, Any]:
    out: dict[str, Any] = {"text": instruction.text, "style": instruction.style}
    if instruction.styles:
        out["styles"] = dict(instruction.styles)
    for name in ("subgoals", "landmarks", "rooms"):
        if getattr(instruction, name):
            out[name] = list(getattr(instruction, name))
    return out


def question_dict(question: Question) -> dict[str, Any]:
    """The canonical JSON form of an EQA question (empty id lists omitted)."""
    out: dict[str, Any] = {"text": question.text, "options": list(question.options), "answer": question.answer,
                           "kind": question.kind}
    for name in ("object_ids", "room_ids"):
        if getattr(question, name):
            out[name] = list(getattr(question, name))
    return out
