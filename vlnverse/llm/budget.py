"""Token and USD budgets of LLM use, and the per-episode usage meter.

- :class:`BudgetLedger`: what a run has spent, shared by every worker thread and process
  on the machine through one small JSON file under an exclusive lock. The eval harness
  keeps it in the output folder across invocations (a killed or budget-stopped run resumes
  with what it already spent), so a budget limits the folder's total. Only billed calls
  count (a cache hit costs nothing and uses no endpoint), so a re-run answered from the
  cache is never stopped by its budget; tokens that were estimated because the server
  reported none (:mod:`vlnverse.llm.usage`) count too, and are also kept apart.
- :class:`UsageMeter`: wraps the client of one episode and counts its calls, cache hits,
  tokens (cache hits included, so an episode reports the same tokens whether it was
  answered from the cache or not), billed cost (0 for cache hits), list cost (what
  the calls would cost uncached), the calls whose usage was estimated (``estimated_calls``)
  and the calls that failed (``failed_calls``; those whose
  server could not be reached also as ``unreachable_calls``). It refuses calls once the run's ledger or the
  episode's own cap is spent, raising :class:`~vlnverse.errors.LLMBudgetExceeded`.

A call is refused *before* it is sent; the call that crosses a limit completes, so a
run may overshoot its budget by at most one call per concurrent episode.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vlnverse.errors import ConfigError, LLMBudgetExceeded, LLMRequestError, LLMServerUnreachable
from vlnverse.fileio import write_json_atomic
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

    The file is replaced atomically at every charge (a crash never loses what was spent)
    under an exclusive lock on ``<path>.lock``.

    Args:
        path: the ledger file (a missing one is a spend of zero).
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
    def _locked(self) -> Iterator[None]:
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path.with_name(self.path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
            try:
                if fcntl is not None:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            data = {}
        except (OSError, ValueError):
            data = None
        if not isinstance(data, dict):
            raise ConfigError(f"{self.path}: the LLM budget ledger is damaged; delete it only if you accept "
                              "losing count of what this output folder has spent")
        return {"tokens": int(data.get("tokens", 0)), "usd": float(data.get("usd", 0.0)),
                "estimated_tokens": int(data.get("estimated_tokens", 0)), "calls": int(data.get("calls", 0))}

    def reset(self) -> None:
        """Start the spend at zero (a new run takes the folder)."""
        with self._locked():
            write_json_atomic(self.path, {"tokens": 0, "usd": 0.0, "estimated_tokens": 0, "calls": 0})

    def spent(self) -> dict[str, Any]:
        """``{"tokens", "usd", "estimated_tokens", "calls"}`` billed so far."""
        with self._locked():
            return self._read()

    def report(self) -> dict[str, Any]:
        """What the summary shows: the spend so far and the limits."""
        return {**self.spent(), "max_tokens": self.max_tokens, "max_usd": self.max_usd}

    def exhausted(self, spent: dict[str, Any] | None = None) -> str | None:
        """Why the budget is spent (a sentence), or None while calls may still be made."""
        spent = spent if spent is not None else self.spent()
        if self.max_tokens is not None and spent["tokens"] >= self.max_tokens:
            return f"the run's token budget is spent ({spent['tokens']} of {self.max_tokens} tokens)"
        if self.max_usd is not None and spent["usd"] >= self.max_usd:
            return f"the run's USD budget is spent (${spent['usd']:.4f} of ${self.max_usd:.4f})"
        return None

    def charge(self, tokens: int, usd: float, *, estimated: bool = False) -> None:
        """Add one billed call (``estimated``: its tokens were estimated)."""
        if not (isinstance(tokens, int) and tokens >= 0 and math.isfinite(usd) and usd >= 0):
            raise ConfigError(f"a call cannot be billed {tokens!r} tokens and ${usd!r}")
        with self._locked():
            data = self._read()
            data["tokens"] += tokens
            data["usd"] += float(usd)
            data["calls"] += 1
            data["estimated_tokens"] += tokens if estimated else 0
            write_json_atomic(self.path, data)


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
            self.failed_calls = self.unreachable_calls = self.estimated_calls = 0

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
            self.estimated_calls += int(usage.estimated)
            self.prompt_tokens += usage.prompt_tokens
            self.completion_tokens += usage.completion_tokens
            if response.cost_usd is None:
                self.unpriced_calls += 1
            else:
                self.list_usd += response.cost_usd
                if not response.cached:
                    self.billed_usd += response.cost_usd
        if self.ledger is not None and not response.cached:
            self.ledger.charge(usage.total_tokens, response.cost_usd or 0.0, estimated=usage.estimated)
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
                "estimated_calls": self.estimated_calls,
            }
