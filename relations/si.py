"""si relations (being written)."""
