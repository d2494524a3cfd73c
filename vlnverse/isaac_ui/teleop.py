"""Keyboard teleoperation and the 50 ms pose recorder (paper Appendix D's human study).

The window forwards key presses/releases as names (``"W"``, ``"LEFT"``…) to
:class:`KeyboardTeleop`, which turns the held keys into a velocity command; every frame
it hands the agent's pose to :class:`PoseRecorder`, which writes one CSV row per 50 ms
of simulated time. The CSV is what the evaluation harness's ``replay`` agent scores.
"""

from __future__ import annotations

import csv
import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np

from vlnverse.errors import ConfigError, DatasetError

logger = logging.getLogger(__name__)

CSV_COLUMNS = ("t", "x", "y", "z", "yaw")
DEFAULT_PERIOD = 0.05

FORWARD_KEYS = frozenset({"W", "UP"})
BACKWARD_KEYS = frozenset({"S", "DOWN"})
LEFT_KEYS = frozenset({"A", "LEFT"})
RIGHT_KEYS = frozenset({"D", "RIGHT"})
STOP_KEYS = frozenset({"SPACE"})


@dataclass(frozen=True)
class TeleopSpeeds:
    """Speeds a held key commands.

    Attributes:
        linear: Forward/backward speed, m/s.
        angular: Turn rate, rad/s (left is positive, CCW about +Z).
    """

    linear: float = 0.5
    angular: float = math.radians(45.0)

    def __post_init__(self) -> None:
        for name in ("linear", "angular"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ConfigError(f"teleop {name} speed must be > 0, got {value}")


class KeyboardTeleop:
    """Held keys → (linear m/s, angular rad/s). W/S or ↑/↓ move, A/D or ←/→ turn."""

    def __init__(self, speeds: TeleopSpeeds | None = None) -> None:
        self.speeds = speeds or TeleopSpeeds()
        self._held: set[str] = set()
        self.stop_requested = False

    def press(self, key: str) -> None:
        """Record a key press (names are case-insensitive)."""
        name = key.upper()
        if name in STOP_KEYS:
            self.stop_requested = True
        self._held.add(name)

    def release(self, key: str) -> None:
        """Record a key release."""
        self._held.discard(key.upper())

    def release_all(self) -> None:
        """Forget every held key (e.g. when the window loses focus)."""
        self._held.clear()

    def command(self) -> tuple[float, float]:
        """The velocity command for the keys held now (opposite keys cancel)."""
        forward = bool(self._held & FORWARD_KEYS) - bool(self._held & BACKWARD_KEYS)
        turn = bool(self._held & LEFT_KEYS) - bool(self._held & RIGHT_KEYS)
        return forward * self.speeds.linear, turn * self.speeds.angular


class PoseRecorder:
    """Writes the agent's pose to CSV on a fixed grid of ``period`` seconds of sim time.

    Rows are ``t, x, y, z, yaw`` (seconds since the first pose, meters, radians). Poses
    arrive at the simulator's control rate; each grid time crossed since the previous
    pose is written with the pose interpolated linearly (yaw along the shorter arc), so
    the log is exactly one row per 50 ms whatever the control rate. :meth:`close` adds the
    final pose when it falls between grid times, so the trajectory ends where the agent
    stopped.
    """

    def __init__(self, path: str | Path, period: float = DEFAULT_PERIOD) -> None:
        if not (math.isfinite(period) and period > 0):
            raise ConfigError(f"recording period must be > 0 s, got {period}")
        self.path = Path(path)
        self.period = float(period)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle: IO[str] | None = self.path.open("w", newline="", encoding="utf-8")
        self._writer = csv.writer(self._handle)
        self._writer.writerow(CSV_COLUMNS)
        self._t0: float | None = None
        self._previous: tuple[float, np.ndarray] | None = None
        self._next_index = 0
        self._last_written: float | None = None
        self.rows = 0

    def tick(self, now: float, position: Sequence[float], yaw: float) -> int:
        """Offer the pose at sim time ``now`` (s); returns how many rows were written."""
        if self._handle is None:
            raise ConfigError("the recorder is closed")
        state = np.array([*(float(v) for v in position), float(yaw)])
        if state.shape != (4,):
            raise ConfigError("position must be (x, y, z)")
        if self._previous is not None and now < self._previous[0]:
            raise ConfigError(f"sim time went backwards ({now} < {self._previous[0]})")
        if self._t0 is None:
            self._t0 = now
        written = 0
        while (grid := self._t0 + self._next_index * self.period) <= now + 1e-9:
            if self._previous is None or now == self._previous[0]:
                pose = state
            else:
                t_prev, prev = self._previous
                alpha = (grid - t_prev) / (now - t_prev)
                pose = prev + alpha * (state - prev)
                turn = math.remainder(state[3] - prev[3], 2 * math.pi)
                pose[3] = math.remainder(prev[3] + alpha * turn, 2 * math.pi)
            self._write(grid, pose)
            self._next_index += 1
            written += 1
        self._previous = (now, state)
        return written

    def _write(self, t: float, pose: np.ndarray) -> None:
        assert self._handle is not None and self._t0 is not None
        x, y, z, yaw = (float(v) for v in pose)
        self._writer.writerow(
            [f"{t - self._t0:.3f}", f"{x:.4f}", f"{y:.4f}", f"{z:.4f}", f"{yaw:.5f}"]
        )
        self._last_written = t
        self.rows += 1

    def close(self) -> Path:
        """Record the final pose if it lies between grid times, close and return the path."""
        if self._handle is None:
            return self.path
        if self._previous is not None and self._previous[0] - (self._last_written or -math.inf) > 1e-9:
            self._write(*self._previous)
        self._handle.close()
        self._handle = None
        return self.path

    def __enter__(self) -> PoseRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class TeleopSession:
    """Drives an agent on any simulator backend from held keys and records its poses.

    Each :meth:`tick` turns the keys held now into one control tick of world-frame
    velocity (the backend applies physics, so walls block the agent), then offers the
    reached pose to the recorder. The extension calls it once per Kit frame; tests call
    it with the embedded backend.
    """

    def __init__(self, backend, recorder: PoseRecorder, keys: KeyboardTeleop, control_dt: float) -> None:
        if not (math.isfinite(control_dt) and control_dt > 0):
            raise ConfigError(f"control_dt must be > 0, got {control_dt}")
        self.backend = backend
        self.recorder = recorder
        self.keys = keys
        self.control_dt = float(control_dt)
        self.sim_time = 0.0
        pose = backend.agent_pose()
        recorder.tick(0.0, (pose.x, pose.y, pose.z), pose.yaw)

    def tick(self):
        """Advance one control tick; returns the reached pose."""
        linear, angular = self.keys.command()
        yaw = self.backend.agent_pose().yaw
        velocity = np.array([[linear * math.cos(yaw), linear * math.sin(yaw), angular]])
        self.backend.move(velocity)
        self.sim_time += self.control_dt
        pose = self.backend.agent_pose()
        self.recorder.tick(self.sim_time, (pose.x, pose.y, pose.z), pose.yaw)
        return pose

    def finish(self) -> Path:
        """Close the recording and return the CSV path."""
        return self.recorder.close()


class TeleopLoop:
    """Runs a :class:`TeleopSession` on its own thread, one tick per ``control_dt`` of wall time.

    Inside the Isaac Sim app the backend must be driven off Kit's loop (it hands its work
    to that loop and waits), so the window builds the backend and session here, through
    ``build``, and only reads :attr:`pose` from a coroutine each frame.

    Args:
        build: Returns ``(backend, session)``; called on the loop's thread. The backend is
            closed and the recording finished when the loop ends.
        control_dt: Seconds between ticks.
    """

    def __init__(self, build: Callable[[], tuple], control_dt: float) -> None:
        if not (math.isfinite(control_dt) and control_dt > 0):
            raise ConfigError(f"control_dt must be > 0, got {control_dt}")
        self.control_dt = float(control_dt)
        self.pose = None
        self.rows = 0
        self.recording: Path | None = None
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._work, args=(build,), name="teleop", daemon=True)
        self._thread.start()

    @property
    def done(self) -> bool:
        """Whether the loop ended (stopped, or failed: see :attr:`error`)."""
        return not self._thread.is_alive()

    def stop(self) -> None:
        """Ask the loop to end after its current tick (does not wait)."""
        self._stop.set()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the loop to end (not from Kit's loop: the backend may need it)."""
        self._thread.join(timeout)

    def _work(self, build: Callable[[], tuple]) -> None:
        backend = session = None
        try:
            backend, session = build()
            while not self._stop.is_set():
                started = time.monotonic()
                self.pose = session.tick()
                self.rows = session.recorder.rows
                self._stop.wait(max(0.0, self.control_dt - (time.monotonic() - started)))
        except Exception as exc:  # noqa: BLE001 - shown by the window
            self.error = f"{type(exc).__name__}: {exc}"
            logger.warning("teleoperation failed: %s", self.error)
        finally:
            if session is not None:
                self.recording = session.finish()
            if backend is not None:
                backend.close()


def read_pose_csv(path: str | Path) -> np.ndarray:
    """Load a recorded trajectory as an (N, 5) float array of ``t, x, y, z, yaw``."""
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if tuple(header or ()) != CSV_COLUMNS:
                raise DatasetError(f"{path}: expected header {','.join(CSV_COLUMNS)}, got {header}")
            rows = [[float(v) for v in row] for row in reader if row]
    except OSError as exc:
        raise DatasetError(f"cannot read teleop recording {path}: {exc.strerror}") from exc
    except ValueError as exc:
        raise DatasetError(f"{path}: non-numeric value in recording ({exc})") from exc
    array = np.asarray(rows, dtype=float).reshape(-1, len(CSV_COLUMNS))
    if len(array) and np.any(np.diff(array[:, 0]) < 0):
        raise DatasetError(f"{path}: timestamps go backwards")
    return array
