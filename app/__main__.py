"""`python -m app …` — the headless CLI (same engine as the dashboard)."""

import sys

from app.cli import main

sys.exit(main())
