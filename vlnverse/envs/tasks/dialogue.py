"""Dialogue: the agent may ask an oracle (the ``ask`` action), within a question budget.

With ``dialogue=True`` (the default for ``task="dialogue"``) discrete action spaces gain one
action id, ``env.unwrapped.ask_action`` (4 for the VLN-CE set), which asks
:data:`DEFAULT_QUESTION`; ``env.unwrapped.ask(question)`` asks a question of the agent's own
wording on any action space and returns what ``step`` returns. An ask is a step: the agent
does not move, the step penalty applies and it counts against ``max_episode_steps``. The
answer is the ``oracle_answer`` observation of that step (empty on every other step). The
budget is the episode's ``question_budget`` (else the env's ``question_budget``, default
3); later asks are answered with :data:`vlnverse.tasks.runtime.BUDGET_SPENT`. Answers come
from the template oracle, or from an LLM oracle when ``oracle_llm`` names a model (a
:func:`vlnverse.llm.make_llm` spec or a client). The template oracle answers the question
asked (direction, distance, "where is X", "am I close", "which room":
:func:`vlnverse.tasks.oracle.question_kind`); the LLM oracle is also shown the agent's
current view (a default RGB camera at its pose) while its model takes images. ``info``
always carries ``questions_asked`` and ``questions_remaining``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any

from gymnasium import spaces

from vlnverse.envs.tasks.base import (
    INSTRUCTION_CHARSET,
    INSTRUCTION_MAX_LENGTH,
    StepOutcome,
    TaskComponent,
)
from vlnverse.errors import ConfigError

#: What the discrete ask action asks.
DEFAULT_QUESTION = "Where should I go next?"
#: Default per-episode question budget of dialogue episodes.
DEFAULT_QUESTION_BUDGET = 3


class DialogueTask(TaskComponent):
    """The ask action, the ``oracle_answer`` observation and the question budget."""

    idle_info = {"questions_asked": 0, "questions_remaining": 0}
    action_count = 1

    def __init__(self, env: Any, settings: Mapping[str, Any]) -> None:
        super().__init__(env, settings)
        self.budget = settings["question_budget"]
        self.llm = settings["oracle_llm"]
        self.answer = ""
        self.session: Any = None
        self._contexts: dict[str, Any] = {}

    @classmethod
    def configure(cls, settings: dict[str, Any]) -> None:
        budget = settings.setdefault("question_budget", DEFAULT_QUESTION_BUDGET)
        if not isinstance(budget, int) or isinstance(budget, bool) or budget < 0:
            raise ConfigError(f"question_budget must be a non-negative integer, got {budget!r}")
        settings["oracle_llm"] = _make_llm(settings.get("oracle_llm"))

    @classmethod
    def wanted(cls, task: str | None, settings: Mapping[str, Any]) -> bool:
        flag = settings.get("dialogue")
        return task == "dialogue" if flag is None else bool(flag)

    def spaces(self, max_text: int, charset: frozenset[str]) -> dict[str, spaces.Space]:
        return {"oracle_answer": spaces.Text(INSTRUCTION_MAX_LENGTH, min_length=0, charset=INSTRUCTION_CHARSET)}

    def claim(self, action: Any) -> Any | None:
        return DEFAULT_QUESTION if super().claim(action) is not None else None

    def reset(self, options: Mapping[str, Any]) -> None:
        from vlnverse.tasks.runtime import DialogueSession

        source = self.env.episode.source
        budget = source.question_budget if source is not None and source.question_budget is not None else self.budget
        self.session = DialogueSession(_LazyOracle(self), budget=budget)
        self.answer = ""

    def begin_step(self) -> None:
        self.answer = ""

    def act(self, question: Any) -> StepOutcome:
        pose = self.env.sim.pose
        tracker = self.env.components.component("long_horizon")
        self.answer = _sanitize(self.session.ask(question, (pose.x, pose.y, pose.z, pose.yaw),
                                                 tracker.active if tracker is not None else 0))
        return StepOutcome()

    def observe(self) -> dict[str, Any]:
        return {"oracle_answer": self.answer}

    def info(self) -> dict[str, Any]:
        return {"questions_asked": len(self.session.history), "questions_remaining": self.session.remaining}

    def oracle(self) -> Any:
        """The dialogue oracle of the current episode (template, or LLM when one is set)."""
        from vlnverse.tasks.oracle import LLMOracle, TemplateOracle

        env = self.env
        record = env.episode.source if env.episode.source is not None else self._synthetic_record()
        context = self._scene_context()
        return LLMOracle(context, record, self.llm) if self.llm is not None else TemplateOracle(context, record)

    def _scene_context(self) -> Any:
        """The scene context the oracle reasons over (built on first use per scene)."""
        env = self.env
        if env._scene_key not in self._contexts:
            from vlnverse.scene.inspect import PreparedScene
            from vlnverse.scene.scene_graph import build_scene_graph
            from vlnverse.tasks.context import SceneContext

            prepared = PreparedScene(env.scene, env.occupancy, env.navigator,
                                     build_scene_graph(env.scene, env.occupancy))
            self._contexts = {env._scene_key: SceneContext(prepared)}
        return self._contexts[env._scene_key]

    def _synthetic_record(self) -> Any:
        """A dataset record for an episode given only as positions (the oracle's input)."""
        from vlnverse.tasks.episode import Episode, Instruction, yaw_to_quaternion
        from vlnverse.tasks.episode import Goal as TaskGoal

        ep, floor = self.env.episode, float(self.env.occupancy.floor_height)
        return Episode(
            episode_id=ep.episode_id, trajectory_id=ep.episode_id, scene_id="scene", scene_path="scene",
            split="test", task="dialogue", start_position=(ep.start[0], ep.start[1], floor),
            start_rotation=yaw_to_quaternion(ep.start[2]),
            goals=tuple(TaskGoal((g.position[0], g.position[1], floor), g.radius) for g in ep.goals),
            reference_path=(), geodesic_distance=0.0,
            instruction=Instruction(ep.instruction or "Go to the goal."))


class _LazyOracle:
    """The dialogue oracle of the env's current episode, built on the first question."""

    def __init__(self, task: DialogueTask) -> None:
        self.task = task
        self._oracle: Any = None

    def answer(self, question: str, pose: tuple[float, float, float, float], goal_index: int = 0) -> str:
        if self._oracle is None:
            self._oracle = self.task.oracle()
        view = self.task.env._agent_view() if self._oracle.takes_images else None
        return self._oracle.answer(question, pose, goal_index, view=view)


def _make_llm(value: Any) -> Any:
    if value is None or (isinstance(value, str) and value.strip().lower() == "none"):
        return None
    if isinstance(value, str):
        from vlnverse.llm import make_llm

        return make_llm(value)
    if not callable(getattr(value, "complete", None)):
        raise ConfigError(f"oracle_llm must be an LLM spec string or client, got {value!r}")
    return value


def _sanitize(text: str) -> str:
    """``text`` within the ``oracle_answer`` space: printable ASCII, at most the maximum length."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    cleaned = "".join(c if c in INSTRUCTION_CHARSET else " " for c in ascii_text)
    return cleaned[:INSTRUCTION_MAX_LENGTH]
