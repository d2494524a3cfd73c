"""Every parser of model output reads 100 kB of hostile text in linear time: no regex
backtracks (the interpreter lock is held while one does, so no time limit would stop it)
and JSON nested too deeply is no JSON, not a crash."""

from __future__ import annotations

import pytest

from tests.growth import assert_linear_time
from vlnverse.agents.arna.agent import option_index
from vlnverse.agents.discussnav import _items, _landmarks
from vlnverse.agents.parsing import ReplyError, parse_reply, reply_fields
from vlnverse.errors import LLMAnswerError, LLMInvalidJSON
from vlnverse.llm.jsonanswer import extract_json, parse_json_answer

SIZE = 10_000
"""The small input; each kind is also read at 10x this (100 kB), the size first tested."""
HOSTILE = {
    "unpunctuated words": lambda n: "the red chair near the window " * (n // 30),
    "spaces": lambda n: "a" + " " * n + "x",
    "a key and spaces": lambda n: "Action" + " " * n,
    "open parentheses": lambda n: "Landmarks: chair (" * (n // 18),
    "brackets": lambda n: "[" * n,
    "braces": lambda n: "{" * n,
    "open fences": lambda n: "``` " + " \t" * (n // 2),
    "fences": lambda n: "```json\n{" * (n // 9),
    "bullets": lambda n: "1. " + " " * n + "x\n- " + "y " * (n // 2),
    "deep JSON": lambda n: '{"a":' * (n // 5) + "1" + "}" * (n // 5),
    "unclosed string": lambda n: '{"action": "' + "B" * n,
}
PARSERS = {
    "parse_reply": lambda text: parse_reply(text, ["A", "B", "STOP"]),
    "reply_fields": reply_fields,
    "extract_json": extract_json,
    "parse_json_answer": lambda text: parse_json_answer(text, required_keys=("action",)),
    "discussnav landmarks": _landmarks,
    "discussnav items": lambda text: _items(text, "actions"),
    "arna option_index": lambda text: option_index(text, ["a bed", "a sofa", "a lamp"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("parser", PARSERS)
def test_every_parser_reads_100_kB_of_hostile_text_in_linear_time(parser):
    def read(text):
        try:
            PARSERS[parser](text)
        except (ReplyError, LLMAnswerError):
            pass  # a bad reply, reported as one

    for kind, build in HOSTILE.items():
        assert_linear_time(lambda n, build=build: read(build(n)), SIZE, f"{parser} on {kind}")


def test_landmarks_text_form_still_reads_names_and_types():
    assert _landmarks("Landmarks: red chair (object), kitchen (room); blue (color, bright)") == [
        ("red chair", "object"), ("kitchen", "room"), ("blue", "color")]
    assert _items("1. go left\n  - then right \nnot a step", "actions") == ["go left", "then right"]
    assert extract_json('Here:\n```json\n{"a": 1}\n```') == {"a": 1}
    assert extract_json("```{\"a\": [1]}```") == {"a": [1]}
    with pytest.raises(LLMInvalidJSON, match="no JSON"):
        extract_json("[" * 5000 + "]" * 5000)  # too deep to parse: no JSON, not a RecursionError
