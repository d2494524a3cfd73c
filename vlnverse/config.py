"""Strict construction of frozen config dataclasses from plain mappings, YAML or JSON.

Unknown keys are errors naming the key; nested dataclass fields are built recursively;
tuples are accepted from lists. Validation itself lives in each config's
``__post_init__``, beside the component it configures.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from vlnverse.errors import ConfigError

C = TypeVar("C")


def config_from_mapping(cls: type[C], data: Mapping[str, Any], *, where: str = "") -> C:
    """Build the dataclass ``cls`` from ``data``, rejecting unknown keys."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where or cls.__name__}: expected a mapping, got {type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ConfigError(
            f"{where or cls.__name__}: unknown key(s) {', '.join(unknown)}; "
            f"valid keys: {', '.join(sorted(fields))}"
        )
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for name, value in data.items():
        kwargs[name] = _coerce(hints.get(name, Any), value, f"{where or cls.__name__}.{name}")
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise ConfigError(f"{where or cls.__name__}: {exc}") from exc


def _coerce(hint: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if dataclasses.is_dataclass(hint) and isinstance(value, Mapping):
        return config_from_mapping(hint, value, where=where)
    if origin is tuple and isinstance(value, list):
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(args[0], v, where) for v in value)
        return tuple(value)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        for arg in args:
            if dataclasses.is_dataclass(arg) and isinstance(value, Mapping):
                return config_from_mapping(arg, value, where=where)
    return value


def config_to_dict(config: Any) -> dict[str, Any]:
    """The JSON-serializable dict of a config dataclass (tuples become lists)."""
    return json.loads(json.dumps(dataclasses.asdict(config)))


def read_config_mapping(path: str | Path, what: str = "config file") -> dict[str, Any]:
    """The mapping in a YAML or JSON file (``{}`` for an empty file).

    Raises:
        ConfigError: unreadable file, invalid YAML/JSON, or not a mapping (names ``what``).
    """
    import yaml

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror}") from exc
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{what} {path} is not valid {path.suffix[1:] or 'YAML'}: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{what} {path} must be a mapping, got {type(data).__name__}")
    return dict(data)


def load_config_file(cls: type[C], path: str | Path) -> C:
    """Load ``cls`` from a YAML or JSON file, strictly."""
    return config_from_mapping(cls, read_config_mapping(path), where=str(path))
