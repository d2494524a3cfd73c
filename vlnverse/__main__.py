"""``python -m vlnverse`` runs the CLI (the package's ``__init__`` has already taken the current
folder off ``sys.path``, see :func:`vlnverse._untrusted_cwd`)."""

from vlnverse.cli import entry

entry()
