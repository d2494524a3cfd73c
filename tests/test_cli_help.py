"""Every ``vlnverse`` command answers ``--help`` and, as the README promises, takes ``--json``."""

from __future__ import annotations

import argparse

import pytest

from vlnverse.cli import build_parser, main


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path of the parser: groups and the commands they hold (a command's aliases,
    which share its parser, left out: its help names it by its own name)."""
    found = [path] if path else []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen = set()
            for name, sub in action.choices.items():
                if id(sub) not in seen:
                    seen.add(id(sub))
                    found += commands(sub, (*path, name))
    return found


ALL = commands(build_parser())
GROUPS = {path[:1] for path in ALL if len(path) > 1}
RUNNABLE_GROUPS = {("eval",)}
"""Groups that also run on their own (``vlnverse eval ...`` evaluates; ``eval verify`` checks)."""
LEAVES = [path for path in ALL if path not in GROUPS or path in RUNNABLE_GROUPS]


def test_the_documented_commands_exist():
    assert {" ".join(p) for p in LEAVES} >= {
        "scenes inspect", "scenes path", "scenes generate", "scenes validate", "scenes stats", "sim render",
        "ext build", "ext check", "dataset export", "dataset import", "dataset stats", "datagen", "eval", "eval verify",
        "eval bundle", "demo"}


@pytest.mark.parametrize("path", ALL, ids=" ".join)
def test_help(path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([*path, "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith(f"usage: vlnverse {' '.join(path)}")
    if path in LEAVES:
        assert "--json" in text, f"`vlnverse {' '.join(path)}` has no --json"


def test_main_help_lists_every_group(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    for path in ALL:
        if len(path) == 1:
            assert path[0] in text
