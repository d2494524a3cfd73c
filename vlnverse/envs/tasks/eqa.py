"""EQA in the env: the question and its options as observations, and the answer actions.

An EQA episode (a dataset record with ``task == "eqa"``, :mod:`vlnverse.tasks.eqa`) holds a
multiple-choice :class:`~vlnverse.tasks.episode.Question`. With ``eqa=True`` (the default
for ``task="eqa"``) the env observes ``question`` (the question text) and ``options`` (a
tuple of the four option texts, A to D); ``instruction`` holds both as one text. The
agent ends the episode by answering:

- discrete action spaces gain one action id per option, after the navigation actions
  (and after the dialogue ask action when there is one): ``env.unwrapped.answer_action(k)``
  is the id that answers option ``k`` (0 = A);
- on any action space ``env.unwrapped.answer(k)`` answers option ``k`` and returns what
  ``step`` returns.

An answer is a step that does not move the agent and terminates the episode; ``info``
then has ``answer`` (the index) and ``answer_correct``; the reward gets the success bonus
when it is correct, and ``fail_reason`` is ``"wrong_answer"`` when it is not. A STOP
without an answer also ends the episode (the harness counts it inconclusive). ``info`` always
carries ``eqa_answer``, the correct index (privileged, like ``oracle_action``: only the
``oracle`` baseline reads it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from vlnverse.envs.tasks.base import StepOutcome, TaskComponent
from vlnverse.errors import DatasetError, InvalidActionError
from vlnverse.tasks.episode import OPTION_COUNT


class EQATask(TaskComponent):
    """The answer rule of an EQA env: action ids, the episode's question, its observations."""

    idle_info = {"answer": None, "answer_correct": None, "eqa_answer": None}
    privileged_info = ("eqa_answer",)
    action_count = OPTION_COUNT

    def __init__(self, env: Any, settings: Mapping[str, Any]) -> None:
        super().__init__(env, settings)
        self.question: Any = None
        self.given: int | None = None
        self.correct: bool | None = None

    @classmethod
    def wanted(cls, task: str | None, settings: Mapping[str, Any]) -> bool:
        flag = settings.get("eqa")
        return task == "eqa" if flag is None else bool(flag)

    def action(self, index: int) -> int:
        """The discrete action id that answers option ``index``."""
        if self.first_action is None:
            raise InvalidActionError("this action space has no answer action ids; call env.unwrapped.answer(index)")
        return self.first_action + check_index(index)

    def spaces(self, max_text: int, charset: frozenset[str]) -> dict[str, spaces.Space]:
        text = spaces.Text(max_text, min_length=0, charset=charset)
        return {"question": text, "options": spaces.Tuple([text] * OPTION_COUNT)}

    def reset(self, options: Mapping[str, Any]) -> None:
        episode = self.env.episode
        question = getattr(episode.source, "question", None)
        if question is None:
            raise DatasetError(f"episode {episode.episode_id}: an EQA env needs episodes with a question "
                               "(task 'eqa' records)")
        self.question, self.given, self.correct = question, None, None

    def act(self, index: Any) -> StepOutcome:
        self.given = check_index(index)
        self.correct = self.given == self.question.answer
        return StepOutcome(success=self.correct, terminated=True, fail_reason=None if self.correct else "wrong_answer")

    def observe(self) -> dict[str, Any]:
        return {"question": self.question.text, "options": tuple(self.question.options)}

    def info(self) -> dict[str, Any]:
        return {"answer": self.given, "answer_correct": self.correct, "eqa_answer": self.question.answer}


def check_index(index: Any) -> int:
    """``index`` as an option index, or :class:`InvalidActionError`."""
    if isinstance(index, np.integer):
        index = int(index)
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < OPTION_COUNT:
        raise InvalidActionError(f"an answer must be an option index 0..{OPTION_COUNT - 1}, got {index!r}")
    return index
