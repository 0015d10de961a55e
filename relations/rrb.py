"""rrb relations (being written)."""
