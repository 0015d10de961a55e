"""ad relations (being written)."""
