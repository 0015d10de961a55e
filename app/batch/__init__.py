"""Batch mode: export runs as request files, import their results."""
