"""The ``replay`` agent: scores recorded trajectories (the paper's human study, Appendix D).

Participants' position and heading were logged every 50 ms to a CSV file. This agent
drives the env through such a recording, so a human run is scored by the same physics
and metrics as any agent: the poses are thinned to targets at least ``min_step`` metres
apart, the agent heads for each target in turn (waypoint actions ``(r, theta, 0)``, or
discrete turns and forward moves), and STOP is issued after the last one. Targets are
absolute positions, so small physical deviations do not accumulate.

CSV format (header required, one row per sample, comma-separated):

- ``x``, ``y`` (metres, world frame, Z-up) — required; ``z`` optional;
- ``t`` / ``time`` / ``time_s`` (seconds) or ``timestamp_ms`` / ``time_ms`` — optional,
  rows are sorted by it when present;
- ``yaw`` (radians) or ``yaw_deg`` / ``heading_deg`` — optional;
- ``episode_id`` — lets one file hold many episodes.

``trajectories`` is either such a file or a folder of ``<episode_id>.csv`` files.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vlnverse.errors import ConfigError, DatasetError
from vlnverse.eval.agent import Agent, EpisodeInfo
from vlnverse.sim.types import wrap_angle

TIME_COLUMNS = {"t": 1.0, "time": 1.0, "time_s": 1.0, "timestamp_ms": 1e-3, "time_ms": 1e-3}
YAW_COLUMNS = {"yaw": 1.0, "yaw_deg": math.pi / 180.0, "heading_deg": math.pi / 180.0}


@dataclass(frozen=True)
class RecordedTrajectory:
    """One recording: sample times (s), positions (N, 3) and headings (N,) (NaN if not logged)."""

    episode_id: str
    times: np.ndarray
    positions: np.ndarray
    yaws: np.ndarray

    @property
    def median_period_ms(self) -> float:
        """Median sampling period (ms); NaN with fewer than two samples."""
        if len(self.times) < 2:
            return math.nan
        return float(np.median(np.diff(self.times)) * 1000.0)


def read_trajectory_csv(path: str | Path) -> dict[str, RecordedTrajectory]:
    """Parse a recording CSV into ``{episode_id: trajectory}``.

    Without an ``episode_id`` column the file's stem is the episode id.

    Raises:
        DatasetError: missing file or columns, non-numeric or non-finite values, no rows.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise DatasetError(f"trajectory file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"cannot read trajectory file {path}: {exc}") from exc
    reader = csv.DictReader(text.splitlines())
    columns = [c.strip() for c in (reader.fieldnames or [])]
    missing = [c for c in ("x", "y") if c not in columns]
    if missing:
        raise DatasetError(f"{path}: missing column(s) {', '.join(missing)}; header is {columns}")
    time_col = next((c for c in TIME_COLUMNS if c in columns), None)
    yaw_col = next((c for c in YAW_COLUMNS if c in columns), None)
    rows: dict[str, list[tuple[float, float, float, float, float]]] = {}
    for number, raw in enumerate(reader, start=2):
        row = {k.strip(): (v or "").strip() for k, v in raw.items() if k is not None}
        try:
            x, y = float(row["x"]), float(row["y"])
            z = float(row["z"]) if row.get("z") else 0.0
            t = float(row[time_col]) * TIME_COLUMNS[time_col] if time_col else (number - 2) * 0.05
            yaw = float(row[yaw_col]) * YAW_COLUMNS[yaw_col] if yaw_col and row.get(yaw_col) else math.nan
        except ValueError as exc:
            raise DatasetError(f"{path}:{number}: {exc}") from None
        if not all(math.isfinite(v) for v in (x, y, z, t)):
            raise DatasetError(f"{path}:{number}: non-finite value")
        episode_id = row.get("episode_id") or path.stem
        rows.setdefault(episode_id, []).append((t, x, y, z, yaw))
    if not rows:
        raise DatasetError(f"{path}: no samples")
    out = {}
    for episode_id, samples in rows.items():
        arr = np.array(sorted(samples, key=lambda s: s[0]), dtype=np.float64)
        out[episode_id] = RecordedTrajectory(episode_id, arr[:, 0], arr[:, 1:4], arr[:, 4])
    return out


def thin_positions(positions: np.ndarray, min_step: float) -> np.ndarray:
    """The targets of a recording: samples at least ``min_step`` m (planar) from the last
    kept one, and always the final sample (if it differs from the last kept one)."""
    kept = [0]
    for i in range(1, len(positions)):
        if math.dist(positions[i, :2], positions[kept[-1], :2]) >= min_step:
            kept.append(i)
    last = len(positions) - 1
    if kept[-1] != last and math.dist(positions[last, :2], positions[kept[-1], :2]) > 1e-6:
        kept.append(last)
    return positions[kept[1:]] if len(kept) > 1 else positions[:0]


@dataclass(frozen=True)
class ReplayConfig:
    """Settings of the ``replay`` agent.

    Attributes:
        trajectories: A recording CSV or a folder of ``<episode_id>.csv`` files.
        action_space: ``waypoint`` (default) or ``discrete``.
        min_step: Thinning distance between consecutive targets (m).
        tolerance: Discrete replay: a target counts as reached within this distance (m).
    """

    trajectories: str = ""
    action_space: str = "waypoint"
    min_step: float = 0.25
    tolerance: float = 0.2

    def __post_init__(self) -> None:
        if not self.trajectories:
            raise ConfigError("ReplayConfig.trajectories is required (a CSV file or a folder of CSV files)")
        if self.action_space not in ("waypoint", "discrete"):
            raise ConfigError(f"ReplayConfig.action_space must be 'waypoint' or 'discrete', got {self.action_space!r}")
        for name in ("min_step", "tolerance"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not value > 0:
                raise ConfigError(f"ReplayConfig.{name} must be positive, got {value!r}")


class ReplayAgent(Agent):
    """Drives the env through a recorded trajectory, then STOPs (see the module docs)."""

    config_class = ReplayConfig
    sensors = ()

    def __init__(self, config: ReplayConfig) -> None:
        self.config = config
        self.action_space = config.action_space
        self._files: dict[Path, dict[str, RecordedTrajectory]] = {}
        self._targets = np.zeros((0, 3))
        self._index = 0
        self._pose = np.zeros(4)
        self._kind = config.action_space
        self._max_r = 3.0
        self._turn = math.radians(15.0)
        self._forward = 0.25
        self._attempts = 0
        self._period_ms = math.nan

    def recording(self, episode_id: str) -> RecordedTrajectory:
        """The recording of ``episode_id``.

        Raises:
            DatasetError: no recording for that episode.
        """
        root = Path(self.config.trajectories)
        path = root / f"{episode_id}.csv" if root.is_dir() else root
        if path not in self._files:
            self._files[path] = read_trajectory_csv(path)
        recordings = self._files[path]
        if episode_id not in recordings:
            if root.is_dir() and len(recordings) == 1:
                return next(iter(recordings.values()))
            raise DatasetError(f"no recorded trajectory for episode {episode_id!r} in {path}")
        return recordings[episode_id]

    def reset(self, episode: EpisodeInfo) -> None:
        recording = self.recording(episode.episode_id)
        self._period_ms = recording.median_period_ms
        self._targets = thin_positions(recording.positions, self.config.min_step)
        self._index = 0
        self._attempts = 0
        self._kind = episode.action_space_name
        space = episode.action_space
        if self._kind == "waypoint":
            self._max_r = float(space.high[0])
        elif episode.action_spec is not None:
            self._turn = math.radians(float(episode.action_spec.turn_deg))
            self._forward = float(episode.action_spec.forward_m)

    def observe_info(self, info: Mapping[str, Any]) -> None:
        self._pose = np.asarray(info["pose"], dtype=np.float64)

    def act(self, observation: Mapping[str, Any]) -> Any:
        if self._kind == "waypoint":
            return self._waypoint()
        return self._discrete()

    def _waypoint(self) -> np.ndarray:
        x, y, _, yaw = self._pose
        while self._index < len(self._targets):
            tx, ty = self._targets[self._index, :2]
            r = math.hypot(tx - x, ty - y)
            if r <= 1e-3:
                self._index += 1
                continue
            if r <= self._max_r:
                self._index += 1
            theta = wrap_angle(math.atan2(ty - y, tx - x) - yaw)
            return np.array([min(r, self._max_r), theta, 0.0], dtype=np.float32)
        return np.array([0.0, 0.0, 1.0], dtype=np.float32)

    def _discrete(self) -> int:
        x, y, _, yaw = self._pose
        while self._index < len(self._targets):
            tx, ty = self._targets[self._index, :2]
            r = math.hypot(tx - x, ty - y)
            # Give up on a target the body cannot reach (blocked), rather than loop.
            budget = 4.0 * self.config.min_step / self._forward + 2.0 * math.pi / self._turn
            if r <= self.config.tolerance or self._attempts > budget:
                self._index += 1
                self._attempts = 0
                continue
            self._attempts += 1
            error = wrap_angle(math.atan2(ty - y, tx - x) - yaw)
            if abs(error) > self._turn / 2.0:
                return 2 if error > 0 else 3
            return 1
        return 0

    def trace(self) -> Mapping[str, Any] | None:
        return {"replay_targets": len(self._targets), "recording_period_ms": self._period_ms
                if math.isfinite(self._period_ms) else None}
