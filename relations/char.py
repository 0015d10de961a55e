"""char relations (being written)."""
