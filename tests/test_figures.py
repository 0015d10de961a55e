"""app/analysis/figures.py: pure figure builders (bars, box plots, the severity scatter),
checked through their traces."""

from __future__ import annotations

import pytest

from app.analysis import figures
from tests.test_heatmaps import ROWS


def test_box_plot_uses_precomputed_quartiles():
    stats = [
        {"model": "m1", "relation_id": "b", "q1": -0.2, "median": 0.0, "q3": 0.1,
         "lowerfence": -0.3, "upperfence": 0.2, "mean": -0.01, "n": 12},
        {"model": "m1", "relation_id": "a", "q1": -0.1, "median": 0.05, "q3": 0.2,
         "lowerfence": -0.15, "upperfence": 0.3, "mean": 0.04, "n": 9},
        {"model": "m2", "relation_id": "a", "q1": 0.0, "median": 0.1, "q3": 0.3,
         "lowerfence": 0.0, "upperfence": 0.4, "mean": 0.12, "n": 7},
    ]  # fmt: skip
    fig = figures.box_plot(stats, measure_label="Δ")
    assert [t.name for t in fig.data] == ["m1", "m2"]
    m1 = fig.data[0]
    assert list(m1.x) == ["a", "b"]
    assert list(m1.median) == [0.05, 0.0]
    assert list(m1.q1) == [-0.1, -0.2] and list(m1.upperfence) == [0.3, 0.2]
    assert fig.layout.boxmode == "group"
    assert fig.layout.yaxis.title.text == "Δ"


def test_mad_and_stability_bars():
    models = [
        {"model": "m2", "mad": 0.2, "stability": 0.4, "stability_excl_identity": 0.3},
        {"model": "m1", "mad": 0.05, "stability": 0.8, "stability_excl_identity": None},
    ]
    fig = figures.mad_stability_bars(models)
    names = [t.name for t in fig.data]
    assert names == ["MAD", "Stability (identity included)", "Stability (identity excluded)"]
    assert list(fig.data[0].x) == ["m1", "m2"]
    assert list(fig.data[0].y) == [0.05, 0.2]
    assert list(fig.data[0].text) == ["0.050", "0.200"]
    assert list(fig.data[2].y) == [None, 0.3]
    assert fig.data[1].yaxis == "y2"


def test_violation_bars_with_noise_floor_lines():
    fig = figures.violation_with_floor(ROWS, {"m1": 0.1, "m2": None})
    assert [t.name for t in fig.data] == ["m1", "m2"]
    assert list(fig.data[0].y) == [0.0, 0.25]
    (line,) = fig.layout.shapes  # only m1 has a floor
    assert (line.y0, line.y1) == (0.1, 0.1)
    assert line.line.dash == "dash"
    assert "noise floor m1: 10%" in fig.layout.annotations[0].text


def test_severity_scatter_groups_and_drops_missing():
    rows = [
        {"id": "c1", "relation_id": "r1", "levenshtein": 0.1, "abs_delta": 0.02},
        {"id": "c2", "relation_id": "r1", "levenshtein": 0.4, "abs_delta": 0.3},
        {"id": "c3", "relation_id": "r2", "levenshtein": 0.2, "abs_delta": None},
        {"id": "c4", "relation_id": "r2", "levenshtein": 0.3, "abs_delta": 0.1},
    ]
    fig = figures.severity_scatter(rows, "levenshtein")
    assert [t.name for t in fig.data] == ["r1", "r2"]
    assert list(fig.data[0].x) == [0.1, 0.4] and list(fig.data[0].y) == [0.02, 0.3]
    assert list(fig.data[1].customdata) == ["c4"]
    assert fig.layout.xaxis.title.text == "Normalised Levenshtein distance"
    with pytest.raises(ValueError):
        figures.severity_scatter(rows, "nope")


def test_breakdown_and_compare_bars():
    rows = [
        {"model": "m1", "category": "physics", "violation_rate": 0.2},
        {"model": "m1", "category": "math", "violation_rate": 0.4},
    ]
    fig = figures.breakdown_bars(rows, "category")
    assert list(fig.data[0].x) == ["math", "physics"] and list(fig.data[0].y) == [0.4, 0.2]
    compare = [
        {"relation_id": "r1", "a_violation_rate": 0.1, "b_violation_rate": 0.3},
        {"relation_id": "r0", "a_violation_rate": None, "b_violation_rate": 0.2},
    ]
    fig = figures.compare_runs_bars(compare, "run A", "run B")
    assert [t.name for t in fig.data] == ["run A", "run B"]
    assert list(fig.data[0].x) == ["r0", "r1"] and list(fig.data[0].y) == [None, 0.1]
    assert fig.data[0].marker.color != fig.data[1].marker.color  # issue 12 item 7: distinct


def test_compare_legend_entries_are_distinct_even_for_alike_runs():
    """Issue 12 item 7: two runs of one endpoint started in the same minute still get two
    different legend entries (the short run id is added)."""
    from app.ui.analysis_tabs import compare_legend

    run = {"endpoint_name": "local", "model": "smol", "created_at": "2026-11-12T09:00:10"}
    a, b = compare_legend({**run, "id": "aaaaaa11"}, {**run, "id": "bbbbbb22"})
    assert (a, b) == (
        "A: local · 2026-11-12 09:00 · aaaaaa",
        "B: local · 2026-11-12 09:00 · bbbbbb",
    )
    other = compare_legend({**run, "id": "x"}, {**run, "id": "y", "endpoint_name": "office"})
    assert other == ("A: local · 2026-11-12 09:00", "B: office · 2026-11-12 09:00")


def test_breakdown_bars_order_mixed_metadata_values_without_comparing_str_and_float():
    """Issue 12 item 1: the demo's meta "score" mixes numbers, text and missing values; sorting
    them raised ``TypeError: '<' not supported between 'str' and 'float'``. Numbers come first
    by value (2 before 10, not as text), then text, then "(none)"."""
    rows = [
        {"model": "m", "score": value, "violation_rate": rate}
        for value, rate in (("high", 0.5), (10, 0.1), ("(none)", 0.2), (2, 0.3), (0.5, 0.4))
    ]
    fig = figures.breakdown_bars(rows, "score")
    (bars,) = fig.data
    assert list(bars.x) == ["0.5", "2", "10", "high", "(none)"]
    assert list(bars.y) == [0.4, 0.3, 0.1, 0.5, 0.2]
    assert fig.layout.yaxis.title.text == "Violation rate" and fig.layout.yaxis.tickformat == ".0%"


# ---------------------------------------------------------------- the Vega-Lite heatmap
