"""N samples of one prompt: one request with ``n`` where the server honours it, else
concurrent single requests.

Some OpenAI-compatible servers ignore ``n`` (they answer one choice) or reject it. The
first time a client answers fewer than ``n`` choices (or rejects the request), it is
marked ``supports_n = False`` and the missing samples, and from then on all samples, are
asked as separate requests made concurrently, each with its own ``seed`` (``seed + i``)
so that they differ in the request hash (caches and transcripts keep them apart) and a
server that honours seeds answers reproducibly. A request too long for the model's context
(:class:`~vlnverse.errors.LLMContextExceeded`) is not asked again one sample at a time:
each of those would be as long.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from vlnverse.deadline import run_all
from vlnverse.errors import ConfigError, LLMContextExceeded, LLMRequestError, LLMUnsupportedFeature
from vlnverse.llm.base import LLMClient, Messages
from vlnverse.llm.types import LLMResponse, Usage

log = logging.getLogger(__name__)


def sample_n(client: LLMClient, messages: Messages, n: int, *, max_workers: int = 8,
             **params: Any) -> list[LLMResponse]:
    """``n`` completions of ``messages`` as the responses that carried them (their
    ``choices`` together hold exactly ``n`` texts, in order).

    Raises:
        ConfigError: ``n`` < 1.
        LLMError: a request failed (after the one-call attempt fell back).
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"n must be a positive integer, got {n!r}")
    params.pop("n", None)
    if n == 1:
        return [client.complete(messages, **params)]
    first: list[LLMResponse] = []
    if client.supports_n is not False:
        try:
            first = [client.complete(messages, n=n, **params)]
        except LLMContextExceeded:
            raise
        except LLMRequestError as exc:  # LLMUnsupportedFeature: a server that does not take n
            if isinstance(exc, LLMUnsupportedFeature) and exc.feature not in ("n", ""):
                raise  # a schema, tools or images: the caller's fallback, not this one's
            log.warning("%s rejected n=%d (%s); asking for the samples one by one", client.model, n, exc)
        have = len(first[0].choices) if first else 0
        if have >= n:
            client.supports_n = True
            client.note_feature("n", "native")
            return [_trim(first[0], n)]
        if first:
            log.warning("%s answered %d of n=%d choices; asking for the rest one by one", client.model, have, n)
        client.supports_n = False
    have = len(first[0].choices) if first else 0
    base_seed = int(params.pop("seed", None) or 0)
    rest = run_all(lambda i: client.complete(messages, seed=base_seed + i, **params), range(have, n), max_workers)
    client.note_feature("n", "single_seeded")
    return first + [_trim(r, 1) for r in rest]


def _trim(response: LLMResponse, k: int) -> LLMResponse:
    if len(response.choices) <= k:
        return response
    return replace(response, choices=response.choices[:k])


def merge_responses(responses: Sequence[LLMResponse]) -> LLMResponse:
    """One response holding every choice of ``responses`` (usage and cost summed; cached
    only when all were; the first one's model, finish reason, key and tool calls)."""
    if len(responses) == 1:
        return responses[0]
    head = responses[0]
    costs = [r.cost_usd for r in responses if r.cost_usd is not None]
    return LLMResponse(
        text=head.text, model=head.model,
        usage=Usage(sum(r.usage.prompt_tokens for r in responses), sum(r.usage.completion_tokens for r in responses),
                    any(r.usage.estimated for r in responses)),
        cost_usd=sum(costs) if costs else None, cached=all(r.cached for r in responses),
        choices=tuple(c for r in responses for c in r.choices), finish_reason=head.finish_reason,
        key=head.key, tool_calls=head.tool_calls)
