"""SQLite storage: one ``Store`` with verbs, migrations, and SQL aggregations for the dashboard."""

import sys


def _import_sqlite_utils_without_pandas() -> None:
    """Import sqlite-utils without letting it import pandas.

    sqlite-utils imports pandas at import time (a few hundred ms, more under load) only to map
    ``pandas.Timestamp`` values to TEXT columns. The store never writes pandas values, and the
    CLI's listing commands (`relations`, `transform`) must start fast, so pandas is hidden while
    sqlite-utils loads. When pandas is already loaded (the dashboard), nothing changes.
    """
    if "pandas" in sys.modules or "sqlite_utils.db" in sys.modules:
        return
    sys.modules["pandas"] = None  # type: ignore[assignment]  # `import pandas` → ImportError
    try:
        import sqlite_utils.db  # noqa: F401
    finally:
        if sys.modules.get("pandas") is None:
            del sys.modules["pandas"]


_import_sqlite_utils_without_pandas()

from storage.database_file import default_db_path  # noqa: E402
from storage.errors import DatabaseFailure, StoreOpenError  # noqa: E402
from storage.store import Store  # noqa: E402

__all__ = ["DatabaseFailure", "Store", "StoreOpenError", "default_db_path"]
