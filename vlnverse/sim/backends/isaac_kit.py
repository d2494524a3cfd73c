"""Kit process plumbing for the ``isaac`` backend: one app, one live backend, two drivers.

Isaac Sim allows one Kit application per process: ``SimulationApp.close()`` shuts Kit down
and releases the Carbonite framework (``simulation_app.py`` 763–838), so a backend that
closed it would leave the next one driving a dead app. The app this process starts is
therefore module-level, started on first use and closed at interpreter exit.

``World`` is a process singleton too (``simulation_context.py`` 177–187), so at most one
backend is live at a time (:func:`claim`).

How Kit work is driven depends on who runs Kit's loop:

* :class:`StandaloneDriver`: a ``SimulationApp`` script (``builtins.ISAAC_LAUNCHED_FROM_TERMINAL``
  is False, ``simulation_app.py`` 226). This process pumps Kit with ``app.update()``.
* :class:`ExtensionDriver`: inside the Isaac Sim app (the flag is True,
  ``isaacsim.core.api/__init__.py`` 21–23). Kit owns the loop; ``World.reset``/``step(render=True)``
  and ``rep.orchestrator.step`` are documented as not intended there
  (``simulation_context.py`` 624–631, 672–679). Work runs as coroutines on Kit's event loop,
  submitted from a worker thread that waits for each result.

The backend writes each Kit operation once, as a coroutine awaiting the driver's frame
primitives; :meth:`StandaloneDriver.run` completes it at once, :meth:`ExtensionDriver.run`
schedules it on Kit's loop.
"""

from __future__ import annotations

import asyncio
import atexit
import builtins
import logging
import sys
import threading
from collections.abc import Coroutine
from typing import Any

from vlnverse.errors import SimulationError

logger = logging.getLogger(__name__)

_state: dict[str, Any] = {"app": None, "config": None, "app_closed": False, "live": None, "loop": None}
_lock = threading.Lock()


def in_kit() -> bool:
    """Whether a Kit application runs in this process (started here or hosting us)."""
    return "omni.kit.app" in sys.modules


def start_app(launch_config: dict) -> None:
    """Start this process's ``SimulationApp`` once; a no-op inside a running Kit app.

    It must come before any ``pxr``/``omni`` import: ``SimulationApp`` warns that modules
    loaded earlier "might not be loaded correctly" (``simulation_app.py`` 208–222).

    Raises:
        SimulationError: The app of this process was already closed (Kit cannot restart).
    """
    with _lock:
        if _state["app_closed"]:
            raise SimulationError("the Isaac Sim app of this process was closed at exit; Kit cannot be restarted")
        if _state["app"] is not None or in_kit():
            if _state["app"] is not None and launch_config != _state["config"]:
                logger.info("the Isaac Sim app already runs with %s; %s is not applied", _state["config"], launch_config)
            return
        from isaacsim import SimulationApp  # must precede every other omni/isaacsim import

        _state["app"], _state["config"] = SimulationApp(launch_config), launch_config
        atexit.register(close_app)


def close_app() -> None:
    """Close the app this process started (registered with :mod:`atexit`)."""
    with _lock:
        app, _state["app"] = _state["app"], None
        if app is None:
            return
        _state["app_closed"] = True
    app.close()


def claim(backend: object) -> None:
    """Make ``backend`` this process's live Isaac backend.

    Raises:
        SimulationError: Another backend is live (Isaac Sim's ``World`` is a singleton, and a
            second scene or agent would clear or collide with the first).
    """
    with _lock:
        live = _state["live"]
        if live is not None and live is not backend:
            raise SimulationError(
                "an Isaac Sim backend is already live in this process (Isaac Sim's World is a process "
                "singleton); close it before creating another, or use one env at a time"
            )
        _state["live"] = backend


def release(backend: object) -> None:
    """Forget ``backend`` as the live one (when it is)."""
    with _lock:
        if _state["live"] is backend:
            _state["live"] = None


def bind_kit_loop(loop: asyncio.AbstractEventLoop | None) -> None:
    """Register Kit's main event loop; call it on that loop's thread (the extension does at
    startup). ``None`` unbinds."""
    _state["loop"] = None if loop is None else (loop, threading.get_ident())


def standalone() -> bool:
    """Whether this process pumps Kit itself (a ``SimulationApp`` script).

    ``isaacsim.core.api`` defines the flag as True when Kit was not started by
    ``SimulationApp`` (``__init__.py`` 21–23), so an undefined flag means "inside Kit".
    """
    return getattr(builtins, "ISAAC_LAUNCHED_FROM_TERMINAL", True) is False


def make_driver() -> StandaloneDriver | ExtensionDriver:
    """The driver for this process.

    Raises:
        SimulationError: Inside the Isaac Sim app with no event loop bound.
    """
    if standalone():
        return StandaloneDriver()
    bound = _state["loop"]
    if bound is None:
        raise SimulationError(
            "inside the Isaac Sim app the isaac backend runs through the vlnverse.isaac extension "
            "(it binds Kit's event loop: vlnverse.sim.backends.isaac_kit.bind_kit_loop)"
        )
    return ExtensionDriver(*bound)


def run_now(coro: Coroutine) -> Any:
    """Run a coroutine that never suspends to completion here and return its value.

    Raises:
        SimulationError: It awaited something pending (a standalone step must not).
    """
    try:
        coro.send(None)
    except StopIteration as finished:
        return finished.value
    coro.close()
    raise SimulationError("a standalone Kit operation waited for a pending future")


PLAY_SIMULATIONS = "/app/player/playSimulations"


class StandaloneDriver:
    """Pumps Kit synchronously (``SimulationApp`` scripts, tests, ``vlnverse eval``)."""

    extension = False

    def hold_physics(self, held: bool) -> None:
        """Nothing to hold: no Kit frame runs unless this process asks for it."""

    def run(self, coro: Coroutine) -> Any:
        return run_now(coro)

    async def frame(self) -> None:
        """One Kit update (physics while the timeline plays, then one render)."""
        import omni.kit.app

        omni.kit.app.get_app().update()

    async def open_stage(self, path: str) -> bool:
        from isaacsim.core.utils.stage import open_stage

        return bool(open_stage(path))

    async def init_world(self, world: Any) -> None:
        """Nothing to do: ``World()`` already ran ``_init_stage`` (``simulation_context.py`` 149–167)."""

    async def reset_world(self, world: Any) -> None:
        world.reset()

    async def warm_frame(self, world: Any) -> None:
        """A physics + render step, as paper C.2.1 warms RTX up."""
        world.step(render=True)

    async def capture(self, rt_subframes: int) -> None:
        import omni.replicator.core as rep

        rep.orchestrator.step(rt_subframes=rt_subframes, delta_time=0.0, pause_timeline=False)

    async def stop_world(self, world: Any) -> None:
        world.stop()


class ExtensionDriver:
    """Runs Kit work on Kit's event loop, for callers on another thread."""

    extension = True
    _saved_play: Any = None
    _held = False

    def hold_physics(self, held: bool) -> None:
        """Stop (or let again) Kit's own frames stepping physics while the timeline plays, so
        the agent moves only on the backend's physics steps. ``render_async`` does the same
        around one frame (``simulation_context.py`` 782–784)."""
        import carb.settings

        settings = carb.settings.get_settings()
        if held and not self._held:
            self._saved_play = settings.get(PLAY_SIMULATIONS)
            settings.set(PLAY_SIMULATIONS, False)
        elif not held and self._held:
            settings.set(PLAY_SIMULATIONS, True if self._saved_play is None else self._saved_play)
        self._held = held

    def __init__(self, loop: asyncio.AbstractEventLoop, loop_thread: int) -> None:
        self.loop = loop
        self.loop_thread = loop_thread

    def run(self, coro: Coroutine) -> Any:
        """Schedule ``coro`` on Kit's loop and wait for its result (from a worker thread).

        Raises:
            SimulationError: Called on the loop's own thread, where waiting would block the
                very frames the work needs.
        """
        if threading.get_ident() == self.loop_thread:
            coro.close()
            raise SimulationError(
                "inside the Isaac Sim app the isaac backend is driven from a worker thread, never from "
                "Kit's main loop (see AgentRun / TeleopLoop in vlnverse.isaac_ui)"
            )
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    async def frame(self) -> None:
        import omni.kit.app

        await omni.kit.app.get_app().next_update_async()

    async def open_stage(self, path: str) -> bool:
        import omni.usd

        result, _error = await omni.usd.get_context().open_stage_async(path)
        return bool(result)

    async def init_world(self, world: Any) -> None:
        """``World()`` skipped ``_init_stage`` in Kit; this creates the physics context
        (``simulation_context.py`` 568–607, as ``base_sample.py`` 47–48 does)."""
        await world.initialize_simulation_context_async()

    async def reset_world(self, world: Any) -> None:
        """``reset_async`` (stop, play, physics views) with Kit's frames as Kit runs them."""
        held = self._held
        self.hold_physics(False)
        try:
            await world.reset_async()
        finally:
            self.hold_physics(held)

    async def warm_frame(self, world: Any) -> None:
        """A physics-only step, then one Kit frame renders it."""
        world.step(render=False)
        await self.frame()

    async def capture(self, rt_subframes: int) -> None:
        import omni.replicator.core as rep

        await rep.orchestrator.step_async(rt_subframes=rt_subframes, delta_time=0.0, pause_timeline=False)

    async def stop_world(self, world: Any) -> None:
        await world.stop_async()
