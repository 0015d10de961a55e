"""Probe's Precision and Budget, its cost preview above "Run probe" and, after a run, the calls
and tokens used beside the preview (issue 27, items 4 and 5), through the entrypoint against the
fake OpenAI server (every answer echoes, and reports 5 prompt and 1 completion tokens)."""

from __future__ import annotations

from core.prices import TokenPrices
from core.types import Endpoint
from storage import Store
from tests.pages.conftest import open_page

INPUTS = "".join(f"Review {i}: the food was fine.\n" for i in range(6))


def _form(app_db, fake_server, prices: TokenPrices | None = None):
    store = Store(app_db)
    endpoint = Endpoint(name="fake", base_url=fake_server.base_url, model="fake-model")
    store.save_endpoint(endpoint, prices)
    store.close()
    at = open_page("pages/probe.py")
    at.selectbox(key="probe_endpoint").select("fake").run()
    at.selectbox(key="probe_task").select("sentiment").run()
    at.multiselect(key="probe_relations_sentiment").set_value(["si.identity", "sentence.uppercase"])
    at.radio(key="probe_inputs_source").set_value("Paste").run()
    at.text_area(key="probe_inputs_paste").input(INPUTS).run()
    return at


def _markdown(at) -> str:
    return " ".join(m.value for m in at.markdown)


def test_the_preview_line_states_calls_tokens_and_cost(app_db, fake_server):
    at = _form(app_db, fake_server, TokenPrices(1.0, 2.0))
    assert not at.exception, at.exception
    # 6 inputs × (1 source + 1 identity sample + 1 upper-cased follow-up) = 18 calls, none cached.
    assert "**Preview:** 18 planned calls, 0 cached, **18 to send**" in _markdown(at)
    assert "~$" in _markdown(at)
    assert not any("No price is set" in w.value for w in at.warning)
    # Precision on: the expected and worst-case calls join the line.
    at.radio(key="probe_precision").set_value("±10%").run()
    assert "with ±10%: about" in _markdown(at) and "at worst 18" in _markdown(at)


def test_without_a_price_the_preview_warns(app_db, fake_server):
    at = _form(app_db, fake_server)
    assert "18 to send" in _markdown(at) and "~$" not in _markdown(at)
    assert any("No price is set for this endpoint" in w.value for w in at.warning)


def test_a_budgeted_probe_stops_at_its_budget_and_compares_with_the_preview(app_db, fake_server):
    at = _form(app_db, fake_server)
    at.number_input(key="probe_budget").set_value(8).run()
    assert "at most 8 sent (budget)" in _markdown(at)
    at.button(key="probe_run").click().run()
    assert not at.exception, at.exception
    sent = fake_server.stats.chat_calls
    assert 0 < sent <= 8
    assert any("Adaptive run done (budget reached)" in i.value for i in at.info)
    assert "`si.identity`:" in _markdown(at) and "`sentence.uppercase`:" in _markdown(at)
    # Every call sent reports 5 prompt and 1 completion tokens.
    comparison = next(c.value for c in at.caption if c.value.startswith("Used:"))
    assert comparison.startswith(
        f"Used: {sent} calls sent, 0 from the cache; {5 * sent:,} prompt + {sent:,} "
        "completion tokens reported by the endpoint. The preview said 18 to send"
    )
    run = Store(app_db).runs()[0]
    assert run.status == "done (budget reached)"
    assert Store(app_db).run_samplings()[run.id].budget == 8
