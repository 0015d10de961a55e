"""Inputs of a run: tasks, built-in datasets and upload parsing."""
