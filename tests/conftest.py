"""Shared test configuration: a private disk cache for the session; skip Isaac-marked tests
where Isaac Sim is not installed."""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile

import pytest

_CACHE_DIR = tempfile.mkdtemp(prefix="vlnverse-test-cache-")


def pytest_configure(config):
    # Tests (and the CLI processes they start) never read the user's scene cache.
    os.environ["VLNVERSE_CACHE_DIR"] = _CACHE_DIR


def pytest_unconfigure(config):
    shutil.rmtree(_CACHE_DIR, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    has_isaac = importlib.util.find_spec("isaacsim") is not None
    has_llm = bool(os.environ.get("VLNVERSE_LLM_BASE_URL"))
    for item in items:
        if item.get_closest_marker("isaac") and not has_isaac:
            item.add_marker(pytest.mark.skip(reason="needs NVIDIA Isaac Sim (pip install 'vlnverse[isaac]' on an RTX machine)"))
        if item.get_closest_marker("llm_live") and not has_llm:
            item.add_marker(pytest.mark.skip(reason="needs a real LLM endpoint in VLNVERSE_LLM_BASE_URL"))
