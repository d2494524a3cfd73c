"""The context window an OpenAI-compatible server states, for ``vlnverse llm check``.

Servers say it in different places; each is read where it exists, first found wins:

1. llama.cpp's server: ``GET /props`` → ``default_generation_settings.n_ctx`` (the context
   of one slot, what a request may use);
2. the model listing (``GET /v1/models``, already fetched by the check): vLLM's
   ``max_model_len``; llama.cpp's ``meta.n_ctx_train`` (the model's trained context: the
   server may run it with less, so it comes after ``/props``);
3. Ollama: ``POST /api/show`` → ``num_ctx`` among the model's parameters, else the model's
   ``<architecture>.context_length`` (its maximum; Ollama runs it with its default
   ``num_ctx`` unless one is set, and cuts longer prompts without an error).

A server that states none leaves the window unknown (the spec's ``context=N`` then
decides, or the first context-length error).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

PROBE_TIMEOUT = 10.0


def _get(data: Any, *path: str) -> Any:
    for key in path:
        data = data.get(key) if isinstance(data, Mapping) else None
    return data


def _tokens(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _root(sdk: Any) -> str:
    """The server's root URL (the base URL without its ``/v1``)."""
    base = str(sdk.base_url).rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


def _json(sdk: Any, method: str, url: str, body: Mapping[str, Any] | None = None) -> Any:
    """The JSON answer to one request through the client's own HTTP session (None: no usable answer)."""
    try:
        call = sdk.post if method == "post" else sdk.get
        kwargs = {"body": dict(body)} if body is not None else {}
        response = call(url, cast_to=httpx.Response, options={"timeout": PROBE_TIMEOUT}, **kwargs)
        return response.json()
    except Exception:  # noqa: BLE001 - a server without this route (404, HTML, refused) states nothing here
        return None


def _listed(listed: Sequence[Mapping[str, Any]], model: str) -> tuple[int | None, str]:
    entries = [m for m in listed if m.get("id") == model] or (list(listed) if len(listed) == 1 else [])
    for entry in entries:
        if (tokens := _tokens(entry.get("max_model_len"))) is not None:
            return tokens, "vLLM /v1/models max_model_len"
        if (tokens := _tokens(_get(entry, "meta", "n_ctx_train"))) is not None:
            return tokens, "llama.cpp /v1/models meta.n_ctx_train (the model's trained context)"
    return None, ""


def _ollama(sdk: Any, root: str, model: str) -> tuple[int | None, str]:
    shown = _json(sdk, "post", f"{root}/api/show", {"model": model})
    if not isinstance(shown, Mapping):
        return None, ""
    match = re.search(r"^\s*num_ctx\s+(\d+)", str(shown.get("parameters") or ""), re.MULTILINE)
    if match:
        return int(match.group(1)), "Ollama /api/show num_ctx"
    info = shown.get("model_info")
    lengths = [v for k, v in info.items() if k.endswith(".context_length")] if isinstance(info, Mapping) else []
    if lengths and (tokens := _tokens(lengths[0])) is not None:
        return tokens, "Ollama /api/show context_length (the model's maximum; the server's num_ctx may be less)"
    return None, ""


def probe_context(client: Any, listed: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The ``context`` entry of the check's report: ``{"supported", "detail", "tokens",
    "source"}`` (``supported`` None and ``tokens`` None when the server states no window);
    ``listed`` is the model listing the check fetched."""
    spec = f"; the spec says {client.context_window}" if getattr(client, "context_source", None) == "spec" else ""
    sdk = getattr(client, "_client", None)
    tokens, source = None, ""
    if sdk is not None:
        root = _root(sdk)
        tokens = _tokens(_get(_json(sdk, "get", f"{root}/props"), "default_generation_settings", "n_ctx"))
        source = "llama.cpp /props n_ctx" if tokens else ""
        if tokens is None:
            tokens, source = _listed(listed, client.model)
        if tokens is None:
            tokens, source = _ollama(sdk, root, client.model)
    if tokens is None:
        return {"supported": None, "tokens": None, "source": None,
                "detail": "unknown: the server does not state it (give context=N in the spec)" + spec}
    return {"supported": True, "tokens": tokens, "source": source, "detail": f"{tokens} tokens ({source}){spec}"}
