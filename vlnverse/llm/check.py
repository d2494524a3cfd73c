"""``vlnverse llm check``: what an endpoint takes, found by a handful of tiny requests.

:func:`check_endpoint` lists the models, then asks for plain chat, JSON mode, a
``json_schema`` answer, a tool call, ``n = 2`` choices and an answer about an image, each
once, through the same client the agents use (so a rejection is read, and fallen back
from, exactly as in a run: :mod:`vlnverse.llm.negotiate`), and reads the context window
where the server states it (:mod:`vlnverse.llm.context_probe`). :func:`agent_plan` says what
each agent will use on that endpoint.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np

from vlnverse.errors import LLMError, LLMUnsupportedFeature
from vlnverse.llm.base import LLMClient
from vlnverse.llm.context_probe import probe_context
from vlnverse.llm.types import ChatMessage, LLMResponse

PROBE_SCHEMA = {"title": "Probe", "type": "object", "properties": {"colour": {"enum": ["red", "green", "blue"]}},
                "required": ["colour"]}
PROBE_TOOL = {"name": "pick_colour", "description": "Choose a colour.",
              "parameters": {"type": "object", "properties": {"colour": {"enum": ["red", "green", "blue"]}},
                             "required": ["colour"]}}
_ASK = "Pick one of the colours red, green or blue."
_PARAMS = {"temperature": 0.0, "max_tokens": 64}


def _detail(exc: Exception, where: str = "") -> str:
    text = " ".join(str(exc).split())
    return (text[len(where):].strip() if where and text.startswith(where) else text)[:300]


def _probe(client: LLMClient, ask: Callable[[], Any]) -> tuple[Any, dict[str, Any]]:
    """Run one probe: ``(answer, {"supported": ..., "detail": ...})`` with the answer None
    when the request failed (``supported`` False for a rejected feature, None for a fault)."""
    where = getattr(client, "where", "")
    try:
        return ask(), {}
    except LLMUnsupportedFeature as exc:
        return None, {"supported": False, "detail": _detail(exc, where)}
    except LLMError as exc:
        return None, {"supported": None, "detail": f"error: {_detail(exc, where)}"}


def _models(client: LLMClient) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The ``models`` entry of the report, and the listing's entries as JSON objects."""
    sdk = getattr(client, "_client", None)
    if sdk is None:
        return {"supported": None, "detail": f"not an HTTP endpoint ({type(client).__name__})"}, []
    try:
        listed = [m.model_dump() for m in sdk.models.list()]
    except Exception as exc:  # noqa: BLE001 - any failure of this optional listing is reported
        return {"supported": False, "detail": _detail(exc)}, []
    names = sorted(str(m.get("id")) for m in listed)
    return {"supported": True, "detail": f"{len(names)} model(s): {', '.join(names[:8])}"
            + (", ..." if len(names) > 8 else ""), "models": names}, listed


def check_endpoint(client: LLMClient) -> dict[str, dict[str, Any]]:
    """Probe ``client``'s endpoint; feature -> ``{"supported": True/False/None, "detail"}``
    (None: not known, e.g. the probe failed for another reason). Features: ``models``,
    ``context`` (the window in ``tokens``, None when unknown), ``chat``, ``json_mode``,
    ``json_schema``, ``tools``, ``n``, ``images``; when plain chat fails the chat features
    after it are not asked."""
    models, listed = _models(client)
    out: dict[str, dict[str, Any]] = {"models": models, "context": probe_context(client, listed)}
    answer, out["chat"] = _probe(client, lambda: client.complete("Reply with the single word: ready", **_PARAMS))
    if answer is None:
        out["chat"]["supported"] = False
        return out
    out["chat"] = {"supported": True, "detail": f"answered {answer.text.strip()[:40]!r} as {answer.model}"}

    answer, out["json_mode"] = _probe(client, lambda: client.complete(
        f'{_ASK} Reply with a JSON object {{"colour": ...}}.', response_format="json", **_PARAMS))
    if answer is not None:
        native = getattr(client, "supports_json_object", None) is not False
        out["json_mode"] = {"supported": native, "detail": ("response_format json_object" if native else
                                                           "rejected; the prompt alone asks for JSON")
                            + f"; the answer is {'JSON' if _is_json(answer) else 'not JSON'}"}

    answer, out["json_schema"] = _probe(client, lambda: client.complete(_ASK, json_schema=PROBE_SCHEMA, **_PARAMS))
    if answer is not None:
        follows = _is_json(answer) and json.loads(answer.text).get("colour") in ("red", "green", "blue")
        out["json_schema"] = {"supported": True, "detail": "accepted; the answer "
                              + ("follows the schema" if follows else "does not follow it (ignored?)")}

    answer, out["tools"] = _probe(client, lambda: client.complete(_ASK, tools=(PROBE_TOOL,), tool_choice="required",
                                                          **_PARAMS))
    if answer is not None:
        out["tools"] = ({"supported": True, "detail": f"called {answer.tool_calls[0].name}"} if answer.tool_calls
                        else {"supported": False, "detail": "accepted but ignored: no tool call in the answer"})

    answer, out["n"] = _probe(client, lambda: client.complete(_ASK, n=2, **{**_PARAMS, "temperature": 1.0}))
    if answer is not None:
        got = len(answer.choices)
        out["n"] = {"supported": got >= 2, "detail": f"{got} choice(s) for n=2" + ("" if got >= 2 else " (ignored)")}

    image = np.full((8, 8, 3), (200, 30, 30), np.uint8)
    answer, out["images"] = _probe(client, lambda: client.complete(
        [ChatMessage.user("What colour is this picture? One word.", [image])], **_PARAMS))
    if answer is not None:
        out["images"] = {"supported": True, "detail": f"answered {answer.text.strip()[:40]!r}"}
    return out


def _is_json(answer: LLMResponse) -> bool:
    try:
        return isinstance(json.loads(answer.text), dict)
    except ValueError:
        return False


def _yes(report: dict[str, dict[str, Any]], feature: str) -> bool:
    return bool(report.get(feature, {}).get("supported"))


def agent_plan(report: dict[str, dict[str, Any]]) -> dict[str, str]:
    """What each agent (and the DVS generator) will use on the probed endpoint."""
    if not _yes(report, "chat"):
        return {}
    json_mode = "JSON mode" if _yes(report, "json_mode") else "JSON asked by prompt"
    samples = "n choices in one request" if _yes(report, "n") else "samples as seeded single requests"
    vlm = "vlm perception (images)" if _yes(report, "images") else "perception: gt only (vlm refused: no images)"
    structured = ("json_schema structured output" if _yes(report, "json_schema") else
                  "schema in the prompt" + (" with JSON mode" if _yes(report, "json_mode") else ""))
    tools = "native tool calls" if _yes(report, "tools") else "tool calls emulated by prompt"
    caption = "describer captions from images" if _yes(report, "images") else "no describer (the prior is verified alone)"
    return {
        "text_history, text_history_cot, map_history, map_history_cot": f"{json_mode}; {samples}; {vlm}",
        "dscd_nav": f"{json_mode}; {vlm}",
        "discussnav": f"{json_mode}; {samples}; {vlm}",
        "arna": f"{structured}; {tools}; {vlm}",
        "dvs generator (datagen --llm)": f"{json_mode}; {caption}",
    }
