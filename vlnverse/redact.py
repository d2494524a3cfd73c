"""Hiding secrets in strings that are written or logged (LLM specs, URLs, error messages).

A base URL may carry credentials (``http://user:password@host/v1``) and a query may carry
a key (``?api_key=...``). Everything a spec reaches — run files, manifests, reports,
episode provenance, log lines, error messages — goes through :func:`redact` first.
"""

from __future__ import annotations

import re

MASK = "***"

_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s?#]+@")
_SECRET_PARAM = re.compile(
    r"(?P<name>(?:^|(?<=[?&;\s]))[^=&?;\s]*(?:key|token|secret|passw|pwd|auth|credential|signature|sig)"
    r"[^=&?;\s]*=)(?P<value>[^&;\s#]*)", re.IGNORECASE)


def redact(text: str) -> str:
    """``text`` with URL user info and secret-looking query values replaced by ``***``.

    Names of environment variables (``api_key_env=OPENAI_API_KEY``) are kept: they say
    where a key is, not what it is.
    """
    text = _USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", text)
    return _SECRET_PARAM.sub(lambda m: m["name"] + (m["value"] if m["name"].lower().endswith("_env=")
                                                    else MASK), text)
