"""Every environment variable Morphscope reads, and every default path, in one place.

Read when asked, never at import time: a test or a launcher that sets a variable after the
modules are imported is still obeyed. (It lives in ``core`` rather than ``app`` because storage
and relations read their paths here too, and they sit below ``app``.)

| variable | what it sets | default |
|---|---|---|
| ``MORPHSCOPE_DB`` | the SQLite database | ``data/morphscope.db`` |
| ``MORPHSCOPE_STATE_DIR`` | the embedded model server's state (port, log) | ``data`` |
| ``MORPHSCOPE_AUTOSTART`` | ``0``: the dashboard does not start the embedded model | ``1`` |
| ``MORPHSCOPE_WORDNET_DIR`` | the NLTK data root holding ``corpora/wordnet`` | ``data/wordnet`` in the repository |
| ``MORPHSCOPE_CACHE_DIR`` | files made once from installed packages (the ONNX embedding model) | ``~/.cache/morphscope`` |

API keys are not settings: an endpoint names the variable holding its key
(``app.clients.endpoints``), and the key is never stored.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
DEFAULT_DB = Path("data/morphscope.db")
DEFAULT_STATE_DIR = Path("data")
DEFAULT_WORDNET_ROOT = REPOSITORY / "data" / "wordnet"

DB_VARIABLE = "MORPHSCOPE_DB"
STATE_DIR_VARIABLE = "MORPHSCOPE_STATE_DIR"
AUTOSTART_VARIABLE = "MORPHSCOPE_AUTOSTART"
WORDNET_DIR_VARIABLE = "MORPHSCOPE_WORDNET_DIR"
CACHE_DIR_VARIABLE = "MORPHSCOPE_CACHE_DIR"
DEFAULT_CACHE_DIR = Path("~/.cache/morphscope")


@dataclass(frozen=True)
class Settings:
    db_path: Path
    state_dir: Path
    autostart: bool  # start the embedded model server with the dashboard
    wordnet_root: Path
    cache_dir: Path  # files made once from installed packages


def settings() -> Settings:
    """The settings as the environment says now."""
    wordnet = os.environ.get(WORDNET_DIR_VARIABLE)
    return Settings(
        db_path=Path(os.environ.get(DB_VARIABLE) or DEFAULT_DB),
        state_dir=Path(os.environ.get(STATE_DIR_VARIABLE, DEFAULT_STATE_DIR)),
        autostart=os.environ.get(AUTOSTART_VARIABLE, "1") == "1",
        wordnet_root=Path(wordnet).expanduser().resolve() if wordnet else DEFAULT_WORDNET_ROOT,
        cache_dir=Path(os.environ.get(CACHE_DIR_VARIABLE) or DEFAULT_CACHE_DIR).expanduser(),
    )
