"""Keyboard teleoperation and the 50 ms pose recorder (paper Appendix D's human study).

The window forwards key presses/releases as names (``"W"``, ``"LEFT"``…) to
:class:`KeyboardTeleop`, which turns the held keys into a velocity command; every frame
it hands the agent's pose to :class:`PoseRecorder`, which writes one CSV row per 50 ms
of simulated time. The CSV is what the evaluation harness's ``replay`` agent scores.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np

from vlnverse.errors import ConfigError, DatasetError

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
    """Writes the agent's pose to CSV at most once per ``period`` seconds of sim time.

    Rows are ``t, x, y, z, yaw`` (seconds since the first row, meters, radians). A pose
    is recorded when at least ``period`` has passed since the last recorded one, so a
    60 Hz stream gives a row every 3rd frame at 50 ms; :meth:`close` always records the
    final pose so the trajectory ends where the agent stopped.
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
        self._last_t: float | None = None
        self._pending: tuple[float, Sequence[float], float] | None = None
        self.rows = 0

    def tick(self, now: float, position: Sequence[float], yaw: float) -> bool:
        """Offer the pose at sim time ``now`` (s); returns whether a row was written."""
        if self._handle is None:
            raise ConfigError("the recorder is closed")
        if self._t0 is None:
            self._t0 = now
        if self._last_t is not None and now - self._last_t < self.period - 1e-9:
            self._pending = (now, position, yaw)
            return False
        self._write(now, position, yaw)
        return True

    def _write(self, now: float, position: Sequence[float], yaw: float) -> None:
        assert self._handle is not None and self._t0 is not None
        x, y, z = (float(v) for v in position)
        self._writer.writerow(
            [f"{now - self._t0:.3f}", f"{x:.4f}", f"{y:.4f}", f"{z:.4f}", f"{float(yaw):.5f}"]
        )
        self._last_t = now
        self._pending = None
        self.rows += 1

    def close(self) -> Path:
        """Record the last offered pose (if skipped), close the file and return its path."""
        if self._handle is None:
            return self.path
        if self._pending is not None:
            self._write(*self._pending)
        self._handle.close()
        self._handle = None
        return self.path

    def __enter__(self) -> PoseRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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
