"""The reading rule on held-out replies, a few dozen per class (``data/decision_corpus.json``):
an option inside a plain sentence, a label after prose on the same line, a change of mind,
prose in the action field, and two options named. The last explicit decision wins; a hedge
or a question decides nothing; one option named once outside reasoning is a decision; prose
never becomes STOP; naming two options is refused as naming more than one."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from vlnverse.agents.parsing import ReplyError, parse_reply

CORPUS = json.loads((Path(__file__).parent / "data" / "decision_corpus.json").read_text(encoding="utf-8"))
CLASSES = ("sentence", "label", "change", "prose", "several")


def _id(entry: dict) -> str:
    return f"{entry['class']}:{entry['reply'][:50]}"


@pytest.mark.parametrize("form", ["bare", "json", "lines"])
@pytest.mark.parametrize("entry", CORPUS, ids=[_id(e) for e in CORPUS])
def test_each_reply_reads_as_a_careful_reader_reads_it(entry, form):
    reply = {"bare": entry["reply"], "json": json.dumps({"thought": "t", "action": entry["reply"]}),
             "lines": f"Thought: t\nAction: {entry['reply']}"}[form]
    if entry["expect"] == "malformed":
        with pytest.raises(ReplyError) as caught:
            parse_reply(reply, entry["options"])
        assert caught.value.kind == "malformed", str(caught.value)
        assert entry.get("says", "") in str(caught.value)
    else:
        assert parse_reply(reply, entry["options"]).action == entry["expect"]


def test_the_corpus_has_a_few_dozen_replies_per_class():
    counts = Counter(e["class"] for e in CORPUS)
    assert set(counts) == set(CLASSES) and min(counts.values()) >= 24, counts
    assert not any(e["expect"] == "STOP" for e in CORPUS if e["class"] != "label")  # only a label decides STOP

