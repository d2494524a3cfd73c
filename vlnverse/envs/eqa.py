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

from typing import Any

import numpy as np
from gymnasium import spaces

from vlnverse.errors import DatasetError, InvalidActionError
from vlnverse.tasks.episode import OPTION_COUNT


class AnswerActions:
    """The answer rule of an EQA env: action ids, the episode's question, its observations.

    Args:
        first_id: Discrete id of option A (None for non-discrete action spaces).
    """

    def __init__(self, first_id: int | None) -> None:
        self.first_id = first_id
        self.question: Any = None

    def action(self, index: int) -> int:
        """The discrete action id that answers option ``index``."""
        if self.first_id is None:
            raise InvalidActionError("this action space has no answer action ids; call env.unwrapped.answer(index)")
        return self.first_id + check_index(index)

    def index_of(self, action: Any) -> int | None:
        """The option a discrete ``action`` answers, or None when it is not an answer action."""
        if self.first_id is None or isinstance(action, (bool, np.bool_)):
            return None
        if isinstance(action, np.ndarray):
            if action.ndim != 0:
                return None
            action = action.item()
        if isinstance(action, (int, np.integer)) and 0 <= int(action) - self.first_id < OPTION_COUNT:
            return int(action) - self.first_id
        return None

    def start(self, episode: Any) -> None:
        """Take the question of ``episode`` (a :class:`~vlnverse.envs.episode.NavEpisode`)."""
        question = getattr(episode.source, "question", None)
        if question is None:
            raise DatasetError(f"episode {episode.episode_id}: an EQA env needs episodes with a question "
                               "(task 'eqa' records)")
        self.question = question

    def judge(self, index: Any) -> bool:
        """Whether option ``index`` is the correct one."""
        return check_index(index) == self.question.answer

    @staticmethod
    def spaces(max_text: int, charset: Any) -> dict[str, spaces.Space]:
        text = spaces.Text(max_text, min_length=0, charset=charset)
        return {"question": text, "options": spaces.Tuple([text] * OPTION_COUNT)}

    def observe(self) -> dict[str, Any]:
        return {"question": self.question.text, "options": tuple(self.question.options)}


def check_index(index: Any) -> int:
    """``index`` as an option index, or :class:`InvalidActionError`."""
    if isinstance(index, np.integer):
        index = int(index)
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < OPTION_COUNT:
        raise InvalidActionError(f"an answer must be an option index 0..{OPTION_COUNT - 1}, got {index!r}")
    return index
