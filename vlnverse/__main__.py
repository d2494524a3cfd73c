"""``python -m vlnverse`` runs the CLI."""

from vlnverse.cli import entry

entry()
