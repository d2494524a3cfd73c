"""The headless OpenGL context (EGL on Mesa's llvmpipe) and the renderer choice.

One standalone context serves every simulator of a process (a forked child makes its
own); threads take turns with it (:func:`current_context`). ``renderer="auto"`` picks ``gl`` where such a context can be made and ``tiny``
(PyBullet's TinyRenderer) otherwise, logging the reason once per process. Setting
``VLNVERSE_DISABLE_EGL=1`` makes EGL count as unavailable (to exercise the fallback).

llvmpipe rasterizes in the calling thread: ``LP_NUM_THREADS`` defaults to 0 here (Mesa
reads it when the first context is made). That keeps processes fork-safe (a child forked
from a process whose llvmpipe has rasterizer threads hangs on its first draw, as
``AsyncVectorEnv`` and the eval pool fork workers), and parallel envs scale, one core
each. Images are the same bytes whatever ``LP_NUM_THREADS`` is.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from vlnverse.errors import ConfigError

logger = logging.getLogger(__name__)

RENDERERS = ("auto", "gl", "tiny")
DISABLE_ENV = "VLNVERSE_DISABLE_EGL"
#: Mesa's EGL vendor file: preferring it keeps images identical on machines with a GPU driver.
MESA_EGL_VENDOR = Path("/usr/share/glvnd/egl_vendor.d/50_mesa.json")

_state: dict = {"pid": None, "context": None, "error": None, "logged": False}
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
    """
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
    os.environ.setdefault("LP_NUM_THREADS", "0")
    if MESA_EGL_VENDOR.is_file():
        os.environ.setdefault("__EGL_VENDOR_LIBRARY_FILENAMES", str(MESA_EGL_VENDOR))
    context = moderngl.create_standalone_context(backend="egl", require=330)
    logger.debug("OpenGL context: %s, %s", context.info["GL_RENDERER"], context.info["GL_VERSION"])
    return context


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
