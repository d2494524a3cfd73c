"""The reply corpus: replies in the styles of the model families people run (GPT-4o-class,
Qwen, Llama, Gemma, Mistral, DeepSeek-R1 ``<think>`` blocks; JSON mode and not), each with
its expected reading: the option it names, or the kind of refusal (``malformed``,
``unknown_id``, ``empty``). A reply naming exactly one offered option in the decision
position is read whatever follows; two competing options or none are refused; prose never
becomes STOP."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from vlnverse.agents.parsing import REPLY_ERRORS, ReplyError, parse_reply

CORPUS = json.loads((Path(__file__).parent / "data" / "reply_corpus.json").read_text(encoding="utf-8"))
FAMILIES = ("gpt-4o", "qwen", "llama", "gemma", "mistral", "deepseek-r1")


def _id(entry: dict) -> str:
    return f"{entry['family']}:{' '.join(entry['reply'].split())[:60]}"


@pytest.mark.parametrize("entry", CORPUS, ids=[_id(e) for e in CORPUS])
def test_each_reply_is_read_as_expected(entry):
    expect = entry["expect"]
    if expect in REPLY_ERRORS:
        with pytest.raises(ReplyError) as caught:
            parse_reply(entry["reply"], entry["options"])
        assert caught.value.kind == expect, str(caught.value)
    else:
        assert parse_reply(entry["reply"], entry["options"]).action == expect


def test_the_corpus_covers_every_family_both_modes_and_both_outcomes():
    assert len(CORPUS) >= 150
    assert set(FAMILIES) <= {e["family"] for e in CORPUS}
    as_json = Counter(e["family"] for e in CORPUS if "{" in e["reply"])
    as_text = Counter(e["family"] for e in CORPUS if "{" not in e["reply"])
    assert all(as_json[f] and as_text[f] for f in FAMILIES), (as_json, as_text)
    read = [e for e in CORPUS if e["expect"] not in REPLY_ERRORS]
    assert len(read) >= 100 and len(CORPUS) - len(read) >= 40
    assert sum("<think>" in e["reply"] for e in CORPUS) >= 15


def test_prose_in_the_corpus_never_becomes_stop():
    for entry in CORPUS:
        if entry["expect"] != "STOP":
            try:
                assert parse_reply(entry["reply"], entry["options"]).action != "STOP", entry["reply"]
            except ReplyError:
                pass
