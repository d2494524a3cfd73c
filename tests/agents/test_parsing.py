"""Reading actions out of model replies: an action field names exactly one option."""

from __future__ import annotations

import json

import pytest

from tests.growth import assert_linear_time
from vlnverse.agents.parsing import ReplyError, parse_option, parse_reply

OPTIONS = ("A", "C", "STOP", "ASK")
CANDIDATES = ("A", "B", "C", "I", "STOP")

#: Prose that decides nothing (a hedge, a question, two options, STOP written only in prose):
#: none of it is ever an action.
PROSE = [
    "I think B is best",
    "B or C",
    "B and then C",
    "Candidate B, or maybe C",
    "B/C",
    "stop here, we have arrived",
    "stop? no. keep going",
    "Stop and ask",
    "Option B seems right",
    "Maybe C",
    "Is it B?",
    "B, C",
    "Waypoint A then STOP",
    "forward-left",
]

#: Sentences that state one decision, refused before issue 57's rule (the last explicit
#: decision wins; one option named once outside reasoning is a decision): what each decides.
DECIDED = {
    "STOP is not appropriate, choose B": "B",
    "a good choice is C": "C",
    "I choose B": "B",
    "go to B": "B",
    "move to candidate B": "B",
    "The best option is B.": "B",
    "A. Actually, no: C": "C",
    "Let me think. The sofa is ahead, so B": "B",
    "C is closer to the kitchen": "C",
    "A is blocked; choose C": "C",
    "Since the door is on the left, I would pick C": "C",
    "Choose C.": "C",
}


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


@pytest.mark.parametrize("prose", PROSE)
@pytest.mark.parametrize("form", ["json", "lines"])
def test_prose_that_decides_nothing_is_never_an_action(prose, form):
    text = json.dumps({"thought": "t", "action": prose}) if form == "json" else f"Thought: t\nAction: {prose}"
    with pytest.raises(ReplyError) as caught:
        parse_reply(text, CANDIDATES)
    assert caught.value.kind == "malformed"


@pytest.mark.parametrize("sentence", sorted(DECIDED))
@pytest.mark.parametrize("form", ["json", "lines"])
def test_a_sentence_stating_one_decision_is_read(sentence, form):
    text = json.dumps({"thought": "t", "action": sentence}) if form == "json" else f"Thought: t\nAction: {sentence}"
    assert parse_reply(text, CANDIDATES).action == DECIDED[sentence]


@pytest.mark.parametrize("raw, says", [
    ("B or C", "names more than one option (B, C"), ("B, C", "names more than one option (B, C"),
    ("go forward", "does not decide one option"), ("we are done, STOP here", "names STOP only in prose"),
])
def test_a_refusal_says_why(raw, says):
    with pytest.raises(ReplyError, match=says.replace("(", r"\(")):
        parse_option(raw, CANDIDATES)


def test_parse_option_is_the_strict_rule_for_one_field():
    assert parse_option(" 'b' ", ("A", "B")) == "B" and parse_option("Candidate A:", ("A", "B")) == "A"
    assert parse_option("frontier B", ("A", "B")) == "B"  # one option named once: a decision
    for raw, kind in (("F", "unknown_id"), ("", "malformed"), ("A or B", "malformed")):
        with pytest.raises(ReplyError) as caught:
            parse_option(raw, ("A", "B"))
        assert caught.value.kind == kind, raw


def test_ask_is_invalid_when_not_offered():
    with pytest.raises(ReplyError) as caught:
        parse_reply('{"action": "ASK", "question": "?"}', ("A", "STOP"))
    assert caught.value.kind == "unknown_id"


def test_the_strict_rule_reads_long_hostile_fields_in_linear_time():
    builders = {"key and spaces": lambda n: "Candidate" + " " * n + "x", "id and spaces": lambda n: "B" + " " * n + "x",
                "one letter": lambda n: "B" * n + ".", "label and tabs": lambda n: "option:" + " \t" * (n // 2) + "B",
                "many ids": lambda n: "B," + " C" * (n // 2)}
    for name, build in builders.items():
        def refuse(n, build=build):
            with pytest.raises(ReplyError):
                parse_option(build(n), ("A", "C"))

        assert_linear_time(refuse, 10_000, name)


HOSTILE_READINGS = {  # n = 10,000 is the size the readings were first tested at
    "nested too deeply for literal_eval": lambda n: "{'action': " + "[" * n + "'B'" + "]" * n + "}",
    "past the loose-object bound": lambda n: "{'action': 'B'," + " 'x': 1," * (n // 2) + "}",
    "reasoning that never closes": lambda n: "<think>" + "A, B or C? " * (2 * n),
    "closing tags and labels": lambda n: "</think>" * (2 * n) + "Answer:" * n,
    "opening answer tags": lambda n: "<answer>" * (3 * n) + "B",
}


def test_hostile_replies_through_the_new_readings_stay_fast_and_refused():
    """Near-JSON read as a Python literal, reasoning blocks and labels: linear time, never a crash."""

    def read(text):
        try:
            parse_reply(text, ("A", "B", "STOP"))
        except ReplyError:
            pass

    for name, build in HOSTILE_READINGS.items():
        assert_linear_time(lambda n, build=build: read(build(n)), 1_000, name)
    with pytest.raises(ReplyError) as caught:
        parse_reply(HOSTILE_READINGS["reasoning that never closes"](10_000), ("A", "B", "STOP"))
    assert caught.value.kind == "empty"
