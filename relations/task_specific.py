"""task_specific relations (being written)."""
