"""`python -m app …` — the headless CLI, the same as the `morphscope` console script."""

import sys

from app.cli.main import console

sys.exit(console(prog="python -m app"))
