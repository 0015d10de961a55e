"""SQLite storage: one ``Store`` with verbs, migrations, and SQL aggregations for the dashboard."""

from storage.store import Store, default_db_path

__all__ = ["Store", "default_db_path"]
