"""Hiding secrets in strings that are written or logged (LLM specs, URLs, error messages).

Two kinds of hiding:

- :func:`redact` masks what *looks* secret in a spec or URL: user info
  (``http://user:password@host/v1``) and secret-looking query values (``?api_key=...``).
  Everything a spec reaches — run files, manifests, reports, episode provenance, log lines,
  error messages — goes through it first.
- :func:`scrub` masks the secret *values* this process knows: an API key is registered
  (:func:`add_secret`) when it is read from the variable ``api_key_env`` names, so a server
  that echoes it back in an error body or a reply cannot get it into a record, a report, a
  dataset shard, a log line or an error message. Our errors scrub their messages when they
  are made (:class:`vlnverse.errors.VLNVerseError`), the writers of ``episodes.jsonl`` and
  dataset shards scrub each line, the CLI scrubs what it prints, and once a secret is known
  every log record is scrubbed (:func:`add_secret` installs a log-record factory).
"""

from __future__ import annotations

import json
import logging
import re
import threading
import urllib.parse

MASK = "***"
MIN_SECRET_LENGTH = 8
"""Shorter values are not scrubbed: masking them would mangle ordinary words."""

_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s?#]+@")
_SECRET_PARAM = re.compile(
    r"(?P<name>(?:^|(?<=[?&;\s]))[^=&?;\s]*(?:key|token|secret|passw|pwd|auth|credential|signature|sig)"
    r"[^=&?;\s]*=)(?P<value>[^&;\s#]*)", re.IGNORECASE)

_secrets: tuple[str, ...] = ()  # every known form, longest first
_lock = threading.Lock()


def add_secret(value: str | None) -> None:
    """Remember ``value`` (and its URL- and JSON-escaped forms) as a secret that
    :func:`scrub` masks from now on in this process (and in processes forked from it)."""
    global _secrets
    if not value or len(value) < MIN_SECRET_LENGTH:
        return
    forms = {value, urllib.parse.quote(value, safe=""), json.dumps(value, ensure_ascii=False)[1:-1],
             json.dumps(value)[1:-1]}
    with _lock:
        first = not _secrets
        _secrets = tuple(sorted(set(_secrets) | forms, key=len, reverse=True))
    if first:
        _scrub_log_records()


def scrub(text: str) -> str:
    """``text`` with every known secret value replaced by ``***``."""
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def redact(text: str) -> str:
    """``text`` with URL user info, secret-looking query values and known secret values
    replaced by ``***``.

    Names of environment variables (``api_key_env=OPENAI_API_KEY``) are kept: they say
    where a key is, not what it is.
    """
    text = _USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", scrub(text))
    return _SECRET_PARAM.sub(lambda m: m["name"] + (m["value"] if m["name"].lower().endswith("_env=")
                                                    else MASK), text)


def _scrub_log_records() -> None:
    """Make every log record of this process scrub its message and traceback when it is made
    (so no handler, ours or a library's, can print a known secret)."""
    make = logging.getLogRecordFactory()
    formatter = logging.Formatter()

    def scrubbed(*args, **kwargs) -> logging.LogRecord:
        record = make(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record is logging's to report
            return record
        clean = scrub(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[0] is not None:
            record.exc_text = scrub(formatter.formatException(record.exc_info))
        if record.stack_info:
            record.stack_info = scrub(record.stack_info)
        return record

    logging.setLogRecordFactory(scrubbed)
