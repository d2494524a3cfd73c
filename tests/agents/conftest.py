"""Fixtures of the agent tests: a small dataset on the bundled scenes and a scripted model."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.bundled import bundled_dataset as make_bundled_dataset
from vlnverse.llm.base import LLMClient
from vlnverse.llm.types import LLMRequest, LLMResponse, Usage

#: Small, fast agent settings (64 px views; the geometry is the same as at 224 px).
SMALL = {"panorama": {"image_size": 64, "depth_stride": 2}}


class ScriptedModel(LLMClient):
    """A stand-in model: ``policy(step, options, prompt) -> reply text``; counts its calls.

    ``step`` is the number of past steps listed in the prompt's history.
    """

    def __init__(self, policy: Callable[[int, list[str], str], str]) -> None:
        super().__init__("scripted-model")
        self.policy = policy
        self.prompts: list[str] = []

    def send(self, request: LLMRequest) -> LLMResponse:
        prompt = request.messages[-1].text
        self.prompts.append(prompt)
        found = re.findall(r"exactly one of: ([A-Z, ]+)\.", prompt)
        options = found[-1].split(", ") if found else []
        step = len(re.findall(r"^step \d+:", prompt, re.M))
        return LLMResponse(text=self.policy(step, options, prompt), model=self.model,
                           usage=Usage(len(prompt) // 4, 20), cost_usd=0.001, key=request.key)


def reply(action: str, **fields: str) -> str:
    return json.dumps({"thought": "I follow the instruction.", "summary": "Progressing.",
                       "new_planning": "Keep going, then stop.", **fields, "action": action})


def walk_then_stop(steps: int = 2) -> Callable[[int, list[str], str], str]:
    """Move to the first candidate ``steps`` times, then STOP."""
    def policy(step: int, options: list[str], prompt: str) -> str:
        ids = [o for o in options if o not in ("STOP", "ASK")]
        return reply(ids[0] if step < steps and ids else "STOP")
    return policy


@pytest.fixture(scope="session")
def dataset(tmp_path_factory) -> Path:
    return make_bundled_dataset(tmp_path_factory.mktemp("agents_dataset"), per_scene=1, tasks=("coarse", "visual_reference", "long_horizon", "dialogue"))
