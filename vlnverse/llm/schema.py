"""Validation of JSON answers against the JSON-schema subset agents ask for.

Covers the keywords of structured-output schemas (the subset OpenAI's strict mode
accepts): ``type`` (one or a list), ``enum``, ``const``, ``properties``, ``required``,
``additionalProperties`` (false or a schema), ``items``, ``minItems``/``maxItems``,
``minimum``/``maximum``, ``minLength``/``maxLength``, ``anyOf``. Other keywords are
rejected when the schema is checked, so a schema never silently validates less than it
says. (A dependency-free validator: the Isaac Sim Python ships no ``jsonschema``.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vlnverse.errors import ConfigError

KEYWORDS = frozenset({
    "type", "enum", "const", "properties", "required", "additionalProperties", "items", "minItems",
    "maxItems", "minimum", "maximum", "minLength", "maxLength", "anyOf",
    "title", "description", "default", "$schema",  # annotations
})
_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def check_schema(schema: Any, where: str = "schema") -> None:
    """Raise ConfigError when ``schema`` uses a keyword or type this validator lacks."""
    if not isinstance(schema, Mapping):
        raise ConfigError(f"{where} must be a JSON object")
    unknown = sorted(set(schema) - KEYWORDS)
    if unknown:
        raise ConfigError(f"{where}: unsupported JSON-schema keyword(s) {', '.join(unknown)}")
    types = schema.get("type", [])
    for name in [types] if isinstance(types, str) else types:
        if name not in _TYPES:
            raise ConfigError(f"{where}: unknown type {name!r}")
    for key, sub in (schema.get("properties") or {}).items():
        check_schema(sub, f"{where}.properties.{key}")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), Mapping):
            check_schema(schema[key], f"{where}.{key}")
    for i, sub in enumerate(schema.get("anyOf", ())):
        check_schema(sub, f"{where}.anyOf[{i}]")


def schema_errors(value: Any, schema: Mapping[str, Any], path: str = "") -> list[str]:
    """What is wrong with ``value`` under ``schema`` (empty: valid), as ``path: problem``."""
    here = path or "(top level)"
    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else list(types)
        if not any(_TYPES[n](value) for n in names):
            return [f"{here}: expected {' or '.join(names)}, got {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{here}: {value!r} is not one of {schema['enum']!r}"]
    if "const" in schema and value != schema["const"]:
        return [f"{here}: expected {schema['const']!r}"]
    if "anyOf" in schema and all(schema_errors(value, s, path) for s in schema["anyOf"]):
        return [f"{here}: matches none of the allowed forms"]
    errors: list[str] = []
    if isinstance(value, dict):
        props = schema.get("properties", {})
        errors += [f"{here}: missing key {k!r}" for k in schema.get("required", ()) if k not in value]
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            sub = f"{path}/{key}" if path else key
            if key in props:
                errors += schema_errors(item, props[key], sub)
            elif extra is False:
                errors.append(f"{here}: unexpected key {key!r}")
            elif isinstance(extra, Mapping):
                errors += schema_errors(item, extra, sub)
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(f"{here}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{here}: more than {schema['maxItems']} items")
        if isinstance(schema.get("items"), Mapping):
            for i, item in enumerate(value):
                errors += schema_errors(item, schema["items"], f"{path}/{i}" if path else str(i))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{here}: {value} < {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{here}: {value} > {schema['maximum']}")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(f"{here}: shorter than {schema['minLength']}")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{here}: longer than {schema['maxLength']}")
    return errors
