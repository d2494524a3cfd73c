"""Typed errors of VLNVerse.

Library code raises these; only the CLI prints them (one line) and exits non-zero.
"""

from __future__ import annotations

from vlnverse.redact import scrub


class VLNVerseError(Exception):
    """Base class of every error VLNVerse raises on purpose; known secret values in its
    message are masked when it is made (:func:`vlnverse.redact.scrub`)."""

    def __init__(self, *args: object) -> None:
        super().__init__(*(scrub(a) if isinstance(a, str) else a for a in args))


class ConfigError(VLNVerseError, ValueError):
    """A configuration value or file is invalid (names the field and the problem)."""


class UnsafeCheckpoint(ConfigError):
    """A weights file holds more than tensors and plain data: unpickling it could run code, so
    it is refused (it is never loaded with ``weights_only=False``)."""


class SceneError(VLNVerseError):
    """A scene file cannot be loaded or does not make a usable scene."""


class NavigationError(SceneError):
    """A navigation query cannot be answered (e.g. a point with no floor under it)."""


class RegistryError(VLNVerseError, KeyError):
    """An unknown name was looked up in a registry (the message lists the valid ones)."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain.
        return str(self.args[0]) if self.args else ""


class DatasetError(VLNVerseError):
    """A dataset file is missing, malformed or inconsistent."""


class CorruptDataError(DatasetError):
    """A data file's bytes are damaged (bad gzip stream, checksum mismatch); names the file."""


class OutputError(VLNVerseError):
    """An output file or folder cannot be written (read-only, disk full, permissions, a file
    where a folder is needed), or another run holds the output folder."""


class MetricsError(VLNVerseError, ValueError):
    """An episode record cannot be scored (empty or non-finite trajectory, bad shapes)."""


class SimulationError(VLNVerseError):
    """The simulator backend failed or was used out of its lifecycle."""


class WorkerError(VLNVerseError):
    """A worker process died (killed, crashed) while it ran a unit of work; names the work."""


class PackagingError(VLNVerseError):
    """Building or checking the Isaac Sim extension failed (e.g. versions disagree)."""


class LLMError(VLNVerseError):
    """An LLM/VLM call failed or its answer could not be used."""


class LLMRequestError(LLMError):
    """The model endpoint failed (after bounded retries) or rejected the request."""


class LLMServerUnreachable(LLMRequestError):
    """The endpoint could not be reached: every attempt failed to connect or to get an
    answer in time, or earlier calls gave up on it (a run's results then measure nothing)."""


class LLMUnsupportedFeature(LLMRequestError):
    """The endpoint does not take a feature of the request (``feature``: ``json_schema``,
    ``tools``, ``n`` or ``images``; see :mod:`vlnverse.llm.negotiate`): the client stops
    sending it and its callers fall back (prompt emulation, single requests) or refuse."""

    def __init__(self, message: str, feature: str = "") -> None:
        super().__init__(message)
        self.feature = feature

    def __reduce__(self):
        return type(self), (str(self), self.feature)


class LLMContextExceeded(LLMRequestError):
    """The request does not fit the model's context window: the server said so (a
    context-length error, read by :mod:`vlnverse.llm.context`) or the client's estimate
    showed it before sending. Never retried as the same request; an agent counts it as a
    bad request and falls back. ``window`` is the context size (tokens) when known,
    ``requested`` the request's size as the server counted it (or as estimated)."""

    def __init__(self, message: str, window: int | None = None, requested: int | None = None) -> None:
        super().__init__(message)
        self.window = window
        self.requested = requested

    def __reduce__(self):
        return type(self), (str(self), self.window, self.requested)


class LLMAnswerError(LLMError):
    """The model answered, but the answer is not what was asked for."""


class LLMInvalidJSON(LLMAnswerError):
    """The answer holds no parseable JSON value."""


class LLMSchemaError(LLMAnswerError):
    """The answer's JSON has the wrong type or lacks required keys."""


class ReplayMissError(LLMError):
    """A replay transcript holds no (further) response for a request; names its hash."""


class LLMBudgetExceeded(LLMError):
    """A token or USD budget is spent; no further calls are made.

    ``scope`` is ``"run"`` (the eval run's budget: the run stops cleanly and resumes
    later) or ``"episode"`` (the agent config's per-episode cap: that episode ends).
    Agents must let it propagate rather than turn it into a fallback action.
    """

    def __init__(self, message: str, scope: str = "run") -> None:
        super().__init__(message)
        self.scope = scope

    def __reduce__(self):
        return type(self), (str(self), self.scope)


class DependencyNotInstalled(VLNVerseError, ImportError):
    """An optional dependency is missing; the message gives the install command."""

    def __init__(self, package: str, extra: str | None = None, purpose: str = "") -> None:
        command = f"pip install 'vlnverse[{extra}]'" if extra else f"pip install {package}"
        why = f" (needed for {purpose})" if purpose else ""
        super().__init__(f"{package} is not installed{why}; install it with: {command}")
        self.package = package
        self.extra = extra
        self.purpose = purpose

    def __reduce__(self):
        # Rebuilt from its arguments, so it crosses process boundaries (eval workers) intact.
        return type(self), (self.package, self.extra, self.purpose)


class InvalidActionError(VLNVerseError, ValueError):
    """An action is not an element of the env's action space."""
