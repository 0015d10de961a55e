"""Morphscope engine: endpoints, tasks, runner, metrics and the CLI. Never imports streamlit."""
