"""Vector envs whose worker processes render safely and in parallel.

:func:`async_vector_env` is gymnasium's ``AsyncVectorEnv`` with each worker prepared for
the GL renderer first (one llvmpipe rasterizer thread per fresh worker, see
:func:`vlnverse.sim.gl.context.worker_setup`) and started the way this process allows
(``fork`` unless its llvmpipe runs threads, then ``forkserver``; see
:func:`vlnverse.sim.gl.context.start_method`)::

    envs = async_vector_env([functools.partial(vlnverse.make, scene=path)] * 2)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from vlnverse.sim.gl.context import start_method, worker_setup


@dataclass(frozen=True)
class WorkerEnvFn:
    """An env factory run in a worker process: sets up the worker's renderer, then makes the env."""

    make: Callable[[], Any]

    def __call__(self) -> Any:
        worker_setup()
        return self.make()


def async_vector_env(env_fns: Sequence[Callable[[], Any]], **kwargs: Any) -> Any:
    """``gymnasium.vector.AsyncVectorEnv`` over ``env_fns`` (keyword arguments are passed on;
    ``context`` defaults to :func:`~vlnverse.sim.gl.context.start_method`)."""
    from gymnasium.vector import AsyncVectorEnv

    kwargs.setdefault("context", start_method())
    return AsyncVectorEnv([WorkerEnvFn(fn) for fn in env_fns], **kwargs)
