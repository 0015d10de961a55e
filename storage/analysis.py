"""SQL aggregations for the Analysis page and `report` (mixed into ``Store``)."""

from __future__ import annotations


class AnalysisQueries:
    """Aggregation verbs; every query groups in SQL rather than loading rows into pandas."""
