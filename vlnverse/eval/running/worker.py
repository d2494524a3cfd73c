"""The unit of evaluation work and the worker that does it (in-process, pool or Ray actor).

A :class:`RunSpec` (everything every episode of a run shares) and a :class:`WorkItem`
(one episode under one physics mode) are plain picklable values. An :class:`EvalWorker`
keeps a few envs per :attr:`WorkItem.env_key` (scene, physics) and resets an idle one to the
next episode of its key instead of building another (giving it the episode's task
components first when they differ: :meth:`~vlnverse.envs.nav_env.NavEnv.set_task`), so a
worker loads each scene once while it works through that scene's episodes; the executors
hand each of its concurrent episodes ("lanes") items of one key in a row
(:mod:`vlnverse.eval.running.executors`).

LLM agents: the worker builds the run's model client (``RunSpec.llm``: a
:func:`vlnverse.llm.make_llm` spec, with the cache and transcript wrappers) — in the
worker, never in the parent — and hands each agent a :class:`~vlnverse.llm.budget.UsageMeter`
around it. With ``concurrency`` K > 1 the worker runs K episodes at once on threads, each
with its own agent and env, so the waits for the model overlap; env work (reset, step,
building envs) takes one lock, so it stays on one core.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import threading
import time
import traceback
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlnverse.errors import ConfigError, LLMBudgetExceeded, VLNVerseError, WorkerError
from vlnverse.eval.agent import Agent, as_agent
from vlnverse.eval.reporting.viewer_map import SceneMapWriter
from vlnverse.eval.running.runner import EpisodeTiming, run_episode
from vlnverse.eval.running.store import TRACE_TEXT_CHARS, error_record
from vlnverse.eval.scoring.episode_record import MetricsConfig
from vlnverse.processes import exit_with_parent

logger = logging.getLogger(__name__)

ENV_CACHE_SIZE = 2
"""Idle envs a worker keeps per concurrent episode (items arrive grouped, so 2 covers a switch)."""
HARD_LIMIT_GRACE_S = (2.0, 60.0)
"""Bounds of the time an episode gets past its limit (a quarter of the limit) to end by
itself, for its env reset, scoring and plot, before its worker process is killed."""


def hard_limit(timeout: float | None) -> float | None:
    """Seconds after its start at which an episode that has not ended is stopped by killing
    its worker process (None: no limit): ``timeout`` plus a grace of a quarter of it,
    within :data:`HARD_LIMIT_GRACE_S`. Before that, the limit is cooperative: model calls
    end at ``timeout`` and the runner checks it between the agent's calls
    (:mod:`vlnverse.eval.running.runner`), which stops no agent that never returns."""
    if timeout is None:
        return None
    low, high = HARD_LIMIT_GRACE_S
    return timeout + min(high, max(low, timeout / 4))


@dataclass(frozen=True)
class RunSpec:
    """What every episode of a run shares (picklable: it is sent to every worker).

    Attributes:
        agent: A registered agent name / ``module:attr``, or an agent object (an
            :class:`~vlnverse.eval.agent.Agent`, policy or callable; pickled to workers).
        agent_config: The agent's config mapping (for a name).
        seed: Run seed (env resets and agents' randomness derive from it per episode).
        backend: Simulator backend.
        renderer: Camera renderer of the embedded backend (``auto``, ``gl``, ``tiny``).
        max_steps: Step budget per episode (``None``: the action space's default).
        metrics: Scoring settings.
        plots_dir: Folder for trajectory pictures and viewer frames (``None``: none).
        viewer_dir: The run's ``viewer/`` folder, where workers write each scene's map
            for the episode pages (``None``: pages without a map).
        occupancy_resolution: Grid resolution of the navigation maps (m).
        instruction_view: What long-horizon agents read (see
            :data:`vlnverse.envs.episode.INSTRUCTION_VIEWS`).
        llm: The agents' model, a :func:`vlnverse.llm.make_llm` spec (None: no model).
        llm_cache: On-disk response cache folder (None: no cache).
        llm_record: JSONL transcript every call is appended to (None: none).
        budget: The run's LLM budget ledger (None: no budget).
        concurrency: Episodes a worker runs at once.
        oracle_llm: The dialogue oracle's model spec (None: the template oracle).
        oracle_record: JSONL transcript every oracle call is appended to (None: none).
        episode_timeout: Wall-clock limit of one episode (s; ``None``: none).
        trace_text_chars: The most characters of one text of an agent trace kept.
    """

    agent: Any
    agent_config: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0
    backend: str = "bullet"
    renderer: str = "auto"
    max_steps: int | None = None
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    plots_dir: str | None = None
    viewer_dir: str | None = None
    occupancy_resolution: float = 0.05
    instruction_view: str = "full"
    llm: str | None = None
    llm_cache: str | None = None
    llm_record: str | None = None
    budget: Any = None
    concurrency: int = 1
    oracle_llm: str | None = None
    oracle_record: str | None = None
    episode_timeout: float | None = None
    trace_text_chars: int = TRACE_TEXT_CHARS


@dataclass(frozen=True)
class WorkItem:
    """One episode under one physics mode.

    Attributes:
        episode: The episode's canonical dict (:meth:`vlnverse.tasks.episode.Episode.to_dict`).
        physics: ``strict``, ``slide`` or ``tel_hop``.
        scene_file: Absolute path of the episode's USD scene.
        reference_image: Absolute path of the visual-reference image, if any.
        plot: Draw this episode's trajectory picture.
        expired: The item already ran past its hard time limit in a worker process that
            was killed for it; it is recorded as timed out without running the agent.
    """

    episode: Mapping[str, Any]
    physics: str
    scene_file: str
    reference_image: str | None = None
    plot: bool = False
    expired: bool = False

    @property
    def key(self) -> tuple[str, str]:
        return str(self.episode["episode_id"]), self.physics

    @property
    def task(self) -> str:
        return str(self.episode.get("task", ""))

    @property
    def env_key(self) -> tuple[str, str]:
        """What an env for this item is built from: items with the same key run in the
        same env, each reset to its own episode (with its own task components)."""
        return self.scene_file, self.physics


@dataclass(frozen=True)
class WorkResult:
    """A finished item: its ``episodes.jsonl`` record and where the time went.

    ``record`` is None when the run's LLM budget ran out during the episode; ``stopped``
    then says why (the item is left for the resumed run).
    """

    record: dict[str, Any] | None
    timing: EpisodeTiming
    stopped: str | None = None


def env_cache_size(backend: str) -> int:
    """Envs a worker keeps for ``backend``: one for Isaac Sim, whose ``World`` is a process
    singleton (a second live env would clear the first), else :data:`ENV_CACHE_SIZE`."""
    from vlnverse.sim.backend import resolve_backend

    return 1 if resolve_backend(backend) == "isaac" else ENV_CACHE_SIZE


def build_agent(spec: RunSpec, llm: Any = None) -> Agent:
    """The run's agent (a fresh one from the registry, or the given object), given ``llm``."""
    if isinstance(spec.agent, str):
        from vlnverse.eval.registry import make_agent

        return make_agent(spec.agent, spec.agent_config, llm=llm)
    if llm is not None:
        raise ConfigError("an agent given as an object cannot be given a model (--llm); register it by name")
    return as_agent(spec.agent)


def build_llm(spec: RunSpec) -> Any:
    """The run's shared model client (None without ``spec.llm``)."""
    if spec.llm is None:
        return None
    from vlnverse.llm import make_llm

    client = make_llm(spec.llm, cache_dir=spec.llm_cache, record=spec.llm_record)
    if client is not None and spec.budget is not None and spec.budget.max_usd is not None:
        from vlnverse.llm.types import Usage

        if client.cost(Usage(1000, 1000)) is None:
            client.close()
            raise ConfigError(f"--budget-usd needs the price of model {client.model!r}, which the price "
                              "table lacks; use --budget-tokens, or add the model to the price table")
    return client


def _episode_caps(agent: Agent) -> tuple[int | None, float | None]:
    """The agent config's per-episode LLM caps (``max_tokens_per_episode``,
    ``max_usd_per_episode``; 0 or absent: none)."""
    config = getattr(agent, "config", None)
    return (getattr(config, "max_tokens_per_episode", None) or None,
            getattr(config, "max_usd_per_episode", None) or None)


@dataclass
class _Slot:
    """One concurrent episode's agent and usage meter."""

    agent: Agent
    meter: Any = None


def _started(starting: contextlib.ExitStack, frames: Any) -> Any:
    """An episode's ``on_observation``: its start ends (``starting`` is closed) at its first
    observation, which ``frames`` (a frame capture, or None) then records as every other."""

    def observe(step: int, observation: Mapping[str, Any]) -> None:
        starting.close()
        if frames is not None:
            frames(step, observation)

    return observe


def build_oracle(spec: RunSpec) -> Any:
    """The dialogue oracle's client shared by the worker's envs when its calls are recorded
    (None otherwise: each env builds its own from ``spec.oracle_llm``)."""
    if spec.oracle_llm is None or spec.oracle_record is None:
        return None
    from vlnverse.llm import make_llm

    return make_llm(spec.oracle_llm, record=spec.oracle_record)


class EvalWorker:
    """Runs work items, up to ``spec.concurrency`` at once, each with its own agent and env.

    Raises (from :meth:`run`): errors building an env (missing scene, bad config) are
    raised, since they are not the agent's fault and would fail every episode alike.
    """

    def __init__(self, spec: RunSpec) -> None:
        if not isinstance(spec.concurrency, int) or spec.concurrency < 1:
            raise ConfigError(f"concurrency must be a positive integer, got {spec.concurrency!r}")
        if spec.concurrency > 1 and env_cache_size(spec.backend) == 1:
            raise ConfigError(f"the {spec.backend} backend runs one env per process; use --concurrency 1")
        self.spec = spec
        self._env_budget = env_cache_size(spec.backend) * spec.concurrency  # envs kept, busy or idle
        self.llm = build_llm(spec)
        self.oracle = build_oracle(spec)
        self._busy_envs = 0
        self._lock = threading.Lock()
        self.env_lock = threading.Lock()
        self._slots: list[_Slot] = []
        self._all_slots: list[_Slot] = []
        self._idle_envs: OrderedDict[int, tuple[tuple[Any, ...], Any]] = OrderedDict()
        self._maps = None if spec.viewer_dir is None else SceneMapWriter(spec.viewer_dir)
        try:
            self._slots.append(self._new_slot())  # a bad agent or config fails here, once
        except BaseException:
            self.close()
            raise

    @property
    def agent(self) -> Agent:
        """The first slot's agent (its action space and sensors are the run's)."""
        return self._all_slots[0].agent

    def _new_slot(self) -> _Slot:
        if self.llm is None:
            slot = _Slot(build_agent(self.spec))
        else:
            from vlnverse.llm.budget import UsageMeter

            meter = UsageMeter(self.llm, ledger=self.spec.budget)
            slot = _Slot(build_agent(self.spec, llm=meter), meter)
            meter.max_tokens, meter.max_usd = _episode_caps(slot.agent)
        self._all_slots.append(slot)
        return slot

    def _take_slot(self) -> _Slot:
        with self._lock:
            if self._slots:
                return self._slots.pop()
        slot = self._new_slot()
        return slot

    def _take_env(self, item: WorkItem) -> tuple[Any, bool]:
        """An env for ``item``, and whether it was built: an idle one of its key (one with
        the item's task components if there is one, else given them under the env lock;
        the runner resets it to the item's episode), else a new one built under the env lock."""
        from vlnverse.envs.tasks import wanted_components

        key, components = item.env_key, wanted_components(item.task)
        with self._lock:
            idle = [(env_id, env) for env_id, (env_key, env) in self._idle_envs.items() if env_key == key]
            if idle:
                env_id, env = next(((i, e) for i, e in idle if wanted_components(e.task) == components), idle[0])
                del self._idle_envs[env_id]
                self._busy_envs += 1
        if idle:
            if wanted_components(env.task) != components:
                with self.env_lock:
                    env.set_task(item.task, **self._task_settings(components))
            return env, False
        from vlnverse.envs.nav_env import NavEnv

        scene_file, physics = key
        with self.env_lock:
            self._close_idle(spare=1)
            env = NavEnv(scene_file, backend=self.spec.backend, renderer=self.spec.renderer, physics=physics,
                         action_space=self.agent.action_space, sensors=self.agent.sensors,
                         max_episode_steps=self.spec.max_steps,
                         occupancy_resolution=self.spec.occupancy_resolution, task=item.task,
                         instruction_view=self.spec.instruction_view, **self._task_settings(components))
        with self._lock:
            self._busy_envs += 1
        return env, True

    def _task_settings(self, components: tuple[str, ...]) -> dict[str, Any]:
        """The env's task settings for episodes with ``components``: the dialogue oracle's
        model only where there is a dialogue (its client is made for every env given one)."""
        return {"oracle_llm": (self.oracle or self.spec.oracle_llm) if "dialogue" in components else None}

    def _close_idle(self, spare: int = 0) -> None:
        """Close the oldest idle envs until ``spare`` more fit in the worker's env budget
        (call with the env lock held)."""
        with self._lock:
            room = max(0, self._env_budget - self._busy_envs - spare)
            old = [self._idle_envs.popitem(last=False)[1][1] for _ in range(max(0, len(self._idle_envs) - room))]
        for env in old:
            env.close()

    def _give_back(self, item: WorkItem, env: Any) -> None:
        with self._lock:
            self._busy_envs -= 1
            self._idle_envs[id(env)] = (item.env_key, env)
            over = len(self._idle_envs) > self._env_budget - self._busy_envs
        if over:  # the env lock only to close one: the other episodes' steps wait for it
            with self.env_lock:
                self._close_idle()

    def run(self, item: WorkItem, on_start: Any = None) -> WorkResult:
        """Evaluate one item (agent failures are recorded in the result, not raised);
        safe to call from up to ``spec.concurrency`` threads at once. ``on_start()`` is
        called once its env is ready, as its episode starts."""
        from vlnverse.tasks.episode import Episode

        episode = Episode.from_dict(item.episode)
        slot = self._take_slot()
        env = None
        starting = contextlib.ExitStack()  # the scene maps wait until the first observation
        try:
            t0 = time.perf_counter()
            if self._maps is not None:
                starting.enter_context(self._maps.starting())
            env, built = self._take_env(item)
            if self._maps is not None:
                self._maps.add(item.episode["scene_id"], env.scene, env.occupancy)
            build = time.perf_counter() - t0
            if on_start is not None:
                on_start()
            try:
                record, timing = run_episode(
                    env, slot.agent, episode, physics=item.physics, seed=self.spec.seed,
                    metrics=self.spec.metrics, reference_image=item.reference_image,
                    env_lock=self.env_lock, usage=slot.meter, timeout=self.spec.episode_timeout,
                    on_observation=_started(starting, self._frames(item, env)), timed_out=item.expired,
                    trace_text_chars=self.spec.trace_text_chars,
                )
            except LLMBudgetExceeded as exc:
                logger.info("episode %s (%s) left for later: %s", episode.episode_id, item.physics, exc)
                return WorkResult(None, EpisodeTiming(), stopped=str(exc))
            timing.build, timing.built = build, built
            record["plot"] = None
            if item.plot and self.spec.plots_dir:
                record["plot"] = self._plot(env, record)
            return WorkResult(record, timing)
        finally:
            starting.close()
            if env is not None:
                self._give_back(item, env)
            with self._lock:
                self._slots.append(slot)

    def _frames(self, item: WorkItem, env: Any) -> Any:
        """The episode viewer's frame capture for a pictured item (None for the rest): the
        agent's own RGB views, or a view rendered from its pose when it has no RGB camera."""
        if not (item.plot and self.spec.plots_dir):
            return None
        from vlnverse.eval.reporting.viewer import (
            VIEW_CAMERA,
            VIEWER_DIR,
            FrameRecorder,
            page_name,
            rendered_strip,
        )
        from vlnverse.sim.sensors import RGBSensor

        folder = Path(self.spec.plots_dir).parent / VIEWER_DIR / page_name(
            {"episode_id": item.episode["episode_id"], "physics": item.physics})
        around = env.action_spec.name == "waypoint"  # candidates all around: a 360° strip
        cameras = [RGBSensor(**VIEW_CAMERA, yaw_deg=90.0 * i) for i in range(4 if around else 1)]
        rig = env.sim.rig if env.sim is not None else {}
        own = rig["rgb"] if "rgb" in rig else None

        def render() -> tuple[Any, float]:
            with self.env_lock:
                views = [env.sim.view(camera) for camera in cameras]
            return (rendered_strip(views), 360.0) if around else (views[0], VIEW_CAMERA["hfov_deg"])

        recorder = FrameRecorder(folder, render, camera_hfov_deg=getattr(own, "hfov_deg", 90.0))

        def capture(step: int, observation: Mapping[str, Any]) -> None:
            try:
                recorder(step, observation)
            except Exception as exc:  # noqa: BLE001 - a picture is not worth an episode
                logger.warning("episode %s: frame capture failed: %s", item.episode["episode_id"], exc)

        return capture

    def _plot(self, env: Any, record: dict[str, Any]) -> str | None:
        from vlnverse.eval.reporting.plots import plot_filename, save_episode_plot

        name = plot_filename(record)
        try:
            with self.env_lock:
                save_episode_plot(Path(self.spec.plots_dir) / name, env.scene, env.occupancy, record)
        except Exception as exc:  # noqa: BLE001 - a picture is not worth an episode
            logger.warning("episode %s: trajectory plot failed: %s", record["episode_id"], exc)
            return None
        return f"{Path(self.spec.plots_dir).name}/{name}"

    def pid(self) -> int:
        """The worker's process id (a Ray actor answers once it is built)."""
        return os.getpid()

    def close(self, envs: bool = True) -> None:
        """Close the envs (unless ``envs`` is false: a worker process about to end leaves
        them to the system, as releasing GL objects in a process forked after its parent
        rendered crashes Mesa), the agents and the model client, once the scene maps are written."""
        if self._maps is not None:
            self._maps.close()
        while envs and self._idle_envs:
            _, (_, env) = self._idle_envs.popitem()
            env.close()
        for slot in self._all_slots:
            slot.agent.close()
        self._all_slots.clear()
        for client in (self.llm, self.oracle):
            if client is not None:
                client.close()


# -- local process pool: one EvalWorker per process, fed one item at a time ------------------


def run_process_worker(worker_id: int, spec: RunSpec, inbox: Any, results: Any, parent_pid: int | None) -> None:
    """Process main of the local pool: run the items from ``inbox`` until ``None``, sending
    ``("started", key)`` as each episode starts and ``("result", result)`` as it ends on the
    connection ``results`` (its own, so a killed worker leaves no shared lock held). An
    error (the worker or an env cannot be built) is sent as ``("error", exc)``, to be raised
    in the parent, and ends the process; so does a message that cannot be sent. The process
    ends with its parent (``parent_pid``, or None: the process that forked it), however the
    parent dies."""
    import concurrent.futures as cf

    from vlnverse.sim.gl.context import worker_setup

    exit_with_parent(parent_pid)
    worker_setup()
    worker = None
    sending = threading.Lock()

    def send(kind: str, payload: Any) -> None:
        try:
            data = pickle.dumps((kind, payload))
        except Exception as exc:  # noqa: BLE001 - a result that cannot travel is this episode's error
            if kind != "result" or payload.record is None:
                raise
            data = pickle.dumps((kind, WorkResult(error_record(payload.record, f"{type(exc).__name__}: {exc}"),
                                                  payload.timing)))
        with sending:
            results.send_bytes(data)

    try:
        worker = EvalWorker(spec)

        def run_one(item: WorkItem) -> None:
            try:
                try:
                    send("result", worker.run(item, on_start=lambda: send("started", item.key)))
                except Exception as exc:  # noqa: BLE001 - raised again in the parent
                    send("error", picklable_error(exc, item))
            except BaseException:  # noqa: BLE001 - the parent must not wait for a message that never comes
                logger.exception("eval worker %d cannot send its result; exiting", worker_id)
                os._exit(3)

        with cf.ThreadPoolExecutor(spec.concurrency, thread_name_prefix="vlnverse-episode") as pool:
            for item in iter(inbox.get, None):
                pool.submit(run_one, item)
    except KeyboardInterrupt:
        pass  # Ctrl-C reached the parent too, which stops the run
    except Exception as exc:  # noqa: BLE001 - raised again in the parent
        send("error", picklable_error(exc))
    finally:
        if worker is not None:
            worker.close(envs=False)  # the process ends: its envs go with it (see EvalWorker.close)


def picklable_error(error: Exception, item: WorkItem | None = None) -> Exception:
    """What to raise in the parent for a worker's ``error``: our own errors as they are;
    anything else (a bug) as one :class:`WorkerError` line naming the episode, its
    traceback logged here."""
    if isinstance(error, VLNVerseError):
        try:
            pickle.loads(pickle.dumps(error))
            return error
        except Exception:  # noqa: BLE001 - any pickling failure
            pass
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    logger.error("eval worker failed:\n%s", text)
    where = f" on episode {item.key[0]} ({item.key[1]})" if item is not None else ""
    return WorkerError(f"an eval worker failed{where}: {type(error).__name__}: {error}")
