"""The :class:`LLMClient` interface every backend and wrapper implements."""

from __future__ import annotations

import abc
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from vlnverse.errors import LLMContextExceeded
from vlnverse.llm.context import request_bound
from vlnverse.llm.jsonanswer import parse_json_answer
from vlnverse.llm.pricing import PriceTable, UsageTotals
from vlnverse.llm.types import ChatMessage, LLMRequest, LLMResponse, Usage

Messages = str | ChatMessage | Sequence[ChatMessage | Mapping[str, Any]]


class LLMClient(abc.ABC):
    """A chat model: messages (text + images) in, :class:`LLMResponse` out.

    Subclasses implement :meth:`send`; callers use :meth:`complete` (or
    :meth:`complete_json`), which builds the hashed :class:`LLMRequest` and keeps
    :attr:`totals` (calls, tokens, cost).

    Attributes:
        model: the model name requests carry (part of every request hash).
        prices: price table used for ``cost_usd``.
        totals: usage and cost of the calls made through this client.
        supports_json_schema: the backend takes ``json_schema`` (structured output).
        supports_tools: the backend takes ``tools`` (native tool calling).
        supports_n: the backend answers ``n`` choices in one call (None: not known yet;
            :func:`vlnverse.llm.sampling.sample_n` finds out and sets it).
        supports_images: the backend takes image parts (None: not known yet; False once
            it rejected one).
        supports_json_object: the backend takes JSON mode (``response_format:
            json_object``; None: not known yet; False: the prompt alone asks for JSON).
        features_used: capability -> the ways this client served it so far, in order
            (``structured``: ``json_schema`` / ``json_object+schema_in_prompt`` /
            ``schema_in_prompt``; ``json_mode``: ``json_object`` / ``prompt``; ``tools``:
            ``native`` / ``emulated``; ``n``: ``native`` / ``single_seeded``; ``images``:
            ``native`` / ``refused``; ``context_window``: each window taken, ``8192 (spec)``,
            ``4096 (server error)``), for ``run.json``.
        context_window: the model's context size in tokens (None: not known), from the
            spec (``context=``) or learned from a context-length error
            (:meth:`learn_context`); agents build their prompts within it.
        context_source: where :attr:`context_window` came from (``spec``, ``server error``).
    """

    supports_json_schema = False
    supports_tools = False
    supports_n: bool | None = None
    supports_images: bool | None = None
    supports_json_object: bool | None = None
    context_window: int | None = None
    context_source: str | None = None

    def __init__(self, model: str, *, prices: PriceTable | None = None) -> None:
        self.model = model
        self.prices = prices if prices is not None else PriceTable.default()
        self.totals = UsageTotals()
        self._features: dict[str, list[str]] = {}

    @property
    def features_used(self) -> dict[str, list[str]]:
        return self._features

    def note_feature(self, capability: str, mode: str) -> None:
        """Record that ``capability`` was served as ``mode`` (see :attr:`features_used`)."""
        modes = self._features.setdefault(capability, [])
        if mode not in modes:
            modes.append(mode)

    def learn_context(self, window: int, source: str) -> None:
        """Take ``window`` as the context size when it is smaller than the one known."""
        if self.context_window is None or window < self.context_window:
            self.context_window, self.context_source = int(window), source
            self.note_feature("context_window", f"{self.context_window} ({source})")

    def request(self, messages: Messages, **params: Any) -> LLMRequest:
        """The request :meth:`complete` would send (e.g. to look up its hash)."""
        return LLMRequest.build(self.model, messages, **params)

    def complete(self, messages: Messages, **params: Any) -> LLMResponse:
        """Answer ``messages`` (a prompt string, a message, or a list of them).

        Args:
            messages: the conversation; dict messages are ``{"role", "content", "images"?}``.
            **params: :class:`~vlnverse.llm.types.GenerationParams` fields
                (temperature, max_tokens, seed, response_format, top_p, n, stop).

        Raises:
            ConfigError: a message or parameter is invalid.
            LLMContextExceeded: the request is estimated larger than the known context
                window (:mod:`vlnverse.llm.context`); it is not sent.
            LLMError: the backend failed (see the subclasses in ``vlnverse.errors``).
        """
        request = self.request(messages, **params)
        if self.context_window is not None and (size := request_bound(request)) > self.context_window:
            raise LLMContextExceeded(f"{getattr(self, 'where', self.model)}: the request (about {size} tokens with "
                                     f"its completion cap, estimated) does not fit the {self.context_window}-token "
                                     f"context window ({self.context_source}); not sent", self.context_window, size)
        response = self.send(request)
        self.totals.add(response)
        return response

    def complete_json(
        self,
        messages: Messages,
        *,
        expect: type | None = dict,
        required_keys: Iterable[str] = (),
        string_keys: Iterable[str] = (),
        **params: Any,
    ) -> tuple[Any, LLMResponse]:
        """Ask for a JSON answer and parse it; returns ``(value, response)``.

        Raises:
            LLMInvalidJSON: the answer holds no JSON.
            LLMSchemaError: the JSON fails ``expect``/``required_keys``/``string_keys``.
        """
        params.setdefault("response_format", "json")
        response = self.complete(messages, **params)
        value = parse_json_answer(
            response.text, expect=expect, required_keys=required_keys, string_keys=string_keys
        )
        return value, response

    def complete_structured(self, messages: Messages, schema: Mapping[str, Any], *,
                            repairs: int = 1, **params: Any) -> tuple[Any, LLMResponse]:
        """A JSON answer following the JSON schema ``schema`` (native structured output
        where supported, else prompt + validation), with up to ``repairs`` repair turns;
        see :func:`vlnverse.llm.structured.complete_structured`."""
        from vlnverse.llm.structured import complete_structured

        return complete_structured(self, messages, schema, repairs=repairs, **params)

    def complete_tools(self, messages: Messages, tools: Sequence[Mapping[str, Any]], *,
                       tool_choice: str = "auto", repairs: int = 1, **params: Any) -> LLMResponse:
        """An answer that may call ``tools`` (native or emulated by prompt); see
        :func:`vlnverse.llm.structured.complete_tools`."""
        from vlnverse.llm.structured import complete_tools

        return complete_tools(self, messages, tools, tool_choice=tool_choice, repairs=repairs, **params)

    @abc.abstractmethod
    def send(self, request: LLMRequest) -> LLMResponse:
        """Answer one fully built request (no totals bookkeeping)."""

    def cost(self, usage: Usage, *models: str) -> float | None:
        """Cost of ``usage`` under the first of ``models`` (default: this model) with a price."""
        for name in models or (self.model,):
            if name and (cost := self.prices.cost(name, usage)) is not None:
                return cost
        return None

    def close(self) -> None:  # noqa: B027 - an optional hook, a no-op by default
        """Release network connections or model memory."""

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r})"


class WrapperClient(LLMClient):
    """A client that passes requests to ``inner`` (caches, recorders, meters): it has the
    inner client's model, prices and capabilities."""

    def __init__(self, inner: LLMClient) -> None:
        super().__init__(inner.model, prices=inner.prices)
        self.inner = inner

    @property
    def supports_json_schema(self) -> bool:  # type: ignore[override]
        return self.inner.supports_json_schema

    @property
    def supports_tools(self) -> bool:  # type: ignore[override]
        return self.inner.supports_tools

    @supports_tools.setter
    def supports_tools(self, value: bool) -> None:
        self.inner.supports_tools = value

    @property
    def supports_n(self) -> bool | None:  # type: ignore[override]
        return self.inner.supports_n

    @supports_n.setter
    def supports_n(self, value: bool | None) -> None:
        self.inner.supports_n = value

    @property
    def supports_images(self) -> bool | None:  # type: ignore[override]
        return self.inner.supports_images

    @property
    def supports_json_object(self) -> bool | None:  # type: ignore[override]
        return self.inner.supports_json_object

    @property
    def context_window(self) -> int | None:  # type: ignore[override]
        return self.inner.context_window

    @property
    def context_source(self) -> str | None:  # type: ignore[override]
        return self.inner.context_source

    def learn_context(self, window: int, source: str) -> None:
        self.inner.learn_context(window, source)

    @property
    def features_used(self) -> dict[str, list[str]]:
        return self.inner.features_used

    def note_feature(self, capability: str, mode: str) -> None:
        self.inner.note_feature(capability, mode)

    def close(self) -> None:
        self.inner.close()
