"""Vector envs whose worker processes render safely and in parallel.

:func:`async_vector_env` is gymnasium's ``AsyncVectorEnv`` with each worker prepared for
the GL renderer first (one llvmpipe rasterizer thread per fresh worker, see
:func:`vlnverse.sim.gl.context.worker_setup`) and started the way this process allows
(``fork`` unless its llvmpipe runs threads, then ``forkserver``; see
:func:`vlnverse.sim.gl.context.start_method`)::

    envs = async_vector_env([functools.partial(vlnverse.make, scene=path)] * 2)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from vlnverse.sim.gl.context import start_method, worker_setup


@dataclass(frozen=True)
class WorkerEnvFn:
    """An env factory run in a worker process: sets up the worker's renderer, then makes the env.

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
        return self.make()


def async_vector_env(env_fns: Sequence[Callable[[], Any]], **kwargs: Any) -> Any:
    """``gymnasium.vector.AsyncVectorEnv`` over ``env_fns`` (keyword arguments are passed on;
    ``context`` defaults to :func:`~vlnverse.sim.gl.context.start_method`)."""
    from gymnasium.vector import AsyncVectorEnv

    kwargs.setdefault("context", start_method())
    return AsyncVectorEnv([WorkerEnvFn(fn) for fn in env_fns], **kwargs)
