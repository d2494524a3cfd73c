"""Every parser of model output reads 100 kB of hostile text in linear time: no regex
backtracks (the interpreter lock is held while one does, so no time limit would stop it)
and JSON nested too deeply is no JSON, not a crash."""

from __future__ import annotations

import time

import pytest

from vlnverse.agents.arna.agent import option_index
from vlnverse.agents.discussnav import _items, _landmarks
from vlnverse.agents.parsing import ReplyError, parse_reply, reply_fields
from vlnverse.errors import LLMAnswerError, LLMInvalidJSON
from vlnverse.llm.jsonanswer import extract_json, parse_json_answer

SIZE = 100_000
HOSTILE = {
    "unpunctuated words": "the red chair near the window " * (SIZE // 30),
    "spaces": "a" + " " * SIZE + "x",
    "a key and spaces": "Action" + " " * SIZE,
    "open parentheses": "Landmarks: chair (" * (SIZE // 18),
    "brackets": "[" * SIZE,
    "braces": "{" * SIZE,
    "open fences": "``` " + " \t" * (SIZE // 2),
    "fences": "```json\n{" * (SIZE // 9),
    "bullets": "1. " + " " * SIZE + "x\n- " + "y " * (SIZE // 2),
    "deep JSON": '{"a":' * (SIZE // 5) + "1" + "}" * (SIZE // 5),
    "unclosed string": '{"action": "' + "B" * SIZE,
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


@pytest.mark.parametrize("parser", PARSERS)
def test_every_parser_reads_100_kB_of_hostile_text_fast(parser):
    for kind, text in HOSTILE.items():
        started = time.perf_counter()
        try:
            PARSERS[parser](text)
        except (ReplyError, LLMAnswerError):
            pass  # a bad reply, reported as one
        took = time.perf_counter() - started
        assert took < 5.0, f"{parser} took {took:.1f} s on {kind}"  # minutes when a regex backtracks


def test_landmarks_text_form_still_reads_names_and_types():
    assert _landmarks("Landmarks: red chair (object), kitchen (room); blue (color, bright)") == [
        ("red chair", "object"), ("kitchen", "room"), ("blue", "color")]
    assert _items("1. go left\n  - then right \nnot a step", "actions") == ["go left", "then right"]
    assert extract_json('Here:\n```json\n{"a": 1}\n```') == {"a": 1}
    assert extract_json("```{\"a\": [1]}```") == {"a": [1]}
    with pytest.raises(LLMInvalidJSON, match="no JSON"):
        extract_json("[" * 5000 + "]" * 5000)  # too deep to parse: no JSON, not a RecursionError
