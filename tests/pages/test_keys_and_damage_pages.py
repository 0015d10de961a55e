"""Issue 20 on the pages, through the entrypoint: the Endpoints form refuses keys pasted as the
variable name (item 6), Probe does not run an endpoint whose key variable is not set (item 7),
and Analysis says so over its numbers when the database is damaged (item 8)."""

from __future__ import annotations

import pytest

from core.types import Endpoint
from storage import Store
from tests.pages.conftest import open_page
from tests.test_api_key_env import SECRETS, UNSET
from tests.test_db_health import damaged_db

KEY_FIELD = "API key environment variable (name only)"


def _plain(text: str) -> str:
    return text.replace("\\", "")


@pytest.mark.parametrize(
    "secret",
    [SECRETS["Hugging Face"], SECRETS["Groq"], SECRETS["mixed case, long"]],
    ids=["hf", "gsk", "mixed-case"],
)
def test_the_endpoints_form_refuses_a_token_as_the_key_variable(app_db, fake_server, secret):
    """Before: the page checked only for `sk-` and letters/digits, so these were saved."""
    at = open_page("pages/endpoints.py")
    fields = {w.label: w for w in at.text_input}
    fields["Name"].input("hosted")
    fields["Base URL"].input(fake_server.base_url)
    fields["Model"].input("fake-model")
    fields[KEY_FIELD].input(secret)
    next(b for b in at.button if b.label == "Save endpoint").click().run()
    assert not at.exception
    errors = " ".join(e.value for e in at.error)
    assert "NAME of an environment variable" in errors and secret not in errors
    assert Store(app_db).endpoints() == []
    assert secret.encode() not in app_db.read_bytes()


def test_the_endpoints_form_saves_a_variable_name(app_db, fake_server):
    at = open_page("pages/endpoints.py")
    fields = {w.label: w for w in at.text_input}
    fields["Name"].input("hosted")
    fields["Base URL"].input(fake_server.base_url)
    fields["Model"].input("fake-model")
    fields[KEY_FIELD].input("MY_KEY_2")
    next(b for b in at.button if b.label == "Save endpoint").click().run()
    assert not at.exception and not at.error
    assert Store(app_db).endpoint("hosted").api_key_env == "MY_KEY_2"


def test_probe_does_not_run_an_endpoint_whose_key_variable_is_not_set(
    app_db, fake_server, monkeypatch, tmp_path
):
    """Before: the run went out without a key and without a word."""
    monkeypatch.delenv(UNSET, raising=False)
    monkeypatch.chdir(tmp_path)  # no .streamlit/secrets.toml holds it either
    store = Store(app_db)
    store.save_endpoint(
        Endpoint(name="paid", base_url=fake_server.base_url, model="fake-model", api_key_env=UNSET)
    )
    store.close()
    at = open_page("pages/probe.py")
    at.selectbox(key="probe_endpoint").select("paid").run()
    at.radio(key="probe_inputs_source").set_value("Paste").run()
    at.text_area(key="probe_inputs_paste").input("I love this.\n").run()
    at.button(key="probe_run").click().run()
    assert not at.exception, at.exception
    errors = _plain(" ".join(e.value for e in at.error))
    assert f"${UNSET} is not set" in errors, errors
    assert fake_server.stats.chat_calls == 0
    assert Store(app_db).runs() == []


def test_analysis_shows_a_banner_over_a_damaged_database(tmp_path, monkeypatch):
    """Before: the page drew its heatmaps from whatever could be read, and said nothing."""
    db = damaged_db(tmp_path)
    monkeypatch.setenv("MORPHSCOPE_DB", str(db))
    at = open_page("pages/analysis.py")
    assert not at.exception, at.exception
    errors = _plain(" ".join(e.value for e in at.error))
    assert f"database {db} is damaged (" in errors, errors
    assert ".recover" in errors


def test_analysis_shows_no_banner_over_a_sound_database(app_db):
    from tests.triage_data import make_case, save_runs

    store = Store(app_db)
    save_runs(store, [make_case("c1"), make_case("c2", index=1)])
    store.close()
    at = open_page("pages/analysis.py")
    assert not at.exception
    assert not any("is damaged" in e.value for e in at.error)
