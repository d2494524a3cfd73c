"""The window's "Run agent" and "Score recording": one agent action per UI tick, live metrics.

:class:`AgentRun` runs the evaluation harness's own episode loop
(:func:`vlnverse.eval.running.runner.run_episode`) with the agent on a helper thread and every
env call (``reset``/``step``) handed to the thread that calls :meth:`AgentRun.tick`: the
extension ticks once per Kit frame, so each frame executes exactly one agent action on
the Isaac stage (Kit's stage is only touched from Kit's main thread) and a slow agent
(an LLM call) never freezes the UI. The record and metrics are the harness's, so a run
in the window scores exactly as ``vlnverse eval`` does.

Inside the Isaac Sim app the env is instead built, stepped and closed on the agent's
thread (``env_in_thread``): the Isaac backend hands each of its Kit operations to Kit's
event loop and waits, so Kit's loop must never wait on the run. The window then drives the
run from a coroutine that awaits one Kit frame per :meth:`AgentRun.tick` (which only
reports progress), instead of stepping the env inside an update subscription.

Scoring a teleoperation recording is the same thing with the harness's ``replay`` agent
(:func:`replay_agent_config`).
"""

from __future__ import annotations

import logging
import queue
import shutil
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vlnverse.errors import ConfigError, SimulationError
from vlnverse.eval.agent import Agent
from vlnverse.eval.scoring.episode_record import MetricsConfig
from vlnverse.tasks.episode import Episode

logger = logging.getLogger(__name__)

STOPPED_MESSAGE = "stopped by the user"


@dataclass(frozen=True)
class LiveMetrics:
    """What the window shows while an agent runs (and after it stopped).

    Attributes:
        steps: Actions taken.
        leg: STOPs issued so far (long-horizon: the current sub-goal, 0-based).
        legs: Number of legs (goals of a long-horizon episode, else 1).
        distance_to_goal: Geodesic distance to the current goal (m; inf if unreachable).
        path_length: Distance travelled so far (m, planar).
        collisions: Steps that ended in a collision.
        pose: ``(x, y, z, yaw)`` now.
        done: Whether the episode ended.
        fail_reason: ``stop``, ``collision``, ``step_budget`` or ``error`` once done.
        metrics: The harness's episode metrics (SR, SPL, NE, nDTW...) once done.
        error: The error message of a failed agent or env step (or of a user stop).
    """

    steps: int
    leg: int
    legs: int
    distance_to_goal: float
    path_length: float
    collisions: int
    pose: tuple[float, float, float, float]
    done: bool = False
    fail_reason: str | None = None
    metrics: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None

    def render(self) -> str:
        """The status text of the window."""
        x, y, _, yaw = self.pose
        head = (f"step {self.steps}  goal {min(self.leg + 1, self.legs)}/{self.legs}  "
                f"d→goal {self.distance_to_goal:.2f} m  travelled {self.path_length:.2f} m  "
                f"collisions {self.collisions}  pose ({x:.2f}, {y:.2f}, {yaw:.2f})")
        if not self.done:
            return head
        keys = ("SR", "SPL", "NE", "OSR", "nDTW", "TL")
        scores = "  ".join(f"{k} {self.metrics[k]:.3f}" for k in keys if isinstance(self.metrics.get(k), (int, float)))
        tail = f"done ({self.fail_reason})" + (f": {self.error}" if self.error else "")
        return "\n".join(filter(None, [head, tail, scores]))


class RunStopped(SimulationError):
    """Raised into the agent's thread when the user stops a run."""


class _Request:
    """An env call the agent's thread asks the ticking thread to make."""

    def __init__(self, method: str, args: tuple, kwargs: dict) -> None:
        self.method, self.args, self.kwargs = method, args, kwargs
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None


_FINISHED = object()


class _TickedEnv:
    """The env as the harness's loop sees it: ``reset``/``step`` wait for a UI tick (or, with
    ``direct``, run here on the agent's thread)."""

    def __init__(self, env: Any, run: AgentRun, direct: bool = False) -> None:
        self._env = env
        self._run = run
        self._direct = direct

    @property
    def unwrapped(self) -> Any:
        return self._env.unwrapped

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)

    def reset(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("reset", args, kwargs)

    def step(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("step", args, kwargs)

    def _call(self, method: str, args: tuple, kwargs: dict) -> Any:
        if not self._direct:
            return self._run._call(method, args, kwargs)
        if self._run._stop.is_set():
            raise RunStopped(STOPPED_MESSAGE)
        result = getattr(self._env, method)(*args, **kwargs)
        self._run._note(method, result)
        return result


class AgentRun:
    """One agent on one episode, advanced one action per :meth:`tick`.

    Args:
        env: A ``VLNVerse/Nav-v0`` env of the episode's scene built with the agent's
            action space and sensors (see :func:`open_agent_run`), or with ``env_in_thread``
            a function building it, called on the agent's thread.
        agent: The agent.
        episode: The dataset episode.
        physics: The env's physics mode (recorded).
        seed: The run seed (as ``vlnverse eval --seed``).
        metrics: Scoring settings.
        owns_env: Close the env (and the agent) when the run ends or is closed.
        env_in_thread: Build, step and close the env on the agent's thread; :meth:`tick`
            then only reports progress and :meth:`stop` does not wait.
    """

    def __init__(self, env: Any, agent: Agent, episode: Episode, *, physics: str, seed: int = 0,
                 metrics: MetricsConfig | None = None, owns_env: bool = False,
                 env_in_thread: bool = False) -> None:
        self._make_env: Callable[[], Any] | None = env if env_in_thread else None
        self.env = None if env_in_thread else env
        self.agent = agent
        self.episode = episode
        self.physics = physics
        self.owns_env = owns_env
        self.legs = len(episode.goals) if episode.task == "long_horizon" else 1
        self.record: dict[str, Any] | None = None
        self.error: str | None = None
        self._metrics = metrics or MetricsConfig()
        self._requests: queue.Queue = queue.Queue()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._finished = False
        self._steps = 0
        self._leg = 0
        self._collisions = 0
        x, y, z = episode.start_position
        self._poses: list[np.ndarray] = [np.array([x, y, z, episode.start_yaw], dtype=np.float64)]
        self._distance = float(episode.subgoal_distances[0] if self.legs > 1 and episode.subgoal_distances
                               else episode.geodesic_distance)
        self._thread = threading.Thread(target=self._work, args=(seed,), name=f"agent-run-{episode.episode_id}",
                                        daemon=True)
        self._thread.start()

    # -- the agent's thread ----------------------------------------------------------------

    def _work(self, seed: int) -> None:
        from vlnverse.eval.running.runner import run_episode

        try:
            if self._make_env is not None:
                self.env = self._make_env()
            env = _TickedEnv(self.env, self, direct=self._make_env is not None)
            record, _ = run_episode(env, self.agent, self.episode, physics=self.physics, seed=seed,
                                    metrics=self._metrics)
            message = (_FINISHED, record, None)
        except BaseException as exc:  # noqa: BLE001 - reported to the ticking thread
            message = (_FINISHED, None, exc)
        if self._make_env is not None and self.owns_env:
            try:
                self._release()
            except Exception as exc:  # noqa: BLE001 - the run's result stands
                logger.warning("episode %s: closing the env failed: %s", self.episode.episode_id, exc)
        self._requests.put(message)

    def _call(self, method: str, args: tuple, kwargs: dict) -> Any:
        if self._stop.is_set():
            raise RunStopped(STOPPED_MESSAGE)
        request = _Request(method, args, kwargs)
        self._requests.put(request)
        request.done.wait()
        if request.error is not None:
            raise request.error
        return request.result

    # -- the ticking thread ----------------------------------------------------------------

    @property
    def done(self) -> bool:
        """Whether the episode ended (further ticks do nothing)."""
        return self._finished

    def tick(self, timeout: float | None = None) -> LiveMetrics:
        """Make the agent's next env step here and return the live metrics (with
        ``env_in_thread``: only wait up to ``timeout`` for the run to end).

        Args:
            timeout: Longest wait (s) for the agent to choose its action; ``None`` waits
                as long as it takes. When it runs out (an agent still thinking), nothing
                is stepped this tick.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._finished:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                message = self._requests.get(timeout=remaining)
            except queue.Empty:
                break
            if isinstance(message, tuple):
                self._finish(message[1], message[2])
                break
            self._serve(message)  # only in the ticked mode: the threaded one posts no requests
            if message.method == "step":
                break
        return self.live()

    def _serve(self, request: _Request) -> None:
        try:
            if self._stop.is_set():
                raise RunStopped(STOPPED_MESSAGE)
            request.result = getattr(self.env, request.method)(*request.args, **request.kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the agent's thread (the harness records it)
            request.error = exc
        else:
            self._note(request.method, request.result)
        finally:
            request.done.set()

    def _note(self, method: str, result: Any) -> None:
        """Update the live metrics from an env ``reset``/``step`` result."""
        info = result[-1]
        with self._lock:
            if method == "reset" and self._steps == 0:
                self._poses.clear()  # the env's start (snapped onto the navigable floor)
            self._poses.append(np.asarray(info["pose"], dtype=np.float64))
            self._distance = float(info["geodesic_distance"])
            if method == "step":
                _, _, terminated, _, _ = result
                self._steps += 1
                self._collisions += int(bool(info.get("collision")))
                if (terminated and info.get("fail_reason") != "collision") or info.get("subgoal_stop"):
                    self._leg += 1

    def _finish(self, record: dict[str, Any] | None, exc: BaseException | None) -> None:
        self._finished = True
        self._thread.join()
        if exc is not None:
            self.error = f"{type(exc).__name__}: {exc}"
            logger.warning("episode %s: run failed: %s", self.episode.episode_id, self.error)
            return
        self.record = record
        self.error = record.get("error")

    def run(self, max_ticks: int | None = None) -> LiveMetrics:
        """Tick until the episode ends (or ``max_ticks`` ticks); for scripts and tests."""
        ticks = 0
        while not self._finished and (max_ticks is None or ticks < max_ticks):
            self.tick()
            ticks += 1
        return self.live()

    def stop(self) -> LiveMetrics:
        """End the run now (the user pressed Stop); the harness records it as an error.

        With ``env_in_thread`` this only asks the agent's thread to stop at its next env
        call (it may need Kit's loop to get there); keep ticking until :attr:`done`.
        """
        self._stop.set()
        return self.live() if self._make_env is not None else self.run()

    # -- reading ---------------------------------------------------------------------------

    def live(self) -> LiveMetrics:
        """The metrics now (the harness's final metrics once done)."""
        with self._lock:
            poses = list(self._poses)
        positions = np.array(poses)[:, :2]
        travelled = float(np.linalg.norm(np.diff(positions, axis=0), axis=1).sum()) if len(positions) > 1 else 0.0
        record = self.record or {}
        return LiveMetrics(
            steps=self._steps,
            leg=self._leg,
            legs=self.legs,
            distance_to_goal=self._distance,
            path_length=travelled,
            collisions=self._collisions,
            pose=tuple(float(v) for v in poses[-1][:4]),
            done=self._finished,
            fail_reason=(record.get("fail_reason") or "error") if self._finished else None,
            metrics=dict(record.get("metrics") or {}),
            error=self.error,
        )

    def trajectory(self) -> np.ndarray:
        """The poses so far, (N, 4) ``x, y, z, yaw`` (for drawing the driven path)."""
        with self._lock:
            return np.array(self._poses)

    def close(self) -> None:
        """Stop the run if it is going, and release the env and agent when this run built them
        (with ``env_in_thread`` the agent's thread releases them as it ends)."""
        if not self._finished:
            self.stop()
        if self.owns_env and self._make_env is None:
            self._release()

    def _release(self) -> None:
        if self.env is not None:
            self.env.close()
        self.agent.close()


def open_agent_run(
    scene_file: str | Path,
    episode: Episode,
    agent: str | Agent,
    agent_config: Mapping[str, Any] | None = None,
    *,
    backend: str = "bullet",
    physics: str = "strict",
    seed: int = 0,
    max_steps: int | None = None,
    metrics: MetricsConfig | None = None,
    occupancy_resolution: float = 0.05,
    env_in_thread: bool = False,
) -> AgentRun:
    """Build the agent and its env the way the harness's workers do, and start the run.

    Args:
        scene_file: The episode's USD scene (the stage open in the window).
        episode: The episode.
        agent: A registered agent name (``vlnverse.eval.registry``), ``module:attr``, or
            an agent object.
        agent_config: The agent's settings (for a name).
        backend: Simulator backend (``isaac`` in the extension).
        physics: ``strict``, ``slide`` or ``tel_hop``.
        seed: Run seed.
        max_steps: Step budget (``None``: the action space's default).
        metrics: Scoring settings.
        occupancy_resolution: Navigation grid resolution (m).
        env_in_thread: Build and step the env on the agent's thread (the window inside
            Isaac Sim; see :class:`AgentRun`).

    Raises:
        RegistryError: unknown agent name.
        ConfigError: bad agent config, physics mode or backend.
    """
    from vlnverse.envs.nav_env import NavEnv
    from vlnverse.eval.running.worker import RunSpec, build_agent

    built = build_agent(RunSpec(agent=agent, agent_config=dict(agent_config or {})))

    def make_env() -> Any:
        return NavEnv(str(scene_file), backend=backend, physics=physics, action_space=built.action_space,
                      sensors=built.sensors, max_episode_steps=max_steps,
                      occupancy_resolution=occupancy_resolution)

    if env_in_thread:
        return AgentRun(make_env, built, episode, physics=physics, seed=seed, metrics=metrics, owns_env=True,
                        env_in_thread=True)
    env = make_env()
    try:
        return AgentRun(env, built, episode, physics=physics, seed=seed, metrics=metrics, owns_env=True)
    except BaseException:
        env.close()
        built.close()
        raise


def replay_agent_config(recording: str | Path, episode_id: str, workdir: str | Path,
                        action_space: str = "waypoint") -> dict[str, Any]:
    """The ``replay`` agent's config that scores ``recording`` as episode ``episode_id``.

    The harness's replay agent finds a recording by episode id (``<episode_id>.csv`` in
    a folder); a window recording is named after the scene and time, so it is copied
    into ``workdir`` under the episode's name.

    Raises:
        ConfigError: the recording does not exist.
    """
    source = Path(recording).expanduser()
    if not source.is_file():
        raise ConfigError(f"teleop recording {source} does not exist")
    folder = Path(workdir) / "replay"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{episode_id}.csv"
    if source.resolve() != target.resolve():
        shutil.copyfile(source, target)
    return {"trajectories": str(folder), "action_space": action_space}


def score_recording(recording: str | Path, episode: Episode, scene_file: str | Path, workdir: str | Path, *,
                    backend: str = "bullet", physics: str = "strict", seed: int = 0,
                    max_steps: int | None = None, metrics: MetricsConfig | None = None) -> AgentRun:
    """Score a teleop recording on ``episode`` with the ``replay`` agent, to the end.

    Returns the finished run (``run.record`` holds the harness record, ``run.live()``
    the metrics); the window instead ticks :func:`open_agent_run` with the same config
    to show the replay.
    """
    config = replay_agent_config(recording, episode.episode_id, workdir)
    run = open_agent_run(scene_file, episode, "replay", config, backend=backend, physics=physics, seed=seed,
                         max_steps=max_steps, metrics=metrics)
    try:
        run.run()
    finally:
        run.close()
    return run
