"""What the Analysis page's modules import before its first chart.

A cold server pays every import of the page's first run before the heatmap can be drawn; the
demo runner (``app.engine.demo``: the runner, datasets, embeddings) is needed only once a demo is
started, so loading the page and the sidebar must not import it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_page_and_sidebar_modules_do_not_import_the_demo_runner() -> None:
    code = (
        "import sys\n"
        "import app.ui.sidebar, app.ui.demo, app.ui.analysis_tabs, app.ui.analysis_view\n"
        "import app.ui.analysis_filters\n"
        "print('app.engine.demo' in sys.modules, 'app.engine.runner' in sys.modules)\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert found.stdout.split() == ["False", "False"]


def test_the_sidebar_knows_no_demo_ran_until_the_runner_is_loaded(monkeypatch) -> None:
    import app.engine.demo  # noqa: F401 - loaded, as after a first "Run the demo"
    from app.ui import demo

    assert demo.demo_loaded()
    monkeypatch.delitem(sys.modules, "app.engine.demo")  # as in a process that never loaded it
    assert not demo.demo_loaded()
