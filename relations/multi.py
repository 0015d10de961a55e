"""multi relations (being written)."""
