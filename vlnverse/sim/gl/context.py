"""The headless OpenGL context (EGL on Mesa's llvmpipe) and the renderer choice.

One standalone context serves every simulator of a process (a forked child makes its
own); threads take turns with it (:func:`current_context`). ``renderer="auto"`` picks ``gl`` where such a context can be made and ``tiny``
(PyBullet's TinyRenderer) otherwise, logging the reason once per process. Setting
``VLNVERSE_DISABLE_EGL=1`` makes EGL count as unavailable (to exercise the fallback).

Threads (``LP_NUM_THREADS``, read by Mesa when a process first makes a context; images
are the same bytes whatever it is). The settings below are in ``os.environ`` only while the
context is made; the caller's environment is left as it was:

- A process rasterizes in its calling thread by default (``LP_NUM_THREADS=0`` unless set),
  which keeps it fork-safe: a child forked from a process whose llvmpipe runs rasterizer
  threads would hang on its first draw, as the threads do not survive the fork. Such a
  child gets a :class:`~vlnverse.errors.SimulationError` here instead.
- Worker processes call :func:`worker_setup` first: a worker with fresh Mesa state then
  uses ``LP_NUM_THREADS=1`` (or ``$VLNVERSE_WORKER_LP_NUM_THREADS``), one rasterizer
  thread, so parallel workers take a core each; a worker forked from a process that has
  rendered keeps the parent's single-threaded llvmpipe.
- :func:`start_method` is how pools start such workers: ``fork`` where this process's
  llvmpipe has no threads, else ``forkserver`` (workers from a clean server process).
- Mesa's on-disk shader cache is off (``MESA_SHADER_CACHE_DISABLE=true`` unless set): it
  runs a writer thread, and a child forked while that thread waited hangs for good on its
  first shader compile (a pthread condition variable's waiter that does not survive the
  fork). A worker with rasterizer threads, whose pools start from a forkserver anyway, has
  it on (unless set): its first env then loads the scene shader and the mipmap shaders
  compiled by an earlier process instead of compiling them (about 0.3 s on one core).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import logging
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from vlnverse.errors import ConfigError, SimulationError

logger = logging.getLogger(__name__)

RENDERERS = ("auto", "gl", "tiny")
DISABLE_ENV = "VLNVERSE_DISABLE_EGL"
#: Rasterizer threads of a worker process (see :func:`worker_setup`), default 1.
WORKER_THREADS_ENV = "VLNVERSE_WORKER_LP_NUM_THREADS"
#: Mesa's EGL vendor file: preferring it keeps images identical on machines with a GPU driver.
MESA_EGL_VENDOR = Path("/usr/share/glvnd/egl_vendor.d/50_mesa.json")

#: ``threads``: rasterizer threads of the Mesa state in this process's memory (None before
#: the first context; kept across a fork, as the memory is, while the threads are not).
_state: dict = {"pid": None, "context": None, "error": None, "logged": False, "threads": None}
_lock = threading.RLock()


@contextlib.contextmanager
def current_context() -> Iterator:
    """The shared context, current in the calling thread, for one thread at a time (envs
    may be stepped from several threads, e.g. an eval worker's concurrent episodes)."""
    with _lock:
        context = gl_context()
        with context:
            yield context


def gl_context():
    """The process's shared ``moderngl`` context on headless EGL.

    Raises:
        ConfigError: EGL is disabled, or no context can be made (the message says why).
        SimulationError: This process was forked from one whose llvmpipe runs rasterizer threads.
    """
    with _lock:  # threads building envs at once make one context
        return _process_context()


def _process_context():
    if _state["threads"] and _state["pid"] != os.getpid():
        raise SimulationError(
            f"this process was forked from one whose llvmpipe runs {_state['threads']} rasterizer thread(s), "
            f"so its first draw would hang: start rendering workers with the start method "
            f"vlnverse.sim.gl.context.start_method() gives ('forkserver' here), or set LP_NUM_THREADS=0")
    if _state["pid"] != os.getpid():
        _state.update(pid=os.getpid(), context=None, error=None)
        try:
            _state["context"] = _create()
        except Exception as exc:  # noqa: BLE001 - any failure means "no GL here", with its reason
            _state["error"] = f"{type(exc).__name__}: {exc}".strip()
    if _state["context"] is None:
        raise ConfigError(f"renderer 'gl' is unavailable: {_state['error']}")
    return _state["context"]


def _create():
    if os.environ.get(DISABLE_ENV, "").strip() not in ("", "0"):
        raise RuntimeError(f"EGL disabled by {DISABLE_ENV}")
    try:
        import moderngl
    except ImportError as exc:
        raise RuntimeError("moderngl is not installed (pip install moderngl)") from exc
    settings = {"LP_NUM_THREADS": "0", "MESA_SHADER_CACHE_DISABLE": "true"}  # fork-safe (see the module docstring)
    if MESA_EGL_VENDOR.is_file():
        settings["__EGL_VENDOR_LIBRARY_FILENAMES"] = str(MESA_EGL_VENDOR)
    with _environ_defaults(settings) as seen:
        context = moderngl.create_standalone_context(backend="egl", require=330)
    if _state["threads"] is None:  # else a forked child: Mesa's state, single-threaded, is the parent's
        _state["threads"] = _thread_count(seen["LP_NUM_THREADS"])
    # As made, the context stays current in this thread: with rasterizer threads, another
    # thread then cannot compile a program in it, so it is entered and left once here.
    with context:
        logger.debug("OpenGL context: %s, %s", context.info["GL_RENDERER"], context.info["GL_VERSION"])
    return context


@contextlib.contextmanager
def _environ_defaults(defaults: dict[str, str]) -> Iterator[dict[str, str]]:
    """``defaults`` in ``os.environ`` (where unset) while Mesa and libglvnd read them as the
    context is made, then the caller's environment back: a child process the caller starts
    later (its own renderer) must not inherit them. Yields the values in force."""
    added = [name for name in defaults if name not in os.environ]
    for name in added:
        os.environ[name] = defaults[name]
    try:
        yield {name: os.environ[name] for name in defaults}
    finally:
        for name in added:
            os.environ.pop(name, None)


def resolve_renderer(name: str) -> str:
    """``gl`` or ``tiny`` for a renderer name; ``auto`` tries to make a GL context.

    Raises:
        ConfigError: Unknown name, or ``gl`` asked for where it cannot run.
    """
    if name not in RENDERERS:
        raise ConfigError(f"unknown renderer {name!r}; valid: {', '.join(RENDERERS)}")
    if name == "tiny":
        return name
    try:
        gl_context()
    except ConfigError as exc:
        if name == "gl":
            raise ConfigError(f"{exc} (install Mesa's EGL: apt-get install libegl1 libegl-mesa0 "
                              f"libgl1-mesa-dri; or use renderer='tiny')") from None
        if not _state["logged"]:
            logger.warning("renderer 'auto' → 'tiny' (PyBullet's TinyRenderer): no headless OpenGL (%s)",
                           _state["error"])
            _state["logged"] = True
        return "tiny"
    if name == "auto" and not _state["logged"]:
        logger.info("renderer 'auto' → 'gl' (headless EGL: %s)", _state["context"].info["GL_RENDERER"])
        _state["logged"] = True
    return "gl"


def finish(context) -> None:
    """Wait for the GL work queued on ``context`` (current in this thread) to be done, with
    the GIL released: llvmpipe rasterizes here, and moderngl's own calls keep the GIL, so
    other threads (a lookup running alongside, see :mod:`vlnverse.sim.gl.overlap`) can run."""
    gl_finish = _gl_finish()
    if gl_finish is None:
        context.finish()
    else:
        gl_finish()


@functools.cache
def _gl_finish():
    """``glFinish`` through ctypes, which releases the GIL during the call (None without libGL)."""
    try:
        return ctypes.CDLL("libGL.so.1").glFinish
    except (OSError, AttributeError):
        return None


def _thread_count(value: str) -> int:
    """Rasterizer threads an ``LP_NUM_THREADS`` value asks for (unparsable counts as threaded)."""
    return int(value) if value.strip().isdigit() else 1


def worker_setup() -> None:
    """Prepare a pool worker (an env worker, an eval worker) for rendering; call it first.

    With fresh Mesa state (no context made in this process's memory), llvmpipe will use
    ``$VLNVERSE_WORKER_LP_NUM_THREADS`` (default 1) rasterizer threads, and with threads
    Mesa's on-disk shader cache (unless ``MESA_SHADER_CACHE_DISABLE`` is set). A worker
    forked after its parent rendered keeps the parent's single-threaded llvmpipe.
    """
    if _state["threads"] is None:
        threads = os.environ.get(WORKER_THREADS_ENV, "1")
        os.environ["LP_NUM_THREADS"] = threads
        if _thread_count(threads):  # forks no renderer (start_method): the cache's thread is safe
            os.environ.setdefault("MESA_SHADER_CACHE_DISABLE", "false")


def start_method() -> str:
    """The ``multiprocessing`` start method for workers that may render: ``fork`` (Linux)
    while this process's llvmpipe runs no rasterizer threads, else ``forkserver``;
    ``spawn`` off Linux."""
    if not sys.platform.startswith("linux"):
        return "spawn"
    return "forkserver" if _state["threads"] else "fork"
