"""Reading actions out of model replies."""

from __future__ import annotations

import pytest

from vlnverse.agents.parsing import ReplyError, parse_reply

OPTIONS = ("A", "C", "STOP", "ASK")


@pytest.mark.parametrize("text, action", [
    ('{"summary": "s", "action": "C"}', "C"),
    ('Sure.\n```json\n{"action": "c."}\n```', "C"),
    ('{"action": "Candidate A: forward, 1.0 m"}', "A"),
    ("Thought: the sofa is ahead\nNew Planning: go on\nAction: stop", "STOP"),
    ("**Action**: A. turn left to Place 3", "A"),
])
def test_valid_replies(text, action):
    assert parse_reply(text, OPTIONS).action == action


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
    ('{"action": "go forward"}', "unknown_id"),
])
def test_unusable_replies_say_why(text, kind):
    with pytest.raises(ReplyError) as caught:
        parse_reply(text, OPTIONS)
    assert caught.value.kind == kind


def test_ask_is_invalid_when_not_offered():
    with pytest.raises(ReplyError) as caught:
        parse_reply('{"action": "ASK", "question": "?"}', ("A", "STOP"))
    assert caught.value.kind == "unknown_id"
