"""Strict config loading: unknown keys, nested dataclasses, tuples, bad files."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from vlnverse.config import (
    config_from_mapping,
    config_to_dict,
    load_config_file,
    read_config_mapping,
)
from vlnverse.errors import ConfigError


@dataclass(frozen=True)
class Inner:
    radius: float = 0.3


@dataclass(frozen=True)
class Outer:
    name: str = "x"
    sizes: tuple[int, ...] = (1, 2)
    inner: Inner = field(default_factory=Inner)


def test_nested_and_tuples_round_trip():
    config = config_from_mapping(Outer, {"name": "y", "sizes": [3, 4], "inner": {"radius": 0.5}})
    assert config == Outer("y", (3, 4), Inner(0.5))
    assert config_to_dict(config) == {"name": "y", "sizes": [3, 4], "inner": {"radius": 0.5}}


def test_unknown_keys_are_named():
    with pytest.raises(ConfigError, match=r"unknown key\(s\) colour; valid keys: inner, name, sizes"):
        config_from_mapping(Outer, {"colour": "red"})
    with pytest.raises(ConfigError, match=r"Outer.inner: unknown key\(s\) radious"):
        config_from_mapping(Outer, {"inner": {"radious": 1}})


def test_files(tmp_path):
    (tmp_path / "a.yaml").write_text("name: z\ninner:\n  radius: 0.2\n")
    assert load_config_file(Outer, tmp_path / "a.yaml") == Outer("z", (1, 2), Inner(0.2))
    (tmp_path / "b.json").write_text('{"sizes": [9]}')
    assert load_config_file(Outer, tmp_path / "b.json").sizes == (9,)
    (tmp_path / "empty.yaml").write_text("")
    assert read_config_mapping(tmp_path / "empty.yaml") == {}
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="must be a mapping, got list"):
        read_config_mapping(tmp_path / "list.yaml", "agent config")
    (tmp_path / "bad.json").write_text("{nope")
    with pytest.raises(ConfigError, match="is not valid json"):
        load_config_file(Outer, tmp_path / "bad.json")
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config_file(Outer, tmp_path / "missing.yaml")
