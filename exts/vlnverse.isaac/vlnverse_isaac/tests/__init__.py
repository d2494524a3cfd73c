"""Kit tests of the extension (run by Kit's test runner, ``[[test]]`` in extension.toml)."""

from .test_window import *  # noqa: F401,F403
