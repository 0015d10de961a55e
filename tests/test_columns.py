"""app/columns.py: the one catalogue of metric names, formats, definitions and heatmap scales."""

from __future__ import annotations

import pytest

from app import columns
from app.columns import METRICS, Unit

TABLES = {
    name: value
    for name, value in vars(columns).items()
    if name.endswith("_TABLE") and name != "REPORT_TEXT_TABLE"
}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_table_column_is_catalogued_with_its_unit(name):
    for shown in TABLES[name]:
        assert shown.key in METRICS, f"{name}: {shown.key} is not in the catalogue"
        if name != "REPORT_TEST_TABLE":  # the report prints test statistics like p-values
            assert shown.unit is METRICS[shown.key].unit


def test_definitions_follow_the_catalogue():
    assert list(columns.DEFINITIONS)[:3] == ["violation_rate", "ci_low/ci_high", "invalid_followup"]
    assert {"mad", "stability", "noise_floor", "agentdiff_gap"} <= set(columns.DEFINITIONS)
    assert all(text and "\n" not in text for text in columns.DEFINITIONS.values())


def test_heatmap_choices_have_scales_and_titles():
    for key in columns.HEATMAP_CHOICES:
        assert METRICS[key].heatmap is not None and columns.heatmap_title(key)
    assert METRICS["mean_delta"].heatmap.midpoint == 0.0
    with pytest.raises(ValueError):
        columns.heatmap_title("n")


def test_report_headers_are_longer_where_the_page_abbreviates():
    page = {c.key: c.label for c in columns.MODEL_RELATION_TABLE}
    report = {c.key: c.label for c in columns.REPORT_MODEL_RELATION_TABLE}
    assert (page["violation_rate"], report["violation_rate"]) == ("violation", "violation rate")
    assert report["ci_low"] == "95% CI low"
    assert [c.label for c in columns.breakdown_table("category")][:2] == ["model", "category"]


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
    assert columns.format_text(value, unit) == text


def test_text_table_cells_cut_names_and_right_align_numbers():
    model, _, n, *_ = columns.REPORT_TEXT_TABLE
    assert model.cell("x" * 40) == "x" * 28
    assert n.cell("12") == "   12"
    assert columns.format_interval(0.214, 0.9) == "[0.21, 0.90]"


def test_unknown_keys_are_text():
    assert columns.metric("category").unit is Unit.TEXT
