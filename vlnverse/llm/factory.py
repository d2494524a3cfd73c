"""Building clients from spec strings such as ``openai:gpt-4o`` (the ``--llm`` option).

Grammar: ``none`` | ``BACKEND:TARGET[?option=value&...]`` where BACKEND is a name in
:data:`LLM_BACKENDS` (``openai:MODEL``, ``hf:PATH``, ``replay:FILE``) and the options are
keyword-only arguments of that backend's constructor, e.g.
``openai:qwen2.5-vl?base_url=http://127.0.0.1:8000/v1&api_key_env=none&timeout=30``.
The value ``none`` means None. Keyword arguments given to :func:`make_llm` override the
spec's options.
"""

from __future__ import annotations

import inspect
import os
import types
import typing
from typing import Any
from urllib.parse import parse_qsl

from vlnverse.errors import ConfigError, RegistryError
from vlnverse.llm.base import LLMClient
from vlnverse.llm.cache import CachedClient
from vlnverse.llm.transcript import RecordingClient
from vlnverse.redact import redact
from vlnverse.registry import Registry

LLM_BACKENDS: Registry[type[LLMClient]] = Registry("LLM backend")
LLM_BACKENDS.register("openai", "vlnverse.llm.openai_client:OpenAIClient")
LLM_BACKENDS.register("hf", "vlnverse.llm.hf_client:HFClient")
LLM_BACKENDS.register("replay", "vlnverse.llm.transcript:ReplayClient")

SPEC_FORMS = "none | openai:MODEL | hf:PATH | replay:FILE, optionally followed by ?option=value&..."
_SCALARS = (str, int, float, bool)


def parse_spec(spec: str) -> tuple[str, str, dict[str, str]] | None:
    """Split a spec into ``(backend, target, options)``; None for ``none``.

    Raises:
        ConfigError: the spec is malformed (names the spec and the accepted forms).
    """
    if not isinstance(spec, str):
        raise ConfigError(f"an LLM spec must be a string, got {type(spec).__name__}")
    text = spec.strip()
    if text.lower() == "none":
        return None
    backend, sep, rest = text.partition(":")
    target, _, query = rest.partition("?")
    if not sep or not backend or not target:
        raise ConfigError(f"invalid LLM spec {redact(spec)!r}; expected {SPEC_FORMS}")
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=True) if query else []
    except ValueError as exc:
        raise ConfigError(f"invalid options {redact(query)!r} in LLM spec {redact(spec)!r}: {exc}") from exc
    options: dict[str, str] = {}
    for key, value in pairs:
        if key in options:
            raise ConfigError(f"option {key!r} is given twice in LLM spec {redact(spec)!r}")
        options[key] = value
    return backend, target, options


def _spec_options(cls: type) -> dict[str, tuple[type, bool]]:
    """Keyword-only constructor options settable from a string: name -> (type, nullable)."""
    hints = typing.get_type_hints(cls.__init__)
    result = {}
    for name, param in inspect.signature(cls.__init__).parameters.items():
        if param.kind is not inspect.Parameter.KEYWORD_ONLY:
            continue
        hint = hints.get(name)
        args = (
            typing.get_args(hint)
            if typing.get_origin(hint) in (typing.Union, types.UnionType)
            else (hint,)
        )
        scalars = [a for a in args if a in _SCALARS]
        if len(scalars) == 1:
            result[name] = (scalars[0], type(None) in args)
    return result


def _coerce(value: str, kind: type, nullable: bool, where: str) -> Any:
    if nullable and value.lower() == "none":
        return None
    try:
        if kind is bool:
            if value.lower() not in ("true", "false", "1", "0"):
                raise ValueError(value)
            return value.lower() in ("true", "1")
        return kind(value)
    except ValueError:
        raise ConfigError(f"{where}: expected {kind.__name__}, got {value!r}") from None


def make_llm(
    spec: str,
    *,
    cache_dir: str | os.PathLike | None = None,
    record: str | os.PathLike | None = None,
    **options: Any,
) -> LLMClient | None:
    """Build the client a spec names, optionally wrapped in a cache and a recorder.

    Args:
        spec: ``none``, ``openai:MODEL``, ``hf:PATH`` or ``replay:FILE`` (+ ``?options``).
        cache_dir: answer repeated requests from this on-disk cache.
        record: append every answered request to this JSONL transcript (for replay).
        **options: backend constructor options (override the spec's; any type).

    Returns:
        The client, or None for ``none`` (callers then use prior-only paths).

    Raises:
        ConfigError: unknown backend, unknown option, or an option of the wrong type.
    """
    parsed = parse_spec(spec)
    if parsed is None:
        return None
    backend, target, spec_options = parsed
    try:
        cls = LLM_BACKENDS.get(backend)
    except RegistryError as exc:
        raise ConfigError(f"invalid LLM spec {redact(spec)!r}: {exc}; expected {SPEC_FORMS}") from exc
    check_llm_spec(spec)
    allowed = _spec_options(cls)
    kwargs: dict[str, Any] = {
        key: _coerce(value, *allowed[key], f"LLM spec {redact(spec)!r} option {key}")
        for key, value in spec_options.items()
    }
    kwargs.update(options)
    try:
        client: LLMClient = cls(target, **kwargs)
    except TypeError as exc:
        raise ConfigError(f"LLM spec {redact(spec)!r}: {exc}") from exc
    if cache_dir is not None:
        client = CachedClient(client, cache_dir)
    if record is not None:
        client = RecordingClient(client, record)
    return client


def check_llm_spec(spec: str) -> None:
    """Validate a spec's form, backend and option names without building a client
    (the eval parent checks ``--llm`` so; the workers build it).

    Raises:
        ConfigError: malformed spec, unknown backend or unknown option.
    """
    parsed = parse_spec(spec)
    if parsed is None:
        return
    backend, _, options = parsed
    try:
        cls = LLM_BACKENDS.get(backend)
    except RegistryError as exc:
        raise ConfigError(f"invalid LLM spec {redact(spec)!r}: {exc}; expected {SPEC_FORMS}") from exc
    allowed = _spec_options(cls)
    for key, value in options.items():
        if key not in allowed:
            valid = ", ".join(sorted(allowed)) or "none"
            raise ConfigError(f"LLM spec {redact(spec)!r}: unknown option {key!r} for {backend}; valid: {valid}")
        _coerce(value, *allowed[key], f"LLM spec {redact(spec)!r} option {key}")


def check_llm_credentials(spec: str) -> None:
    """Fail now (before a run writes anything), not later in a worker, when an ``openai``
    spec's API key variable is unset or its base URL carries credentials; the key becomes a
    secret this process scrubs (:func:`vlnverse.redact.add_secret`).

    Raises:
        ConfigError: the variable ``api_key_env`` names is not set, or the base URL has
            ``user:password@``.
    """
    parsed = parse_spec(spec)
    if parsed is not None and parsed[0] == "openai":
        from vlnverse.llm.openai_client import (
            BASE_URL_ENV,
            DEFAULT_API_KEY_ENV,
            check_base_url,
            require_api_key,
        )

        require_api_key(parsed[2].get("api_key_env", DEFAULT_API_KEY_ENV))
        check_base_url(parsed[2].get("base_url") or os.environ.get(BASE_URL_ENV))


def describe_llm_spec(spec: str) -> dict[str, Any] | None:
    """A spec as ``{"backend", "target", "options"}`` safe to write to ``run.json``:
    user names and passwords in URLs and secret-looking query values are masked
    (:func:`vlnverse.redact.redact`)."""
    parsed = parse_spec(spec)
    if parsed is None:
        return None
    backend, target, options = parsed
    return {"backend": backend, "target": redact(target),
            "options": {k: redact(f"{k}={v}").split("=", 1)[1] for k, v in sorted(options.items())}}
