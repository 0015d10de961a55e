"""Endpoints page through the entrypoint: add, validate, test connection, delete."""

from __future__ import annotations

from storage import Store
from tests.pages.conftest import open_page

PAGE = "pages/endpoints.py"


def _fill(at, **values):
    by_label = {w.label: w for w in at.text_input}
    for label, value in values.items():
        by_label[label].input(value)


def _save(at):
    next(b for b in at.button if b.label == "Save endpoint").click().run()


def test_add_test_and_delete_an_endpoint(app_db, fake_server):
    at = open_page(PAGE)
    assert not at.exception
    assert any("No endpoints saved yet" in i.value for i in at.info)
    at.selectbox(key="endpoints_new_preset").select("vLLM").run()
    _fill(at, Name="local vllm", **{"Base URL": fake_server.base_url, "Model": "fake-model"})
    _save(at)
    assert not at.exception
    saved = Store(app_db).endpoint("local vllm")
    assert saved is not None and saved.base_url == fake_server.base_url
    at.run()
    next(b for b in at.button if b.label == "Test connection").click().run()
    assert any("connected" in s.value for s in at.success)
    next(b for b in at.button if b.label == "Delete").click().run()
    assert Store(app_db).endpoint("local vllm") is None


def test_bad_url_and_a_pasted_key_are_rejected(app_db):
    at = open_page(PAGE)
    _fill(
        at,
        Name="bad",
        **{
            "Base URL": "localhost:8000",
            "API key environment variable (name only)": "sk-abc123",
        },
    )
    _save(at)
    errors = " ".join(e.value for e in at.error)
    assert "http://" in errors and "NAME of the environment variable" in errors
    assert Store(app_db).endpoints() == []
