"""Keeping C/C++ libraries' own messages off the console.

Libraries such as USD print warnings straight to file descriptor 2 from C++, past
Python's ``logging``. :func:`c_stderr_to_log` routes them into a logger (DEBUG: shown
with ``--debug``), so a command's stderr holds only its own one-line errors.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
from collections.abc import Iterator


@contextlib.contextmanager
def c_stderr_to_log(logger: logging.Logger, level: int = logging.DEBUG) -> Iterator[None]:
    """Log, instead of printing, what is written to file descriptor 2 meanwhile.

    Keep the block short: the redirection is process-wide, so other threads' writes to
    stderr in the meantime are logged too.
    """
    try:
        stderr_fd = sys.__stderr__.fileno()
    except (AttributeError, ValueError, OSError):  # no real stderr (embedded interpreter)
        yield
        return
    sys.__stderr__.flush()
    saved = os.dup(stderr_fd)
    with tempfile.TemporaryFile() as sink:
        try:
            os.dup2(sink.fileno(), stderr_fd)
            yield
        finally:
            sys.__stderr__.flush()
            os.dup2(saved, stderr_fd)
            os.close(saved)
            sink.seek(0)
            for line in sink.read().decode("utf-8", "replace").splitlines():
                if line.strip():
                    logger.log(level, "%s", line.rstrip())
