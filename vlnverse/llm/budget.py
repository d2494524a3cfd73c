"""Token and USD budgets of LLM use, and the per-episode usage meter.

- :class:`BudgetLedger`: what a run has spent, shared by every worker thread and process
  on the machine through one small JSON file under an exclusive lock. Only billed calls
  count (a cache hit costs nothing and uses no endpoint), so a re-run answered from the
  cache is never stopped by its budget.
- :class:`UsageMeter`: wraps the client of one episode and counts its calls, cache hits,
  tokens (cache hits included, so an episode reports the same tokens whether it was
  answered from the cache or not), billed cost (0 for cache hits), list cost (what
  the calls would cost uncached) and the calls that failed (``failed_calls``; those whose
  server could not be reached also as ``unreachable_calls``). It refuses calls once the run's ledger or the
  episode's own cap is spent, raising :class:`~vlnverse.errors.LLMBudgetExceeded`.

A call is refused *before* it is sent; the call that crosses a limit completes, so a
run may overshoot its budget by at most one call per concurrent episode.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vlnverse.errors import ConfigError, LLMBudgetExceeded, LLMRequestError, LLMServerUnreachable
from vlnverse.llm.base import LLMClient, WrapperClient
from vlnverse.llm.types import LLMRequest, LLMResponse

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: threads of one process still agree
    fcntl = None  # type: ignore[assignment]


def _check_limit(name: str, value: float | None) -> None:
    if value is not None and (isinstance(value, bool) or not value > 0):
        raise ConfigError(f"{name} must be a positive number, got {value!r}")


class BudgetLedger:
    """A run's LLM spend against its limits, kept in ``path`` (picklable: path + limits).

    Args:
        path: the ledger file (created by :meth:`reset`).
        max_tokens: billed tokens (prompt + completion) the run may use; None: no limit.
        max_usd: billed USD the run may spend; None: no limit.
    """

    def __init__(self, path: str | os.PathLike, *, max_tokens: int | None = None,
                 max_usd: float | None = None) -> None:
        _check_limit("the token budget", max_tokens)
        _check_limit("the USD budget", max_usd)
        self.path = Path(path)
        self.max_tokens = max_tokens
        self.max_usd = max_usd
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "max_tokens": self.max_tokens, "max_usd": self.max_usd}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def _open(self) -> Iterator[Any]:
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            with os.fdopen(fd, "r+", encoding="utf-8") as handle:
                if fcntl is not None:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
                yield handle

    @staticmethod
    def _read(handle: Any) -> dict[str, float]:
        handle.seek(0)
        text = handle.read()
        try:
            data = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError:
            data = {}
        return {"tokens": int(data.get("tokens", 0)), "usd": float(data.get("usd", 0.0))}

    def reset(self) -> None:
        """Start the run's spend at zero (the parent does this once per invocation)."""
        with self._open() as handle:
            handle.seek(0)
            handle.truncate()
            json.dump({"tokens": 0, "usd": 0.0}, handle)

    def spent(self) -> dict[str, float]:
        """``{"tokens", "usd"}`` billed so far."""
        with self._open() as handle:
            return self._read(handle)

    def exhausted(self, spent: dict[str, float] | None = None) -> str | None:
        """Why the budget is spent (a sentence), or None while calls may still be made."""
        spent = spent if spent is not None else self.spent()
        if self.max_tokens is not None and spent["tokens"] >= self.max_tokens:
            return f"the run's token budget is spent ({spent['tokens']} of {self.max_tokens} tokens)"
        if self.max_usd is not None and spent["usd"] >= self.max_usd:
            return f"the run's USD budget is spent (${spent['usd']:.4f} of ${self.max_usd:.4f})"
        return None

    def charge(self, tokens: int, usd: float) -> None:
        """Add one billed call."""
        with self._open() as handle:
            data = self._read(handle)
            data["tokens"] += int(tokens)
            data["usd"] += float(usd)
            handle.seek(0)
            handle.truncate()
            json.dump(data, handle)
            handle.flush()


class UsageMeter(WrapperClient):
    """The client one episode uses: counts its usage and enforces the budgets.

    Args:
        inner: the worker's shared client (cache, recorder, backend).
        ledger: the run's budget (None: no run budget).
        max_tokens: the episode's token cap, cache hits included (None: none).
        max_usd: the episode's cap on list cost, cache hits included (None: none).
    """

    def __init__(self, inner: LLMClient, *, ledger: BudgetLedger | None = None,
                 max_tokens: int | None = None, max_usd: float | None = None) -> None:
        super().__init__(inner)
        _check_limit("the episode token cap", max_tokens)
        _check_limit("the episode USD cap", max_usd)
        self.ledger = ledger
        self.max_tokens = max_tokens
        self.max_usd = max_usd
        self._lock = threading.Lock()
        self.reset_counts()

    def reset_counts(self) -> None:
        """Start a new episode: zero counts, no refusal."""
        with self._lock:
            self.refused: LLMBudgetExceeded | None = None
            self.calls = self.cached_calls = self.prompt_tokens = self.completion_tokens = 0
            self.billed_usd = 0.0
            self.list_usd = 0.0
            self.unpriced_calls = 0
            self.failed_calls = self.unreachable_calls = 0

    def _refuse(self, reason: str, scope: str) -> None:
        self.refused = LLMBudgetExceeded(reason, scope)
        raise self.refused

    def _check(self) -> None:
        if self.max_tokens is not None and self.prompt_tokens + self.completion_tokens >= self.max_tokens:
            self._refuse(f"the episode's token cap is spent ({self.max_tokens} tokens)", "episode")
        if self.max_usd is not None and self.list_usd >= self.max_usd:
            self._refuse(f"the episode's USD cap is spent (${self.max_usd:.4f})", "episode")
        if self.ledger is not None and (reason := self.ledger.exhausted()) is not None:
            self._refuse(reason, "run")

    def send(self, request: LLMRequest) -> LLMResponse:
        with self._lock:
            self._check()
        try:
            response = self.inner.send(request)
        except LLMRequestError as exc:  # counted (a run's health), then the agent's to handle
            with self._lock:
                self.failed_calls += 1
                self.unreachable_calls += isinstance(exc, LLMServerUnreachable)
            raise
        usage = response.usage
        with self._lock:
            self.calls += 1
            self.cached_calls += int(response.cached)
            self.prompt_tokens += usage.prompt_tokens
            self.completion_tokens += usage.completion_tokens
            if response.cost_usd is None:
                self.unpriced_calls += 1
            else:
                self.list_usd += response.cost_usd
                if not response.cached:
                    self.billed_usd += response.cost_usd
        if self.ledger is not None and not response.cached:
            self.ledger.charge(usage.total_tokens, response.cost_usd or 0.0)
        return response

    def summary(self) -> dict[str, Any]:
        """The episode's usage (the ``llm`` field of its record)."""
        with self._lock:
            return {
                "calls": self.calls,
                "cached_calls": self.cached_calls,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "tokens": self.prompt_tokens + self.completion_tokens,
                "cost_usd": round(self.billed_usd, 8),
                "list_cost_usd": round(self.list_usd, 8),
                "unpriced_calls": self.unpriced_calls,
                "failed_calls": self.failed_calls,
                "unreachable_calls": self.unreachable_calls,
            }
