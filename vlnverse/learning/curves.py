"""TensorBoard event files of a training run (``OUT/tb``), one scalar per epoch and metric."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class EpochScalars:
    """Writes the named fields of each epoch's row under ``<tag>/<field>``; without
    tensorboard it writes nothing and warns once. A resumed run drops events past
    ``start_epoch`` (those of epochs it trains again)."""

    def __init__(self, out: Path, start_epoch: int, tag: str, fields: Sequence[str]) -> None:
        self.tag, self.fields = tag, tuple(fields)
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:
            log.warning("tensorboard is not installed; no event files (pip install 'vlnverse[train]')")
            self.writer = None
            return
        self.writer = SummaryWriter(str(out / "tb"), purge_step=start_epoch + 1)

    def log(self, row: Any) -> None:
        """Write ``row``'s fields (those that are not ``None``) at ``row.epoch``."""
        if self.writer is None:
            return
        for name in self.fields:
            value = getattr(row, name)
            if value is not None:
                self.writer.add_scalar(f"{self.tag}/{name}", value, row.epoch)
        self.writer.flush()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
