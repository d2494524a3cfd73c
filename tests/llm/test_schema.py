"""The dependency-free JSON-schema validator of structured answers."""

from __future__ import annotations

import pytest

from vlnverse.errors import ConfigError
from vlnverse.llm.schema import check_schema, schema_errors

SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["stop", "move"]},
        "candidate": {"type": ["integer", "null"], "minimum": 0, "maximum": 7},
        "notes": {"type": "array", "items": {"type": "string", "maxLength": 5}, "maxItems": 2},
    },
    "required": ["action"],
    "additionalProperties": False,
}


@pytest.mark.parametrize("value, problem", [
    ({"action": "move", "candidate": 3, "notes": ["ok"]}, None),
    ({"action": "move", "candidate": None}, None),
    ([], "expected object"),
    ({"candidate": 1}, "missing key 'action'"),
    ({"action": "fly"}, "is not one of"),
    ({"action": "stop", "candidate": 9}, "candidate: 9 > 7"),
    ({"action": "stop", "candidate": True}, "expected integer or null"),
    ({"action": "stop", "notes": ["toolong"]}, "notes/0: longer than 5"),
    ({"action": "stop", "notes": ["a", "b", "c"]}, "more than 2 items"),
    ({"action": "stop", "why": "x"}, "unexpected key 'why'"),
])
def test_values(value, problem):
    errors = schema_errors(value, SCHEMA)
    assert (errors == []) if problem is None else any(problem in e for e in errors), errors


def test_unsupported_keywords_are_refused():
    check_schema(SCHEMA)
    with pytest.raises(ConfigError, match="pattern"):
        check_schema({"type": "string", "pattern": "^a"})
    with pytest.raises(ConfigError, match="unknown type"):
        check_schema({"properties": {"x": {"type": "float"}}})
