"""Endpoints page through the entrypoint: add, validate, test connection, delete."""

from __future__ import annotations

from core.types import Endpoint
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
    next(b for b in at.button if b.label == "Test connection").click().run()
    assert any("connected" in s.value for s in at.success)
    next(b for b in at.button if b.label == "Delete").click().run()
    next(b for b in at.button if b.label == "Yes, delete").click().run()
    assert Store(app_db).endpoint("local vllm") is None


def test_the_list_shows_a_saved_endpoint_at_once(app_db, fake_server):
    """Regression: after Save the page said "No endpoints saved yet" until the next reload."""
    at = open_page(PAGE)
    _fill(at, Name="local", **{"Base URL": fake_server.base_url, "Model": "fake-model"})
    _save(at)
    assert not at.exception
    assert [e.label for e in at.expander] == ["local"]
    assert not any("No endpoints saved yet" in i.value for i in at.info)
    assert any("Saved local" in s.value for s in at.success)


def test_an_endpoint_can_be_tested_before_it_is_saved(app_db, fake_server):
    at = open_page(PAGE)
    _fill(at, Name="trial", **{"Base URL": fake_server.base_url, "Model": "fake-model"})
    next(b for b in at.button if b.label == "Test connection").click().run()
    assert not at.exception
    assert any("connected" in s.value for s in at.success)
    assert Store(app_db).endpoints() == []


def test_the_edit_form_shows_the_endpoints_preset(app_db):
    """Regression: the (disabled) preset box of a saved vLLM endpoint read "OpenAI"."""
    Store(app_db).save_endpoint(
        Endpoint(name="vllm box", base_url="http://127.0.0.1:8000/v1", model="m")
    )
    at = open_page(PAGE)
    assert at.selectbox(key="endpoints_edit_vllm box_preset").value == "vLLM"


def test_delete_asks_for_confirmation_and_cancel_keeps_it(app_db):
    Store(app_db).save_endpoint(Endpoint(name="keep", base_url="http://127.0.0.1:9/v1", model="m"))
    at = open_page(PAGE)
    next(b for b in at.button if b.label == "Delete").click().run()
    assert Store(app_db).endpoint("keep") is not None
    assert any("Delete the endpoint 'keep'?" in w.value for w in at.warning)
    next(b for b in at.button if b.label == "Cancel").click().run()
    assert Store(app_db).endpoint("keep") is not None
    assert not at.warning


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
    assert "http://" in errors and "NAME of an environment variable" in errors
    assert Store(app_db).endpoints() == []


def test_an_endpoint_answered_by_batch_files_is_saved_as_kind_batch(app_db):
    """Issue 13: endpoint kind `batch` can be chosen when adding an endpoint (its runs go out as
    batch files), and the saved endpoint keeps it."""
    at = open_page(PAGE)
    answered_by = next(r for r in at.radio if r.label == "Answered by")
    answered_by.set_value("batch")
    _fill(at, Name="openai batch", **{"Base URL": "https://api.openai.com/v1", "Model": "m"})
    _save(at)
    assert not at.exception
    saved = Store(app_db).endpoint("openai batch")
    assert saved is not None and saved.kind == "batch"


def test_an_unreachable_endpoint_is_saved_only_when_confirmed(app_db):
    """Issue 28 item 6: a URL nothing answers on asks "Save anyway?" instead of saving."""
    at = open_page(PAGE)
    _fill(at, Name="nowhere", **{"Base URL": "http://127.0.0.1:9/v1", "Model": "m"})
    _save(at)
    assert not at.exception, at.exception
    assert Store(app_db).endpoints() == []
    assert any("did not answer" in w.value for w in at.warning)
    next(b for b in at.button if b.label == "Keep editing").click().run()
    assert not any("did not answer" in w.value for w in at.warning)
    assert Store(app_db).endpoints() == []
    _save(at)
    next(b for b in at.button if b.label == "Save anyway").click().run()
    assert not at.exception, at.exception
    assert Store(app_db).endpoint("nowhere") is not None


def test_testing_a_saved_endpoint_keeps_its_box_open(app_db, fake_server):
    """Issue 28 item 6: the test's rerun used to fold the endpoint's box over its result."""
    Store(app_db).save_endpoint(
        Endpoint(name="local", base_url=fake_server.base_url, model="fake-model")
    )
    at = open_page(PAGE)
    assert at.expander[0].proto.expanded is False
    next(b for b in at.button if b.label == "Test connection").click().run()
    assert at.expander[0].proto.expanded is True
    assert any("connected" in s.value for s in at.success)


def test_a_batch_endpoint_is_not_called_by_its_test(app_db):
    """Issue 28 item 6: a batch endpoint's test showed a red "chat completion failed"."""
    Store(app_db).save_endpoint(
        Endpoint(name="files", base_url="http://127.0.0.1:9/v1", model="m", kind="batch")
    )
    at = open_page(PAGE)
    next(b for b in at.button if b.label == "Test connection").click().run()
    assert not at.error
    assert any("nothing to test" in i.value for i in at.info)


def test_the_embedded_models_state_is_said_once():
    from app.engine.model_server import ServerState, ServerStatus
    from app.ui.endpoints_view import server_status_text

    ready = ServerStatus(ServerState.READY, 8081, "ready on 127.0.0.1:8081", "")
    assert server_status_text(ready) == "ready on 127.0.0.1:8081"
    stopped = ServerStatus(ServerState.STOPPED, None, "not started", "")
    assert server_status_text(stopped) == "stopped: not started"


def test_token_prices_are_saved_with_the_endpoint_and_a_bad_one_is_refused(app_db, fake_server):
    at = open_page(PAGE)
    at.selectbox(key="endpoints_new_preset").select("vLLM").run()
    base = {"Name": "priced", "Base URL": fake_server.base_url, "Model": "fake-model"}
    _fill(at, **base, **{"Price per million input tokens, USD (optional)": "a lot"})
    _save(at)
    assert any("input price must be a number" in e.value for e in at.error)
    assert Store(app_db).endpoint("priced") is None
    _fill(
        at,
        **{
            "Price per million input tokens, USD (optional)": "$0.15",
            "Price per million output tokens, USD (optional)": "0.6",
        },
    )
    _save(at)
    assert not at.exception
    store = Store(app_db)
    prices = store.endpoint_prices("priced")
    assert (prices.per_million_in, prices.per_million_out) == (0.15, 0.6)
    assert store.endpoint("priced").model == "fake-model"  # the prices are no endpoint setting
