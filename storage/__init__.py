"""SQLite storage: one ``Store`` with verbs, migrations, and SQL aggregations for the dashboard."""

from storage.store import DatabaseFailure, Store, StoreOpenError, default_db_path

__all__ = ["DatabaseFailure", "Store", "StoreOpenError", "default_db_path"]
