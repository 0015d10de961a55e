"""word relations (being written)."""
