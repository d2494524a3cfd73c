"""Loopback stand-ins for the OpenAI-compatible servers people run, as they answer what
they do not take (the compatibility matrix of issue 35).

Each :class:`Profile` rejects exactly what its server rejects, with that server's status
code and body; everything else is answered by :func:`model_answer`, a small scripted model
that replies sensibly to every request our agents and the DVS generator make. Where each
status and body comes from (read in the servers' source or in reports that quote them;
only the behaviour is reproduced, in our own code):

- **vLLM** (``vllm/entrypoints/openai/serving_chat.py``, ``create_error_response``: status
  400, a flat ``{"object": "error", "message", "type": "BadRequestError", "param",
  "code": 400}`` body): ``tool_choice = "required"`` is refused with
  ``tool_choice = "required" is not supported!`` (releases before guided tool choice) and
  ``auto`` without the server flags with ``"auto" tool choice requires
  --enable-auto-tool-choice and --tool-call-parser to be set``; an image part sent to a
  text-only model is refused with ``<model> is not a multimodal model`` (400, as quoted in
  user reports). ``n``, JSON mode and ``json_schema`` are served.
- **llama.cpp server** (``tools/server``: ``ex_wrapper`` turns a ``std::runtime_error``
  from the request parser into **500** ``{"error": {"code": 500, "message", "type":
  "server_error"}}``; ``utils.hpp``/``server-common.cpp``): ``n != 1`` → ``Only one completion
  choice is allowed``; ``tools`` without ``--jinja`` → ``Unsupported param (--jinja mode
  required for tool call): tools``; an image without a projector → ``image input is not
  supported - hint: if this is unexpected, you may need to provide the mmproj``.
- **llama-cpp-python** (``llama_cpp/server/errors.py``, ``RouteErrorHandler``: any
  exception, the request's own validation error included, is answered **500**
  ``{"error": {"message": str(exc), "type": "internal_server_error", "param": null,
  "code": null}}``): ``response_format: json_schema`` fails pydantic's literal check of
  ``'text' or 'json_object'`` (the message issue 35 quotes). ``n`` is answered with one
  choice (our assumption of an ignored parameter; no status or body involved).
- **Ollama** (``openai/openai.go`` wraps errors as ``{"error": {"message", "type":
  "invalid_request_error", "param": null, "code": null}}``; ``server/routes.go`` answers 400
  when the model lacks the ``tools`` capability: ``"<model>" does not support tools``).
  ``n`` is not a field of its request type, so it is ignored (one choice); image parts
  are not checked against the model's capabilities, so they are accepted.
- **LM Studio**: ``response_format: json_object`` → 400 ``{"error": "'response_format.type'
  must be 'json_schema' or 'text'"}`` (a string ``error``; quoted in many client
  workarounds). ``n`` answered with one choice (our assumption, as for llama-cpp-python).
- **TGI** (text-generation-inference, huggingface/text-generation-inference#2899): its
  router's JSON extractor answers a ``response_format`` without a ``value`` field —
  ``json_object``, and ``json_schema`` as OpenAI sends it — with **422** and a *plain-text*
  body ``Failed to deserialize the JSON body into the target type: response_format:
  missing field `value` at line 1 column N``.
- **A hosted reasoning model** (OpenAI API, ``invalid_request_error`` with ``param`` and
  ``code`` ``unsupported_parameter``/``unsupported_value``): ``max_tokens`` → ``Unsupported
  parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens'
  instead.``; a ``temperature`` other than 1 → ``Unsupported value: 'temperature' does not
  support 0.0 with this model. Only the default (1) value is supported.``
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tests.agents.arna_script import DEFAULTS
from vlnverse.llm.loopback import Reply

MAX_REQUESTS = 2000
"""A matrix cell that asks more than this is a bug (a retry or fallback loop)."""


def _text(body: Mapping[str, Any]) -> str:
    parts = []
    for message in body.get("messages", ()):
        content = message.get("content")
        parts.append(content if isinstance(content, str) else " ".join(p.get("text", "") for p in content or ()))
    return "\n".join(parts)


def _has_images(body: Mapping[str, Any]) -> bool:
    return any(isinstance(m.get("content"), list) and any(p.get("type") == "image_url" for p in m["content"])
               for m in body.get("messages", ()))


def _format(body: Mapping[str, Any]) -> str | None:
    return (body.get("response_format") or {}).get("type")


def openai_error(status: int, message: str, kind: str = "invalid_request_error", param: str | None = None,
                 code: Any = None) -> Reply:
    return Reply(status=status, raw=json.dumps({"error": {"message": message, "type": kind, "param": param,
                                                          "code": code}}).encode())


def vllm(body: Mapping[str, Any]) -> Reply | None:
    def error(message: str) -> Reply:
        return Reply(status=400, raw=json.dumps({"object": "error", "message": message, "type": "BadRequestError",
                                                 "param": None, "code": 400}).encode())
    if _has_images(body):
        return error(f"{body['model']} is not a multimodal model")
    if body.get("tools"):
        if body.get("tool_choice") == "required":
            return error('tool_choice = "required" is not supported!')
        return error('"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set')
    return None


def llama_cpp(body: Mapping[str, Any]) -> Reply | None:
    def error(message: str) -> Reply:
        return Reply(status=500, raw=json.dumps({"error": {"code": 500, "message": message,
                                                           "type": "server_error"}}).encode())
    if body.get("tools"):
        return error("Unsupported param (--jinja mode required for tool call): tools")
    if body.get("n", 1) != 1:
        return error("Only one completion choice is allowed")
    if _has_images(body):
        return error("image input is not supported - hint: if this is unexpected, you may need to provide the mmproj")
    return None


def llama_cpp_python(body: Mapping[str, Any]) -> Reply | None:
    if _format(body) not in (None, "text", "json_object"):
        detail = {"type": "literal_error", "loc": ("body", "response_format", "type"),
                  "msg": "Input should be 'text' or 'json_object'", "input": _format(body),
                  "ctx": {"expected": "'text' or 'json_object'"}}
        return openai_error(500, f"1 validation error:\n  {detail}", "internal_server_error")
    return None


def ollama(body: Mapping[str, Any]) -> Reply | None:
    if body.get("tools"):
        return openai_error(400, f'"{body["model"]}" does not support tools')
    return None


def lmstudio(body: Mapping[str, Any]) -> Reply | None:
    if _format(body) == "json_object":
        return Reply(status=400, raw=json.dumps({"error": "'response_format.type' must be 'json_schema' or 'text'"}).encode())
    return None


def tgi(body: Mapping[str, Any]) -> Reply | None:
    if _format(body) in ("json_object", "json_schema"):
        column = len(json.dumps(body)) // 2
        return Reply(status=422, headers={"content-type": "text/plain; charset=utf-8"}, raw=(
            "Failed to deserialize the JSON body into the target type: response_format: missing field `value` "
            f"at line 1 column {column}").encode())
    return None


def reasoning(body: Mapping[str, Any]) -> Reply | None:
    if "max_tokens" in body:
        return openai_error(400, "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                                 "'max_completion_tokens' instead.", param="max_tokens", code="unsupported_parameter")
    if body.get("temperature", 1) != 1:
        return openai_error(400, f"Unsupported value: 'temperature' does not support {body['temperature']} with this "
                                 "model. Only the default (1) value is supported.", param="temperature",
                            code="unsupported_value")
    return None


@dataclass(frozen=True)
class Profile:
    """A server: what it rejects (``reject(body)`` → its error answer, or None) and whether
    it answers ``n`` choices (else one)."""

    name: str
    reject: Callable[[Mapping[str, Any]], Reply | None]
    honours_n: bool = True


PROFILES = (Profile("vllm", vllm), Profile("llama.cpp", llama_cpp), Profile("llama-cpp-python", llama_cpp_python, False),
            Profile("ollama", ollama, False), Profile("lmstudio", lmstudio, False), Profile("tgi", tgi, False),
            Profile("reasoning", reasoning))

# -- the scripted model ------------------------------------------------------------------

WAYPOINT_FIELDS = {"thought": "I follow the instruction.", "summary": "Moving on.", "new_planning": "Keep going.",
                   "thought_fusion": "Agreed.", "question": ""}
DVS = {"describer": "A red cup stands on the wooden dining table.",
       "verifier": {"instruction": "Go to the kitchen and find the red cup on the dining table."},
       "synthesizer": {"formal": "Proceed to the kitchen and locate the red cup on the dining table.",
                       "natural": "Could you go to the kitchen and find the red cup on the dining table?",
                       "casual": "Kitchen. Red cup, on the table."}}


def _dvs_stage(text: str) -> str | None:
    if "Analyze the provided image" in text or "sequence of images" in text:
        return "describer"
    if "Fusion Rule" in text:
        return "verifier"
    if "formal" in text and "casual" in text and "natural" in text:
        return "synthesizer"
    return None


def model_answer(body: Mapping[str, Any]) -> Reply | str:
    """A sensible reply to any request our agents or the DVS generator make."""
    text = _text(body)
    if "pick_colour" in json.dumps(body):  # the probe of `vlnverse llm check`
        name, arguments = "pick_colour", {"colour": "red"}
        if body.get("tools"):
            return Reply(content=None, tool_calls=[{"name": name, "arguments": arguments}])
        return json.dumps({"tool": name, "arguments": arguments})
    if body.get("tools") or "You can call these tools:" in text:
        name, arguments = DEFAULTS["tools"](None)
        if body.get("tools"):
            return Reply(content=None, tool_calls=[{"name": name, "arguments": arguments}])
        return json.dumps({"tool": name, "arguments": arguments})
    fmt = body.get("response_format") or {}
    title = (fmt.get("json_schema", {}).get("name") if fmt.get("type") == "json_schema"
             else next(iter(re.findall(r'"title": "(\w+)"', text)), None))
    if title in DEFAULTS:
        return json.dumps(DEFAULTS[title](None))
    if title == "Probe" or "colours red, green or blue" in text:
        return json.dumps({"colour": "red"})
    if "single word: ready" in text or "What colour is this picture" in text:
        return "ready" if "ready" in text else "Red."
    stage = _dvs_stage(text)
    if stage is not None:
        answer = DVS[stage]
        return answer if isinstance(answer, str) else json.dumps(answer)
    options = re.findall(r"exactly one of: ([A-Z0-9, ]+)\.", text)
    if options:
        choice = options[-1].split(", ")[0]
        return json.dumps({**WAYPOINT_FIELDS, "action": choice})
    return json.dumps({**WAYPOINT_FIELDS, "answer": "yes", "action": "STOP"})


def server_answer(profile: Profile) -> Callable[[dict[str, Any]], Reply | str]:
    """The loopback ``answer`` function of ``profile``: its rejections, else the model's
    reply (with ``n`` choices when the server honours ``n``)."""
    count = [0]

    def answer(body: dict[str, Any]) -> Reply | str:
        count[0] += 1
        if count[0] > MAX_REQUESTS:
            return Reply(status=400, raw=b'{"error": {"message": "request cap of the test server reached"}}')
        rejected = profile.reject(body)
        if rejected is not None:
            return rejected
        reply = model_answer(body)
        n = body.get("n", 1)
        if n > 1 and profile.honours_n and isinstance(reply, str):
            return Reply(content=reply, choices=[reply] * (n - 1))
        return reply

    return answer


# -- a server with a small context window and a verbose model (issue 45) ------------------

SERVER_BYTES_PER_TOKEN = 4
"""How the small-context server counts tokens: UTF-8 bytes / 4 (a typical BPE rate on
English text and JSON), plus 4 a message and 85 an image."""
FILLER = ("the corridor runs on past a wooden cabinet and a grey rug toward a bright doorway, with a lamp and "
          "a low shelf of books by the wall and a potted plant in the corner ")
SHORT_FIELDS = {"action", "answer", "decision", "next_step", "run_function", "room", "label", "colour", "question",
                "items", "objects", "order_correct", "terminal", "holds", "done", "visible", "type"}
"""Fields the verbose model keeps short: ids, words and flags the agents read exactly."""
LIST_FIELDS = ("actions", "executed", "in_progress", "waiting", "implementation")
EXPERT_LISTS = {"split route instructions": {"actions": []},
                "find the landmarks": {"order_correct": True, "actions": [], "landmarks": []},
                "judge progress along a route": {"thought": "", "executed": [], "in_progress": [], "waiting": []}}


def server_tokens(body: Mapping[str, Any]) -> int:
    """The prompt tokens of a request as the small-context server counts them."""
    tokens = 0
    for message in body.get("messages", ()):
        content = message.get("content")
        parts = [content] if isinstance(content, str) else content or []
        tokens += 4 + sum(len(p.encode()) // SERVER_BYTES_PER_TOKEN + 1 if isinstance(p, str) else
                          len(p.get("text", "").encode()) // SERVER_BYTES_PER_TOKEN + 1 if p.get("type") == "text"
                          else 85 for p in parts)
    return tokens


def _filler(nbytes: int) -> str:
    return (FILLER * (nbytes // len(FILLER) + 1))[:max(0, nbytes)].strip()


def _asked(body: Mapping[str, Any]) -> list[str]:
    """The reply fields a request asks for: its JSON schema's properties, else the fields
    its reply format names (``"why": "<...>"`` or ``Why: <...>`` lines)."""
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    if schema.get("properties"):
        return list(schema["properties"])
    text = _text(body)
    return re.findall(r'"(\w+)": "<', text) + [m.lower().replace(" ", "_")
                                               for m in re.findall(r"^([A-Z][a-z]+(?: [a-z]+)?): <", text, re.M)]


def _lengthen(value: dict[str, Any], nbytes: int, asked: list[str]) -> dict[str, Any]:
    """``value`` with every free-text field ``asked`` for (added when missing) and every
    list of phrases grown, by about ``nbytes`` together."""
    out = dict(value)
    for key in asked:
        if key not in SHORT_FIELDS and not isinstance(out.get(key, ""), (list, dict, bool, int)):
            out[key] = str(out.get(key) or "")
    long = [k for k in asked if isinstance(out.get(k), str) and k not in SHORT_FIELDS]
    lists = [k for k in (*LIST_FIELDS, "landmarks") if isinstance(out.get(k), list)]
    share = nbytes // max(1, len(long) + len(lists))
    for key in long:
        out[key] = f"{out[key]} {_filler(share)}".strip()
    for key in lists:
        items = max(1, share // 120)
        out[key] = list(out[key]) + ([{"name": _filler(100), "type": "furniture"} for _ in range(items)]
                                     if key == "landmarks" else [_filler(100) for _ in range(items)])
    return out


def verbose_answer(body: Mapping[str, Any]) -> Reply | str:
    """:func:`model_answer` as a verbose model says it: every reply about as long as the
    request's ``max_tokens`` allows; the JSON ones still parse, their ids and flags intact,
    and a question asked in plain words gets plain words."""
    budget = int(0.9 * (body.get("max_tokens") or body.get("max_completion_tokens") or 600)) * SERVER_BYTES_PER_TOKEN
    system = next((m.get("content") for m in body.get("messages", ()) if m.get("role") == "system"), "") or ""
    shape = next((dict(v) for k, v in EXPERT_LISTS.items() if k in system), None)
    reply = json.dumps(shape) if shape is not None else model_answer(body)
    if isinstance(reply, Reply):
        return reply
    asked = _asked(body)
    try:
        value = json.loads(reply)
    except ValueError:
        value = None
    if isinstance(value, dict) and (asked or shape is not None or body.get("response_format")):
        return json.dumps(_lengthen(value, budget - len(reply), asked))
    if isinstance(value, dict):  # a question in plain words: a plain, long answer
        reply = "I can see a sofa and a table in that direction."
    return f"{reply} {_filler(budget - len(reply))}"


@dataclass
class SmallContext:
    """A server with a context window of ``window`` tokens (:func:`server_tokens`) and a
    verbose model: it rejects a request whose prompt plus ``max_tokens`` exceed the window
    as vLLM does (400, ``This model's maximum context length is N tokens. However, you
    requested M tokens ...``) or, with ``style="llama.cpp"``, as llama.cpp's server does
    (400, ``exceed_context_size_error`` with ``n_ctx`` and ``n_prompt_tokens``), and
    answers the others with :func:`verbose_answer` (``n`` choices). ``seen`` holds each
    request's ``(prompt tokens, max_tokens, rejected)``; ``rejected`` the bodies refused."""

    window: int
    style: str = "vllm"

    def __post_init__(self) -> None:
        self.seen: list[tuple[int, int, bool]] = []
        self.rejected: list[str] = []

    def __call__(self, body: dict[str, Any]) -> Reply | str:
        if len(self.seen) >= MAX_REQUESTS:
            return Reply(status=400, raw=b'{"error": {"message": "request cap of the test server reached"}}')
        prompt, completion = server_tokens(body), int(body.get("max_tokens") or 0)
        # vLLM refuses a prompt and completion cap beyond the window; llama.cpp a prompt that fills it
        too_long = prompt >= self.window if self.style == "llama.cpp" else prompt + completion > self.window
        self.seen.append((prompt, completion, too_long))
        if too_long:
            self.rejected.append(json.dumps(body, sort_keys=True))
            if self.style == "llama.cpp":
                return Reply(status=400, raw=json.dumps({"error": {
                    "code": 400, "message": f"request ({prompt} tokens) exceeds the available context size "
                    f"({self.window} tokens), try increasing it", "type": "exceed_context_size_error",
                    "n_prompt_tokens": prompt, "n_ctx": self.window}}).encode())
            return Reply(status=400, raw=json.dumps({
                "object": "error", "message": f"This model's maximum context length is {self.window} tokens. However, "
                f"you requested {prompt + completion} tokens ({prompt} in the messages, {completion} in the "
                "completion). Please reduce the length of the messages or completion.",
                "type": "BadRequestError", "param": None, "code": 400}).encode())
        reply = verbose_answer(body)
        n = body.get("n", 1)
        if n > 1 and isinstance(reply, str):
            return Reply(content=reply, choices=[reply] * (n - 1))
        return reply
