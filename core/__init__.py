"""Shared core types: the vocabulary every layer (storage, relations, app, pages) may import.

This package imports nothing from the rest of Morphscope; everything else may import it.
"""
