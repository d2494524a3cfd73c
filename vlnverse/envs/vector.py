"""Vector envs whose worker processes render safely and in parallel, and deliver text.

:func:`async_vector_env` is gymnasium's ``AsyncVectorEnv`` with each worker prepared for
the GL renderer first (one llvmpipe rasterizer thread per fresh worker, see
:func:`vlnverse.sim.gl.context.worker_setup`) and started the way this process allows
(``fork`` unless its llvmpipe runs threads, then ``forkserver``; see
:func:`vlnverse.sim.gl.context.start_method`)::

    envs = async_vector_env([functools.partial(vlnverse.make, scene=path)] * 2)

Gymnasium reads ``Text`` observations (the instruction, the oracle's answer, an EQA
question and its options) from shared memory once, when the vector env is made, so its own
``AsyncVectorEnv`` hands out the same blank strings at every reset and step. Here each
worker also sends its observation's strings through its pipe (an info entry that the vector
env takes out again) and the vector env puts them in place: every sub-env observes what the
single env observes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium
from gymnasium import spaces
from gymnasium.vector import AsyncVectorEnv

from vlnverse.sim.gl.context import start_method, worker_setup

#: The info entry that carries a worker's observation strings to the vector env.
TEXT_INFO = "_vlnverse_text"


def _texts(space: spaces.Space, value: Any) -> tuple[str, ...]:
    """Every ``Text`` leaf of ``value`` (an observation of ``space``), in the space's order."""
    if isinstance(space, spaces.Text):
        return (value,)
    if isinstance(space, spaces.Dict):
        return tuple(t for key, sub in space.spaces.items() for t in _texts(sub, value[key]))
    if isinstance(space, spaces.Tuple):
        return tuple(t for sub, item in zip(space.spaces, value, strict=True) for t in _texts(sub, item))
    return ()


def _put_texts(space: spaces.Space, batch: Any, rows: Sequence[Sequence[str]], start: int = 0) -> tuple[Any, int]:
    """``batch`` (a vector env's observations of ``space``) with its ``Text`` leaves taken from
    ``rows`` (each sub-env's :func:`_texts`), from leaf ``start`` on; returns it and the next leaf."""
    if isinstance(space, spaces.Text):
        return tuple(row[start] for row in rows), start + 1
    if isinstance(space, spaces.Dict):
        out = {}
        for key, sub in space.spaces.items():
            out[key], start = _put_texts(sub, batch[key], rows, start)
        return out, start
    if isinstance(space, spaces.Tuple):
        items = []
        for sub, item in zip(space.spaces, batch, strict=True):
            part, start = _put_texts(sub, item, rows, start)
            items.append(part)
        return tuple(items), start
    return batch, start


class TextInInfo(gymnasium.Wrapper):
    """Each reset's and step's info also carries the observation's strings (:data:`TEXT_INFO`)."""

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        return obs, {**info, TEXT_INFO: _texts(self.observation_space, obs)}

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, {**info, TEXT_INFO: _texts(self.observation_space, obs)}


@dataclass(frozen=True)
class WorkerEnvFn:
    """An env factory run in a worker process: sets up the worker's renderer, then makes the env
    (wrapped in :class:`TextInInfo`).

    Gymnasium also calls the first factory in the parent (a probe env for the spaces), after
    the start method was chosen: there it only makes the env, on the parent's own renderer
    settings (worker settings there, rasterizer threads, would make the forked workers refuse
    to render).
    """

    make: Callable[[], Any]
    parent: int = field(default_factory=os.getpid)

    def __call__(self) -> Any:
        if os.getpid() != self.parent:
            worker_setup()
        return TextInInfo(self.make())


class TextAsyncVectorEnv(AsyncVectorEnv):
    """``AsyncVectorEnv`` over :class:`WorkerEnvFn` envs that puts their strings in its observations."""

    _text_rows: list[tuple[str, ...]] | None = None

    def reset_wait(self, *args: Any, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = super().reset_wait(*args, **kwargs)
        return self._restore_text(obs, info), info

    def step_wait(self, *args: Any, **kwargs: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        obs, reward, terminated, truncated, info = super().step_wait(*args, **kwargs)
        return self._restore_text(obs, info), reward, terminated, truncated, info

    def _restore_text(self, obs: Any, info: dict[str, Any]) -> Any:
        """Take the workers' strings out of ``info`` (and its ``final_info``) and put them in
        ``obs``; a sub-env that sent none (one a masked reset left alone) keeps its last ones."""
        final = info.get("final_info")
        if isinstance(final, dict):  # a step that ended an episode and reset it (same-step autoreset)
            final.pop(TEXT_INFO, None)
            final.pop("_" + TEXT_INFO, None)
        sent, mask = info.pop(TEXT_INFO, None), info.pop("_" + TEXT_INFO, None)
        rows = self._text_rows or [()] * self.num_envs
        if sent is not None:
            rows = [sent[i] if mask[i] else rows[i] for i in range(self.num_envs)]
        self._text_rows = rows
        if not all(rows):
            return obs
        restored, _ = _put_texts(self.single_observation_space, obs, rows)
        if not self.copy:
            self.observations = restored
        return restored


def async_vector_env(env_fns: Sequence[Callable[[], Any]], **kwargs: Any) -> TextAsyncVectorEnv:
    """A :class:`TextAsyncVectorEnv` over ``env_fns`` (keyword arguments are passed on to
    ``AsyncVectorEnv``; ``context`` defaults to :func:`~vlnverse.sim.gl.context.start_method`)."""
    kwargs.setdefault("context", start_method())
    return TextAsyncVectorEnv([WorkerEnvFn(fn) for fn in env_fns], **kwargs)
