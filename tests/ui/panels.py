"""Shared pieces of the Probe panel tests."""

from __future__ import annotations

from core.types import Endpoint

# An endpoint nothing listens on: panels that must not call a model use it.
FAKE = Endpoint(name="fake", base_url="http://127.0.0.1:9/v1", model="fake-model")


def run_panel(choices):
    """Probe's run panel alone (AppTest.from_function runs this function's source)."""
    from app.ui.data import get_store
    from app.ui.probe_run import render_run

    render_run(get_store(), choices, key="probe")
