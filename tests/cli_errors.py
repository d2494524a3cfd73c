"""Checks of a failed command's stderr by content (a library's import warning may add lines)."""

from __future__ import annotations


def one_error_line(stderr: str) -> str:
    """The single ``error: ...`` line of ``stderr``; fails on a traceback or on several errors."""
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, stderr
    return errors[0]
