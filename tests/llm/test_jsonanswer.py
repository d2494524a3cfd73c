"""Tolerant JSON extraction and validation of model answers."""

from __future__ import annotations

import pytest

from vlnverse.errors import LLMAnswerError, LLMInvalidJSON, LLMSchemaError
from vlnverse.llm import extract_json, parse_json_answer


@pytest.mark.parametrize(
    "text",
    [
        '{"formal": "Go.", "natural": "Go!", "casual": "go"}',
        '```json\n{"formal": "Go.", "natural": "Go!", "casual": "go"}\n```',
        '```\n{"formal": "Go.", "natural": "Go!", "casual": "go"}\n```',
        'Here you are:\n```JSON\n{"formal": "Go.", "natural": "Go!", "casual": "go"}```\nHope it helps.',
        'Sure. {"formal": "Go.", "natural": "Go!", "casual": "go"} That is all.',
        'Braces {like this} first, then {"formal": "Go.", "natural": "Go!", "casual": "go"}',
    ],
)
def test_extracts_json_from_common_wrappings(text: str) -> None:
    assert parse_json_answer(text, string_keys=["formal", "natural", "casual"]) == {
        "formal": "Go.",
        "natural": "Go!",
        "casual": "go",
    }


def test_lists_and_any_type() -> None:
    assert extract_json("Answer: [1, 2, 3]") == [1, 2, 3]
    assert parse_json_answer('```json\n["a"]\n```', expect=list) == ["a"]
    assert parse_json_answer("42", expect=None) == 42


@pytest.mark.parametrize(
    "text", ["", "   ", "I'm sorry, I can't help with that.", '{"formal": "unterminated']
)
def test_invalid_json(text: str) -> None:
    with pytest.raises(LLMInvalidJSON):
        parse_json_answer(text)


def test_schema_errors_name_the_problem() -> None:
    with pytest.raises(LLMSchemaError, match="expected a JSON dict, got list"):
        parse_json_answer("[1]")
    with pytest.raises(LLMSchemaError, match="lacks key\\(s\\) natural, casual"):
        parse_json_answer('{"formal": "x"}', required_keys=["formal", "natural", "casual"])
    with pytest.raises(LLMSchemaError, match="casual must be non-empty strings"):
        parse_json_answer(
            '{"formal": "x", "natural": "y", "casual": " "}',
            string_keys=["formal", "natural", "casual"],
        )
    with pytest.raises(LLMSchemaError, match="expected a JSON object"):
        parse_json_answer("[1]", expect=list, required_keys=["a"])
    assert issubclass(LLMInvalidJSON, LLMAnswerError) and issubclass(LLMSchemaError, LLMAnswerError)
