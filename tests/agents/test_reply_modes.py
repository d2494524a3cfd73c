"""The decision reply mode: structured output (the reply's JSON schema, ``action`` one of
the options) where the server takes schemas, the text parser where it does not or when it
refuses one; the client's ``features_used["replies"]`` says which."""

from __future__ import annotations

import pytest

from tests.agents.conftest import ScriptedModel, walk_then_stop
from tests.agents.test_agents_episodes import run
from vlnverse.errors import LLMUnsupportedFeature
from vlnverse.llm.types import LLMRequest, LLMResponse


class SchemaModel(ScriptedModel):
    """A scripted model that takes JSON schemas (or refuses the first one, then none)."""

    def __init__(self, *, refuses: bool = False) -> None:
        super().__init__(walk_then_stop(2))
        self.supports_json_schema = True
        self.refuses = refuses
        self.schemas: list[dict | None] = []

    def send(self, request: LLMRequest) -> LLMResponse:
        schema = request.params.json_schema
        if schema is not None and self.refuses:
            self.supports_json_schema = False
            raise LLMUnsupportedFeature("the test server does not take json_schema", "json_schema")
        self.schemas.append(None if schema is None else dict(schema))
        return super().send(request)


@pytest.mark.parametrize("name", ["text_history", "map_history"])
def test_structured_output_is_the_default_where_the_server_takes_it(dataset, name):
    model = SchemaModel()
    record, _ = run(dataset, name, model, config={"min_steps_before_stop": 0})
    assert record["fail_reason"] == "stop" and record["agent_trace"]["parse_failures"] == 0
    schema = model.schemas[0]
    assert schema is not None and schema["required"][-1] == "action"
    assert schema["properties"]["action"]["enum"] == record["agent_trace"]["steps"][0]["options"]
    assert model.features_used["replies"] == ["json_schema"]


def test_a_server_that_refuses_the_schema_gets_text_read_by_the_parser(dataset):
    model = SchemaModel(refuses=True)
    record, _ = run(dataset, "text_history", model, config={"min_steps_before_stop": 0})
    assert record["fail_reason"] == "stop" and model.schemas == [None] * 3
    assert model.features_used["replies"] == ["text"]


def test_lines_replies_and_servers_without_schemas_are_text(dataset):
    model = SchemaModel()
    record, _ = run(dataset, "text_history", model, config={"min_steps_before_stop": 0, "prompt_variant": "lines"})
    assert model.schemas == [None] * len(record["agent_trace"]["steps"])
    plain = ScriptedModel(walk_then_stop(2))
    run(dataset, "text_history", plain, config={"min_steps_before_stop": 0})
    assert model.features_used["replies"] == plain.features_used["replies"] == ["text"]
