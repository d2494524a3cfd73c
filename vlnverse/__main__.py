"""``python -m vlnverse`` runs the CLI."""

import sys

from vlnverse.cli import main

sys.exit(main())
