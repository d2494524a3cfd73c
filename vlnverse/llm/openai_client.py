"""Any OpenAI-compatible chat endpoint through the official ``openai`` SDK.

Works with OpenAI itself and with servers that speak the same API (vLLM, Ollama,
LM Studio, routers). Images travel as ``data:`` URLs. A server's rejection of a feature
it does not take (any status; see :mod:`vlnverse.llm.negotiate`) is never retried: the
client remembers it and either rewrites the request itself (JSON mode, ``seed``,
``temperature``, ``top_p``, ``max_tokens`` → ``max_completion_tokens``) and resends it at
once, or raises :class:`~vlnverse.errors.LLMUnsupportedFeature` so that the caller falls
back (structured output, tools, ``n``, images). Transient failures (timeouts,
connection errors, 408/409/429/5xx, and 200 replies whose body is not a chat completion:
malformed JSON, an HTML error page) are retried with bounded exponential backoff; the
SDK's own retries are turned off so the policy lives in one place. Every call has an
overall deadline, and after :data:`BREAKER_FAILURES` consecutive connection failures the
client stops calling the server (each later call fails at once), so a dead server costs
seconds, not the full backoff for every request.

A request that does not fit the model's context window (:mod:`vlnverse.llm.context`) is
never sent again as it was: a server's context-length error teaches the window for the
rest of the client's life (:meth:`LLMClient.complete` refuses, unsent, a request estimated
larger than a known window) and raises :class:`~vlnverse.errors.LLMContextExceeded`, which
no fallback resends.
"""

from __future__ import annotations

import json
import logging
import os
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

import openai

from vlnverse import deadline as episode
from vlnverse.errors import (
    ConfigError,
    LLMContextExceeded,
    LLMRequestError,
    LLMServerUnreachable,
    LLMUnsupportedFeature,
)
from vlnverse.llm.base import LLMClient
from vlnverse.llm.capped import TAIL_BYTES, cap_text, first_content, model_named, usage_object
from vlnverse.llm.context import check_context, read_context_error, request_bound
from vlnverse.llm.negotiate import CALLER_FEATURES, FALLBACKS, read_rejection, sent_features
from vlnverse.llm.pricing import PriceTable
from vlnverse.llm.types import ChatMessage, LLMRequest, LLMResponse, ToolCall
from vlnverse.llm.usage import reply_usage
from vlnverse.redact import add_secret, redact, scrub

log = logging.getLogger(__name__)

BASE_URL_ENV = "VLNVERSE_LLM_BASE_URL"
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
_TRANSIENT_STATUS = frozenset({408, 409, 429})
BREAKER_FAILURES = 5
"""Consecutive connection failures (refused, reset, timed out) after which the client
stops calling the server for the rest of its life."""


DRAIN_FACTOR = 256
"""An oversized reply is read to its end (its middle dropped) up to this many times
``max_reply_bytes``; a longer one is a bad reply (retried)."""


class BadReply(Exception):
    """A 200 reply whose body is not a chat completion (retried like a 5xx)."""


class ReplyTooLarge(Exception):
    """A 200 reply sent whole but past ``max_reply_bytes``: its head and tail (the model's
    answer, cut: :mod:`vlnverse.llm.capped`)."""

    def __init__(self, head: bytes, tail: bytes, size: int) -> None:
        super().__init__(f"the reply is {size} bytes, larger than its cap")
        self.head, self.tail, self.size = head, tail, size


class _Fields(dict):
    """A JSON object of a reply whose fields read as attributes (None when absent), as
    the SDK's objects do."""

    def __getattr__(self, name: str) -> Any:
        return self.get(name)


def _content(value: Any) -> str:
    """A message's text (None: empty); anything else is not a chat completion."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"message content is a {type(value).__name__}")
    return value


def message_to_openai(message: ChatMessage) -> dict[str, Any]:
    """The chat-completions wire form of one message (images as data URLs)."""
    if not message.images:
        return {"role": message.role, "content": message.text}
    content: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, str):
            content.append({"type": "text", "text": part})
        else:
            content.append(
                {"type": "image_url", "image_url": {"url": part.data_url(), "detail": part.detail}}
            )
    return {"role": message.role, "content": content}


def request_to_openai(request: LLMRequest, dropped: frozenset[str] | set[str] = frozenset(),
                      token_param: str | None = "max_tokens") -> dict[str, Any]:
    """Keyword arguments of ``client.chat.completions.create`` for ``request``, without the
    features in ``dropped`` (``json_object``, ``seed``, ``temperature``, ``top_p``) and with
    the token cap under ``token_param`` (None: no cap sent)."""
    params = request.params
    kwargs: dict[str, Any] = {
        "model": request.model,
        "messages": [message_to_openai(m) for m in request.messages],
    }
    if "temperature" not in dropped:
        kwargs["temperature"] = params.temperature
    if params.max_tokens is not None and token_param is not None:
        kwargs[token_param] = params.max_tokens
    if params.seed is not None and "seed" not in dropped:
        kwargs["seed"] = params.seed
    if params.top_p is not None and "top_p" not in dropped:
        kwargs["top_p"] = params.top_p
    if params.n != 1:
        kwargs["n"] = params.n
    if params.stop:
        kwargs["stop"] = list(params.stop)
    if params.json_schema is not None:
        kwargs["response_format"] = {"type": "json_schema", "json_schema": {
            "name": str(params.json_schema.get("title", "answer")).replace(" ", "_")[:64],
            "schema": params.json_schema}}
    elif params.response_format == "json" and "json_object" not in dropped:
        kwargs["response_format"] = {"type": "json_object"}
    if params.tools:
        kwargs["tools"] = [{"type": "function", "function": {
            "name": t["name"], "description": t.get("description", ""),
            "parameters": t.get("parameters", {"type": "object", "properties": {}})}} for t in params.tools]
        kwargs["tool_choice"] = params.tool_choice
    return kwargs


def _tool_calls(message: Any) -> tuple[ToolCall, ...]:
    """The tool calls of an API message (arguments that are not a JSON object are kept
    under ``_raw`` so the caller's validation reports them)."""
    calls = []
    for call in getattr(message, "tool_calls", None) or ():
        function = getattr(call, "function", None)
        if function is None:
            continue
        try:
            arguments = json.loads(function.arguments or "{}")
        except (TypeError, ValueError, RecursionError):
            arguments = None
        if not isinstance(arguments, dict):
            arguments = {"_raw": function.arguments}
        calls.append(ToolCall(function.name, arguments, call.id or ""))
    return tuple(calls)


def _describe_body(body: Any) -> str:
    """A short description of a reply body that is not a completion object."""
    if isinstance(body, (str, bytes)):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        return f"body starts {' '.join(scrub(text).split())[:60]!r}"  # masked before it is cut short
    return f"a {type(body).__name__} without the completion fields"


def _body_text(exc: openai.APIStatusError) -> str:
    """The raw body of an error answer (the SDK's message when it has none)."""
    try:
        return exc.response.text
    except Exception:  # noqa: BLE001 - a body that cannot be read is described by the SDK
        return str(exc.message)


def is_transient(exc: Exception) -> bool:
    """True for failures worth retrying: timeouts, lost connections, 408/409/429/5xx."""
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in _TRANSIENT_STATUS or exc.status_code >= 500
    return False


def _retry_after(exc: Exception) -> float | None:
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def require_api_key(api_key_env: str | None) -> str:
    """The key in the variable ``api_key_env`` (``"unused"`` for keyless servers: None).

    Raises:
        ConfigError: the variable is not set.
    """
    if not api_key_env or api_key_env.lower() == "none":
        return "unused"  # the SDK insists on a key; keyless servers ignore it
    api_key = os.environ.get(api_key_env)
    if not api_key:
        raise ConfigError(
            f"the API key variable {api_key_env} is not set "
            "(set it, or choose another with api_key_env=...; api_key_env=none for keyless servers)"
        )
    add_secret(api_key)  # masked in everything this process records or prints from now on
    return api_key


def check_base_url(base_url: str | None) -> None:
    """Refuse a base URL that carries credentials (``user:password@``): the HTTP client would
    send them as Basic auth in place of the API key, and print them in its request logs.

    Raises:
        ConfigError: the URL has user info.
    """
    if base_url and urllib.parse.urlsplit(base_url).netloc.rpartition("@")[1]:
        raise ConfigError(f"the base URL {redact(base_url)} carries credentials (user:password@); put the API "
                          "key in the variable api_key_env names instead (it is sent as the Bearer token)")


class OpenAIClient(LLMClient):
    """Chat completions from an OpenAI-compatible endpoint.

    Args:
        model: model name sent to the endpoint.
        base_url: endpoint root (``.../v1``); default ``$VLNVERSE_LLM_BASE_URL``, else OpenAI.
        api_key_env: environment variable holding the API key; None for keyless local
            servers.
        timeout: seconds per HTTP attempt.
        max_retries: retries after the first attempt for transient failures.
        backoff_base: first backoff delay in seconds (doubles each retry).
        backoff_max: cap on one delay, also on a server's ``Retry-After``.
        deadline: seconds one call may take in all, attempts and backoff included (less
            when the episode's deadline, :mod:`vlnverse.deadline`, comes first).
        max_reply_bytes: the most of a reply body kept. A longer reply the server sends
            whole is the model's answer: its text is cut at this size and it is marked cut
            (``finish_reason = "length"``), never retried (a retry would bill it again);
            its middle is dropped as it arrives, so it costs no memory. One past
            :data:`DRAIN_FACTOR` times this, or late, is a bad reply (retried like a 5xx).
        http_client: an ``httpx.Client`` to use (tests pass one with a mock transport).
        structured_output: send JSON schemas as the API's structured output (set false
            for servers without it; a server that rejects one also turns it off).
        native_tools: send ``tools`` natively (false: prompt-based emulation; a server
            that rejects them also turns it off).
        json_mode: send ``response_format: json_object`` for JSON answers (false: the
            prompt alone asks for JSON; a server that rejects it also turns it off).
        context: the model's context window in tokens (None: not known until a
            context-length error tells it); requests estimated larger are not sent.
        prices: price table for ``cost_usd``.
        sleep: the sleep function used between retries (injectable for tests).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str | None = DEFAULT_API_KEY_ENV,
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff_base: float = 1.0,
        backoff_max: float = 30.0,
        deadline: float = 300.0,
        max_reply_bytes: int = 64 * 1024,
        http_client: Any = None,
        structured_output: bool = True,
        native_tools: bool = True,
        json_mode: bool = True,
        context: int | None = None,
        prices: PriceTable | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(model, prices=prices)
        if timeout <= 0:
            raise ConfigError(f"timeout must be > 0 seconds, got {timeout}")
        if max_retries < 0:
            raise ConfigError(f"max_retries must be >= 0, got {max_retries}")
        if not deadline > 0:
            raise ConfigError(f"deadline must be > 0 seconds, got {deadline}")
        if not isinstance(max_reply_bytes, int) or max_reply_bytes < 1024:
            raise ConfigError(f"max_reply_bytes must be an integer >= 1024, got {max_reply_bytes!r}")
        if backoff_base < 0 or backoff_max < backoff_base:
            raise ConfigError(
                f"need 0 <= backoff_base <= backoff_max, got {backoff_base}, {backoff_max}"
            )
        if check_context(context) is not None:
            self.learn_context(context, "spec")
        api_key = require_api_key(api_key_env)
        self.base_url = base_url or os.environ.get(BASE_URL_ENV) or None
        check_base_url(self.base_url)
        self.supports_json_schema = structured_output
        self.supports_tools = native_tools
        self.supports_json_object: bool | None = None if json_mode else False
        self.dropped: set[str] = set() if json_mode else {"json_object"}
        self.token_param: str | None = "max_tokens"
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.timeout = timeout
        self.deadline = deadline
        self.max_reply_bytes = max_reply_bytes
        self.connection_failures = 0
        self._sleep = sleep
        self._client = openai.OpenAI(
            base_url=self.base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=0,
            http_client=http_client,
        )

    def backoff(self, attempt: int, exc: Exception | None = None) -> float:
        """Delay before retry ``attempt`` (0-based): exponential, or Retry-After, capped."""
        hinted = _retry_after(exc) if exc is not None else None
        delay = hinted if hinted is not None else self.backoff_base * (2**attempt)
        return max(0.0, min(self.backoff_max, delay))

    @property
    def where(self) -> str:
        return f"{self.model} at {redact(self.base_url) if self.base_url else 'the OpenAI API'}"

    def send(self, request: LLMRequest) -> LLMResponse:
        where = self.where
        self._refuse_known(request, where)
        if self.connection_failures >= BREAKER_FAILURES:
            raise LLMServerUnreachable(f"{where} is not called any more: {self.connection_failures} "
                                       "consecutive connection failures")
        ends = time.monotonic() + episode.bound(self.deadline)
        attempt = 0
        while True:
            kwargs = request_to_openai(request, self.dropped, self.token_param)
            try:
                timeout = episode.bound(max(0.001, min(self.timeout, ends - time.monotonic())))
                completion = self._create(kwargs, timeout, ends)
                response = self._to_response(request, completion)
                self.connection_failures = 0
                self._note_sent(request, kwargs)
                return response
            except ReplyTooLarge as big:  # the model's whole answer: cut, never resent
                response = self._capped(request, big)
                self.connection_failures = 0
                self._note_sent(request, kwargs)
                log.warning("%s sent a %d-byte reply; its text is cut at %d bytes", where, big.size,
                            self.max_reply_bytes)
                return response
            except (openai.OpenAIError, BadReply) as exc:
                episode.check()  # the episode's time is up: that ends the call, not this failure
                self._context_error(exc, request, where)
                if self._negotiate(exc, kwargs, where):
                    continue  # rewritten without the rejected feature: resent at once
                self._count_connection_failure(exc, where)
                if not (is_transient(exc) or isinstance(exc, BadReply)):
                    raise LLMRequestError(f"{where} rejected the request: {exc}") from exc
                failed = LLMServerUnreachable if isinstance(exc, openai.APIConnectionError) else LLMRequestError
                if attempt == self.max_retries:
                    raise failed(f"{where} failed after {attempt + 1} attempt(s): {exc}") from exc
                delay = self.backoff(attempt, exc)
                if self.connection_failures >= BREAKER_FAILURES:
                    raise failed(f"{where} failed {self.connection_failures} times in a row "
                                 f"({exc}); not calling it again") from exc
                if time.monotonic() + delay >= ends:
                    raise failed(f"{where} failed after {attempt + 1} attempt(s) within the "
                                 f"{self.deadline:g} s deadline: {exc}") from exc
                log.warning(
                    "LLM call to %s failed (%s); retry %d in %.1fs", where, exc, attempt + 1, delay
                )
                self._sleep(delay)
                attempt += 1

    def _create(self, kwargs: dict[str, Any], timeout: float, ends: float) -> Any:
        """One HTTP attempt: its body, read by ``ends`` (a server that drips bytes is cut
        off), as JSON objects with attribute access.

        Raises:
            ReplyTooLarge: a whole 200 body past :attr:`max_reply_bytes` (its middle dropped).
            BadReply: a 200 whose body is past :data:`DRAIN_FACTOR` times the cap, late,
                broken off, or not JSON (invalid UTF-8 is replaced, JSON nested too deeply
                is not JSON).
        """
        body, tail, size, limit = bytearray(), bytearray(), 0, self.max_reply_bytes * DRAIN_FACTOR
        with self._client.chat.completions.with_streaming_response.create(**kwargs, timeout=timeout) as response:
            try:
                for chunk in response.iter_bytes():
                    size += len(chunk)
                    if len(body) <= self.max_reply_bytes:
                        body += chunk
                    else:
                        tail = (tail + chunk)[-TAIL_BYTES:]
                    if size > limit:
                        raise BadReply(f"the reply is larger than {limit} bytes")
                    if time.monotonic() > ends:
                        raise BadReply(f"the reply did not arrive within the {self.deadline:g} s deadline")
            except BadReply:
                raise
            except Exception as exc:  # noqa: BLE001 - the transport's errors (httpx or httpx2) mid-body
                raise BadReply(f"the reply broke off: {type(exc).__name__}: {exc}") from exc
        if size > self.max_reply_bytes:
            raise ReplyTooLarge(bytes(body), bytes(tail), size)
        text = body.decode("utf-8", errors="replace")
        try:
            return json.loads(text, object_hook=_Fields)
        except (ValueError, RecursionError) as exc:
            raise BadReply(f"the reply is not JSON ({_describe_body(text)})") from exc

    def _capped(self, request: LLMRequest, big: ReplyTooLarge) -> LLMResponse:
        """The response of an oversized reply: its first choice's text cut at
        :attr:`max_reply_bytes`, marked cut; the usage it reports, else estimated."""
        head = big.head.decode("utf-8", errors="replace")
        text = cap_text(first_content(head), self.max_reply_bytes)
        reported = usage_object((big.head[-TAIL_BYTES:] + big.tail).decode("utf-8", errors="replace"))
        try:
            usage = reply_usage(_Fields(reported) if reported else None, request, (text,))
        except ValueError:
            usage = reply_usage(None, request, (text,))
        answered_by = model_named(head) or self.model
        return LLMResponse(text=text, model=answered_by, usage=usage, finish_reason="length", key=request.key,
                           cost_usd=self.cost(usage, self.model, answered_by))

    def _count_connection_failure(self, exc: Exception, where: str) -> None:
        """Count consecutive connection failures; at :data:`BREAKER_FAILURES` say, once,
        that the server is given up on."""
        if not isinstance(exc, openai.APIConnectionError):
            return
        self.connection_failures += 1
        if self.connection_failures == BREAKER_FAILURES:
            log.warning("%s: %d consecutive connection failures; no more calls to it from this process "
                        "(the remaining requests fail at once and fall back)", where, BREAKER_FAILURES)

    def _refuse_known(self, request: LLMRequest, where: str) -> None:
        """Raise :class:`LLMUnsupportedFeature`, without calling, for a feature this server
        is known not to take."""
        params = request.params
        known = {"json_schema": params.json_schema is not None and self.supports_json_schema is False,
                 "tools": bool(params.tools) and self.supports_tools is False,
                 "n": params.n != 1 and self.supports_n is False,
                 "images": any(m.images for m in request.messages) and self.supports_images is False}
        for feature, refused in known.items():
            if refused:
                if feature == "images":
                    self.note_feature("images", "refused")
                raise LLMUnsupportedFeature(f"{where} does not take {feature} (known from an earlier answer)", feature)

    def _context_error(self, exc: Exception, request: LLMRequest, where: str) -> None:
        """Read a context-length error: learn the window (the one stated, else just under
        the rejected request's estimated size) and raise :class:`LLMContextExceeded`."""
        if not isinstance(exc, openai.APIStatusError):
            return
        found = read_context_error(exc.status_code, _body_text(exc))
        if found is None:
            return
        size = request_bound(request)
        window = found.window if found.window is not None else min(found.requested or size, size) - 1
        if window >= 1:
            self.learn_context(window, "server error")
        log.warning("%s: the request does not fit the model's context (%s: %s); from now on the window is "
                    "%s tokens", where, exc.status_code, found.message, self.context_window)
        raise LLMContextExceeded(f"{where} rejected the request as too long for its context ({exc.status_code}: "
                                 f"{found.message})", self.context_window, found.requested or size) from exc

    def _negotiate(self, exc: Exception, kwargs: dict[str, Any], where: str) -> bool:
        """Read an error answer as a rejection of the request (see :mod:`vlnverse.llm.negotiate`).

        Returns:
            True when the request was rewritten without the rejected feature (resend it);
            False when the answer is not a rejection (a fault: the retry policy decides).

        Raises:
            LLMUnsupportedFeature: the rejected feature is one the caller falls back from.
            LLMRequestError: the request is rejected as a whole (not retried).
        """
        if not isinstance(exc, openai.APIStatusError):
            return False
        rejection = read_rejection(exc.status_code, _body_text(exc), kwargs)
        if rejection is None:
            return False
        feature, said = rejection.feature, f"{rejection.status}: {rejection.message}"
        if feature in CALLER_FEATURES:
            setattr(self, {"json_schema": "supports_json_schema", "tools": "supports_tools", "n": "supports_n",
                           "images": "supports_images"}[feature], False)
            if feature == "images":
                self.note_feature("images", "refused")
            log.warning("%s does not take %s (%s); from now on: %s", where, feature, said, FALLBACKS[feature])
            raise LLMUnsupportedFeature(f"{where} does not take {feature} ({said})", feature) from exc
        if feature is not None and self._rewrite(feature):
            log.warning("%s does not take %s (%s); from now on: %s", where, feature, said, FALLBACKS[feature])
            return True
        raise LLMRequestError(f"{where} rejected the request ({said})") from exc

    def _rewrite(self, feature: str) -> bool:
        """Stop sending ``feature`` (the token cap moves to ``max_completion_tokens``
        first); False when it was already not sent."""
        if feature == "max_tokens" and self.token_param == "max_tokens":
            self.token_param = "max_completion_tokens"
        elif feature in ("max_tokens", "max_completion_tokens") and self.token_param is not None:
            self.token_param = None
        elif feature in FALLBACKS and feature not in CALLER_FEATURES and feature not in self.dropped:
            self.dropped.add(feature)
            if feature == "json_object":
                self.supports_json_object = False
        else:
            return False
        return True

    def _note_sent(self, request: LLMRequest, kwargs: dict[str, Any]) -> None:
        """Record the features an answered request used (JSON mode, images)."""
        sent = sent_features(kwargs)
        if request.params.response_format == "json" and request.params.json_schema is None:
            self.note_feature("json_mode", "json_object" if "json_object" in sent else "prompt")
            if "json_object" in sent:
                self.supports_json_object = True
        if "images" in sent:
            self.supports_images = True
            self.note_feature("images", "native")

    def _to_response(self, request: LLMRequest, completion: Any) -> LLMResponse:
        """The response of a completion object.

        Raises:
            BadReply: the reply is not a chat completion (malformed JSON, an HTML page,
                missing fields).
        """
        try:
            return self._parse_completion(request, completion)
        except (AttributeError, TypeError, KeyError, IndexError, ValueError, OverflowError, RecursionError) as exc:
            raise BadReply(f"the reply is not a chat completion ({_describe_body(completion)})") from exc

    def _parse_completion(self, request: LLMRequest, completion: Any) -> LLMResponse:
        if not completion.choices:
            raise ValueError("no choices")
        texts = tuple(_content(choice.message.content) for choice in completion.choices)
        tool_calls = _tool_calls(completion.choices[0].message)
        try:
            usage = reply_usage(completion.usage, request, texts, tool_calls)  # checked, or estimated
        except ValueError as exc:  # BadReply is no ValueError: it passes _to_response as it is
            raise BadReply(f"the reply's token usage is unusable: {exc}") from exc
        answered_by = str(completion.model or self.model)
        return LLMResponse(
            text=texts[0],
            model=answered_by,
            usage=usage,
            cost_usd=self.cost(usage, self.model, answered_by),
            choices=texts,
            finish_reason=completion.choices[0].finish_reason,
            key=request.key,
            tool_calls=tool_calls,
        )

    def close(self) -> None:
        self._client.close()
