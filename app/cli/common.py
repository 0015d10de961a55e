"""What every command uses: the one-line error, the stores a command opened (closed when it
ends), text files read with a readable error, and the exit code of a stopped command.

Progress goes to stderr, results to stdout; bad input exits non-zero with a one-line message.
"""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger("morphscope")

# Help texts of the options many commands share.
DB_HELP = "the SQLite database (default: $MORPHSCOPE_DB, else data/morphscope.db)"
JSON_HELP = "print the result as JSON on stdout"
API_KEY_ENV_HELP = (
    "name of the environment variable (or .streamlit/secrets.toml key) holding the API key"
)

# Exit code of a command that stopped early with what it stored kept (rerun it to resume).
EXIT_STOPPED = 1


class CliError(Exception):
    """A user-facing error: printed as one line, exit code 2."""


# The stores the running command opened: ``main`` closes them when the command ends, so the
# database is checkpointed and its -wal/-shm files removed before the process exits (which then
# need not collect anything).
_OPEN_STORES: list = []


def open_store(path: str | None, *, must_exist: bool = False, reports: bool = False):
    """The store at ``path`` (or the default); a path that cannot be a database is a CliError.
    ``must_exist``: commands that only read say so instead of creating an empty database.
    ``reports``: the command reports from it, so a damaged database is refused (quick_check)
    rather than reported from as if it were whole."""
    from storage import Store, StoreOpenError, default_db_path
    from storage.health import damage_line

    db_path = Path(path) if path else default_db_path()
    if must_exist and not db_path.exists():
        raise CliError(f"{db_path}: no such database")
    try:
        store = Store(db_path)
    except StoreOpenError as exc:
        raise CliError(str(exc)) from None
    _OPEN_STORES.append(store)
    damaged = damage_line(store) if reports else None
    if damaged:
        raise CliError(damaged)
    return store


def close_stores() -> None:
    while _OPEN_STORES:
        store = _OPEN_STORES.pop()
        try:
            store.close()
        except Exception:  # closing is tidying up: the command's work is already saved
            log.debug("could not close %s", store.path, exc_info=True)


def read_text_file(path: str, limit_bytes: int = 20_000_000) -> str:
    """A UTF-8 text file's contents, or a CliError naming what is wrong with it."""
    file = Path(path)
    if not file.exists():
        raise CliError(f"{path}: no such file")
    if file.is_dir():
        raise CliError(f"{path}: is a directory, not a file")
    if not file.is_file():  # a FIFO would block until written to, a device may never end
        raise CliError(f"{path}: not a regular file (a pipe or a device?)")
    try:
        if file.stat().st_size > limit_bytes:
            raise CliError(f"{path}: larger than {limit_bytes // 1_000_000} MB")
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise CliError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise CliError(f"{path}: cannot be read ({exc.strerror or exc})") from None
