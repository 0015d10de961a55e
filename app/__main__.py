"""`python -m app …` — the headless CLI (same engine as the dashboard)."""

import gc
import sys

from app.cli.main import main

code = main()
# The process ends here: exiting would otherwise have the collector walk every object of the
# modules a command imported (a `run` imports the HTTP client, pandas, numpy…), about 0.2 s of
# CPU after the work is done. Frozen objects are left to the OS; atexit handlers still run.
gc.freeze()
sys.exit(code)
