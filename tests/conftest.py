"""Shared test configuration: a private disk cache for the session, no traffic off the
machine (Ray usage stats off, a socket guard in this and every child process), and skips
for Isaac-marked tests where Isaac Sim is not installed."""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import tempfile
import urllib.parse
from pathlib import Path

import pytest

from tests import netguard

_CACHE_DIR = tempfile.mkdtemp(prefix="vlnverse-test-cache-")
_SITE_DIR = Path(__file__).resolve().parent / "_site"


def pytest_configure(config):
    # Tests (and the CLI processes they start) never read the user's scene cache.
    os.environ["VLNVERSE_CACHE_DIR"] = _CACHE_DIR
    # Nothing the tests start may contact an address off this machine.
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    os.environ[netguard.LOG_ENV] = os.path.join(_CACHE_DIR, "netguard.log")
    os.environ[netguard.ALLOW_ENV] = ",".join(live_llm_addresses())
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(_SITE_DIR), os.environ.get("PYTHONPATH")) if p)


def live_llm_addresses() -> set[str]:
    """The addresses of the endpoint that ``llm_live`` tests were asked to call, if any."""
    url = os.environ.get("VLNVERSE_LLM_BASE_URL")
    host = urllib.parse.urlsplit(url).hostname if url else None
    if not host:
        return set()
    return {info[4][0] for info in socket.getaddrinfo(host, None)}


def pytest_unconfigure(config):
    shutil.rmtree(_CACHE_DIR, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def _no_traffic_off_the_machine():
    """Refuse, for the whole session, socket connections to non-loopback addresses."""
    netguard.install()


@pytest.fixture(autouse=True)
def _fail_on_off_machine_connection(_no_traffic_off_the_machine):
    """Fail the test during which any guarded process tried to leave the machine."""
    yield
    refused = netguard.violations()
    if refused:
        netguard.clear()
        pytest.fail("connection off the machine: " + "; ".join(refused), pytrace=False)


def pytest_collection_modifyitems(config, items):
    has_isaac = importlib.util.find_spec("isaacsim") is not None
    has_llm = bool(os.environ.get("VLNVERSE_LLM_BASE_URL"))
    for item in items:
        if item.get_closest_marker("isaac") and not has_isaac:
            item.add_marker(pytest.mark.skip(reason="needs NVIDIA Isaac Sim (pip install 'vlnverse[isaac]' on an RTX machine)"))
        if item.get_closest_marker("llm_live") and not has_llm:
            item.add_marker(pytest.mark.skip(reason="needs a real LLM endpoint in VLNVERSE_LLM_BASE_URL"))
