"""app/analysis/catalogue/: the one catalogue of metric names, formats, definitions, heatmap scales
and table layouts."""

from __future__ import annotations

import pytest

from app.analysis.catalogue import definitions, formats, tables
from app.analysis.catalogue.definitions import METRICS
from app.analysis.catalogue.formats import Unit

TABLES = {
    name: value
    for name, value in vars(tables).items()
    if name.endswith("_TABLE") and name != "REPORT_TEXT_TABLE"
}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_table_column_is_catalogued_with_its_unit(name):
    for shown in TABLES[name]:
        assert shown.key in METRICS, f"{name}: {shown.key} is not in the catalogue"
        if name != "REPORT_TEST_TABLE":  # the report prints test statistics like p-values
            assert shown.unit is METRICS[shown.key].unit


def test_definitions_follow_the_catalogue():
    assert list(definitions.DEFINITIONS)[:3] == [
        "violation_rate",
        "ci_low/ci_high",
        "invalid_followup",
    ]
    assert {"mad", "stability", "noise_floor", "agentdiff_gap"} <= set(definitions.DEFINITIONS)
    assert all(text and "\n" not in text for text in definitions.DEFINITIONS.values())


def test_heatmap_choices_have_scales_and_titles():
    for key in definitions.HEATMAP_CHOICES:
        assert METRICS[key].heatmap is not None and definitions.heatmap_title(key)
    assert METRICS["mean_delta"].heatmap.midpoint == 0.0
    with pytest.raises(ValueError):
        definitions.heatmap_title("n")


def test_report_headers_are_longer_where_the_page_abbreviates():
    page = {c.key: c.label for c in tables.MODEL_RELATION_TABLE}
    report = {c.key: c.label for c in tables.REPORT_MODEL_RELATION_TABLE}
    assert (page["violation_rate"], report["violation_rate"]) == ("violation", "violation rate")
    assert report["ci_low"] == "95% CI low"
    assert [c.label for c in tables.breakdown_table("category")][:2] == ["model", "category"]


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (0.5, Unit.PERCENT, "50.0%"),
        (-0.12, Unit.DECIMAL, "-0.120"),
        (0.0004, Unit.P_VALUE, "<0.001"),
        (0.0123, Unit.P_VALUE, "0.0123"),
        (7, Unit.COUNT, "7"),
        (None, Unit.PERCENT, "—"),
        (float("nan"), Unit.DECIMAL, "—"),
    ],
)
def test_format_text(value, unit, text):
    assert formats.format_text(value, unit) == text


def test_text_table_cells_cut_names_and_right_align_numbers():
    model, _, n, *_ = tables.REPORT_TEXT_TABLE
    assert model.cell("x" * 40) == "x" * 28
    assert n.cell("12") == "   12"
    assert formats.format_interval(0.214, 0.9) == "[0.21, 0.90]"


def test_unknown_keys_are_text():
    assert definitions.metric("category").unit is Unit.TEXT


def test_paper_metrics_state_their_formula_and_source():
    """Each metric the papers define carries its exact formula and the section it follows."""
    by_key = {metric.key: metric for metric in definitions.FORMULAS}
    assert {"mad", "stability", "step_score_source", "agentdiff_gap", "mean_delta"} <= set(by_key)
    assert "eq. 6" in by_key["mad"].source and "|Δ_τ(p)|" in by_key["mad"].formula
    assert "< 0.05" in by_key["stability"].formula
    assert "max_z cos" in by_key["step_score_source"].formula
    assert "eq. 4" in by_key["step_score_source"].source
    assert all(metric.source for metric in definitions.FORMULAS)
    rows = definitions.definition_rows()
    assert rows[0]["metric"] == "violation rate"
    assert {"metric", "formula", "source", "definition"} == set(rows[0])


def test_html_report_states_formulas_and_sources(store):
    from app.reports.html_report import render_html_report

    page = render_html_report(store)
    definitions = page[page.index("<h2>Definitions</h2>") :]
    assert "MAD = 1/(|T||P|) Σ_τ∈T Σ_p∈P |Δ_τ(p)|" in definitions
    assert "Semantic Invariance in Agentic AI §3.1, eq. 6" in definitions
    assert "AgentDiff §3.2, eqs. 1-2 (inconsistency rate gap)" in definitions


def test_definitions_tab_lists_every_formula():
    from streamlit.testing.v1 import AppTest

    def script() -> None:
        from app.ui.analysis_tabs import TABS

        TABS["Definitions"](None)

    at = AppTest.from_function(script, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    (table,) = at.dataframe
    assert list(table.value.columns) == ["metric", "formula", "source", "definition"]
    assert len(table.value) == len(definitions.FORMULAS)
    assert "AvgStepScore (source)" in set(table.value["metric"])


def test_meta_value_order_puts_numbers_then_text_then_missing():
    """Sample metadata mixes types; one key sorts them all (Python cannot compare 10 < "high")."""
    values = ["low", None, 10, "(none)", 2.5, "high"]
    ordered = sorted(values, key=formats.meta_value_order)
    assert ordered == [2.5, 10, "high", "low", None, "(none)"]  # stable among the missing


def test_on_screen_formats_one_per_unit():
    """Issue 12 item 8: percentages with one decimal, decimals with three significant digits,
    p-values as "p < 0.001", counts with separators, "—" for a missing value."""
    shown = formats.format_shown
    assert shown(0.12345, formats.Unit.PERCENT) == "12.3%"
    assert shown(12.345, formats.Unit.PERCENT, scaled_percent=True) == "12.3%"
    assert shown(0.15749, formats.Unit.DECIMAL) == "0.157"
    assert shown(-0.1, formats.Unit.DECIMAL) == "-0.100"
    assert shown(1234.5, formats.Unit.DECIMAL) == "1,234"
    assert shown(0.000123456, formats.Unit.DECIMAL) == "0.000123"
    assert shown(0.0004, formats.Unit.P_VALUE) == "p < 0.001"
    assert shown(0.04567, formats.Unit.P_VALUE) == "p = 0.0457"
    assert shown(12000, formats.Unit.COUNT) == "12,000"
    assert shown(None, formats.Unit.DECIMAL) == shown(float("nan"), formats.Unit.PERCENT) == "—"


def test_human_labels_and_header_tooltips():
    assert definitions.metric_label("violation_rate") == "Violation rate"
    assert definitions.metric_label("relation_id") == "relation"
    assert definitions.metric_label("some_meta_key") == "some meta key"
    tip = definitions.column_help("mean_delta", formats.Unit.DECIMAL)
    assert tip.startswith("mean over (sample, relation) cells") and "— = no case carries" in tip


def test_styled_table_shows_dashes_colours_verdicts_and_cuts_long_text():
    """Issue 12 item 8: no "None" in a table (the grid would draw one for a missing number, so a
    column with gaps becomes its formatted text), the verdict coloured, long reasons cut."""
    import pandas as pd

    from app.ui.analysis_view import frame
    from app.ui.components import styled_table

    rows = [
        {"id": "c1", "verdict": "FAIL", "reason": "x" * 200, "delta": -0.123456, "value": None},
        {"id": "c2", "verdict": "PASS", "reason": "ok", "delta": 0.5, "value": 1.0},
    ]
    df = frame(rows, tables.CASE_TABLE)
    styler, config = styled_table(df, tables.CASE_TABLE)
    shown = styler.data
    assert list(shown["value"]) == ["—", "1.00"]  # a gap: the column is shown as text
    assert list(shown["Δ"]) == [-0.123, 0.5]  # no gap: numbers stay (sorting by value)
    html = styler.to_html()
    assert "-0.123" in html and "x" * 79 + "…" in html and "x" * 80 not in html
    assert "color: #c62828" in html  # FAIL in red
    assert "— = " in config["value"]["help"]
    assert isinstance(pd.DataFrame(shown), pd.DataFrame)
