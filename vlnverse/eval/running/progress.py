"""A rich progress bar for evaluation runs, with the running SR and SPL per physics mode.

It draws on stderr (stdout stays clean for ``--json``) and only when stderr is a terminal
unless forced; without a terminal it does nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from vlnverse.eval.reporting.report import PHYSICS_TITLES


class RunningStats:
    """Running means of SR and SPL per physics mode."""

    def __init__(self) -> None:
        self._sums: dict[str, list[float]] = {}

    def add(self, record: Mapping[str, Any]) -> None:
        metrics = record.get("metrics") or {}
        sums = self._sums.setdefault(str(record.get("physics")), [0.0, 0.0, 0.0])
        sums[0] += float(metrics.get("SR") or 0.0)
        sums[1] += float(metrics.get("SPL") or 0.0)
        sums[2] += 1.0

    def text(self) -> str:
        """``Tel-Hop SR 61% SPL 0.58 · Strict SR 22% SPL 0.20``."""
        parts = []
        for physics in sorted(self._sums):
            sr, spl, n = self._sums[physics]
            parts.append(f"{PHYSICS_TITLES.get(physics, physics)} SR {100 * sr / n:.0f}% SPL {spl / n:.2f}")
        return " · ".join(parts)


class RunProgress:
    """Context manager showing ``done/total`` episodes, ETA and running SR/SPL.

    Args:
        total: Episodes (x physics modes) in the run, finished ones included.
        finished: Records already done (a resumed run starts from them).
        description: Label left of the bar.
        enabled: ``None`` = only when stderr is a terminal.
    """

    def __init__(self, total: int, finished: Iterable[Mapping[str, Any]] = (), *, description: str = "eval",
                 enabled: bool | None = None) -> None:
        from rich.console import Console

        self.console = Console(stderr=True)
        self.enabled = self.console.is_terminal if enabled is None else enabled
        self.stats = RunningStats()
        done = 0
        for record in finished:
            self.stats.add(record)
            done += 1
        self.total, self.done, self.description = total, done, description
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> RunProgress:
        if self.enabled:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(
                TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), TimeRemainingColumn(), TextColumn("{task.fields[stats]}"),
                console=self.console, transient=False,
            )
            self._progress.__enter__()
            self._task = self._progress.add_task(self.description, total=self.total, completed=self.done,
                                                 stats=self.stats.text())
        return self

    def update(self, record: Mapping[str, Any]) -> None:
        """Count one finished record."""
        self.stats.add(record)
        self.done += 1
        if self._progress is not None:
            self._progress.update(self._task, completed=self.done, stats=self.stats.text())

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)
            self._progress = None
