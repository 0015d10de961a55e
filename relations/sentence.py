"""sentence relations (being written)."""
