"""Reading actions out of model replies: an action field names exactly one option."""

from __future__ import annotations

import json

import pytest

from vlnverse.agents.parsing import ReplyError, parse_option, parse_reply

OPTIONS = ("A", "C", "STOP", "ASK")
CANDIDATES = ("A", "B", "C", "I", "STOP")

#: The issue's three examples: each was read as an action (STOP, A, candidate I).
ISSUE_EXAMPLES = ["STOP is not appropriate, choose B", "a good choice is C", "I choose B"]

#: Prose a real model writes in the action field: none of it names exactly one option.
PROSE = [
    "I think B is best",
    "B or C",
    "B and then C",
    "go to B",
    "move to candidate B",
    "The best option is B.",
    "Candidate B, or maybe C",
    "A. Actually, no: C",
    "B/C",
    "stop here, we have arrived",
    "Stop and ask",
    "Let me think. The sofa is ahead, so B",
    "C is closer to the kitchen",
    "A is blocked; choose C",
    "Since the door is on the left, I would pick C",
    "Option B seems right",
    "B, C",
    "Choose C.",
    "Waypoint A then STOP",
    "forward-left",
]


@pytest.mark.parametrize("text, action", [
    ('{"summary": "s", "action": "C"}', "C"),
    ('Sure.\n```json\n{"action": "c."}\n```', "C"),
    ('{"action": "Candidate A: forward, 1.0 m"}', "A"),
    ('{"action": "\\"B\\""}', "B"),
    ('{"action": "**C**"}', "C"),
    ('{"action": "(I)"}', "I"),
    ('{"action": "option: b"}', "B"),
    ('{"action": "Direction C - the doorway"}', "C"),
    ('{"action": "C, it leads to the hall"}', "C"),
    ("Thought: the sofa is ahead\nNew Planning: go on\nAction: stop", "STOP"),
    ("**Action**: A. turn left to Place 3", "A"),
    ("Action: `B`\nbecause the hall continues there", "B"),
])
def test_valid_replies(text, action):
    assert parse_reply(text, CANDIDATES).action == action


def test_fields_and_questions_are_kept():
    decision = parse_reply('{"thought": "t", "action": "ASK", "question": "Where is the lamp?"}', OPTIONS)
    assert decision.question == "Where is the lamp?" and decision.fields == {"thought": "t"}
    lines = parse_reply("New Planning: first\nsecond line\nAction: A", OPTIONS)
    assert lines.fields["new_planning"] == "first\nsecond line"


@pytest.mark.parametrize("text, kind", [
    ("", "empty"), ("   \n", "empty"),
    ("I think we should go to the kitchen", "malformed"),
    ('{"thought": "no action here"}', "malformed"),
    ('{"action": "ASK"}', "malformed"),
    ('{"action": "B"}', "unknown_id"),
    ('{"action": "Z9"}', "unknown_id"),
    ('{"action": "go forward"}', "malformed"),
])
def test_unusable_replies_say_why(text, kind):
    with pytest.raises(ReplyError) as caught:
        parse_reply(text, OPTIONS)
    assert caught.value.kind == kind


@pytest.mark.parametrize("prose", ISSUE_EXAMPLES + PROSE)
@pytest.mark.parametrize("form", ["json", "lines"])
def test_prose_in_the_action_field_is_never_an_action(prose, form):
    text = json.dumps({"thought": "t", "action": prose}) if form == "json" else f"Thought: t\nAction: {prose}"
    with pytest.raises(ReplyError) as caught:
        parse_reply(text, CANDIDATES)
    assert caught.value.kind == "malformed"


def test_parse_option_is_the_strict_rule_for_one_field():
    assert parse_option(" 'b' ", ("A", "B")) == "B" and parse_option("Candidate A:", ("A", "B")) == "A"
    for raw, kind in (("frontier B", "malformed"), ("F", "unknown_id"), ("", "malformed"), ("A or B", "malformed")):
        with pytest.raises(ReplyError) as caught:
            parse_option(raw, ("A", "B"))
        assert caught.value.kind == kind, raw


def test_ask_is_invalid_when_not_offered():
    with pytest.raises(ReplyError) as caught:
        parse_reply('{"action": "ASK", "question": "?"}', ("A", "STOP"))
    assert caught.value.kind == "unknown_id"


def test_the_strict_rule_reads_long_hostile_fields_in_linear_time():
    import time

    for raw in ("Candidate" + " " * 100_000 + "x", "B" + " " * 100_000 + "x", "B" * 100_000 + ".",
                "option:" + " \t" * 50_000 + "B", "B," + " C" * 50_000):
        started = time.perf_counter()
        with pytest.raises(ReplyError):
            parse_option(raw, ("A", "C"))
        assert time.perf_counter() - started < 1.0, raw[:20]


def test_hostile_replies_through_the_new_readings_stay_fast_and_refused():
    """Near-JSON read as a Python literal, reasoning blocks and labels: bounded, never a crash."""
    import time

    hostile = ["{'action': " + "[" * 10_000 + "'B'" + "]" * 10_000 + "}",     # nested too deeply for literal_eval
               "{'action': 'B'," + " 'x': 1," * 5_000 + "}",                    # past the loose-object bound
               "<think>" + "A, B or C? " * 20_000,                               # reasoning that never closes
               "</think>" * 20_000 + "Answer:" * 10_000,
               "<answer>" * 30_000 + "B"]
    for text in hostile:
        started = time.perf_counter()
        try:
            parse_reply(text, ("A", "B", "STOP"))
        except ReplyError:
            pass
        assert time.perf_counter() - started < 2.0, text[:30]
    with pytest.raises(ReplyError) as caught:
        parse_reply(hostile[2], ("A", "B", "STOP"))
    assert caught.value.kind == "empty"
