"""app/figures.py: pure figure builders, checked through their traces."""

from __future__ import annotations

import pandas as pd
import pytest

from app import figures

ROWS = [
    {"model": "m2", "relation_id": "si.paraphrase", "n": 10, "violation_rate": 0.5,
     "mean_delta": -0.12, "mean_similarity": 0.81},
    {"model": "m1", "relation_id": "si.paraphrase", "n": 8, "violation_rate": 0.25,
     "mean_delta": 0.004, "mean_similarity": None},
    {"model": "m1", "relation_id": "ad.format", "n": 4, "violation_rate": 0.0,
     "mean_delta": None, "mean_similarity": 0.9},
]  # fmt: skip


def test_heatmap_values_text_and_drilldown_data():
    fig = figures.heatmap(ROWS, "violation_rate")
    trace, clicks = fig.data
    assert list(trace.x) == ["ad.format", "si.paraphrase"]
    assert list(trace.y) == ["m1", "m2"]
    assert [list(row) for row in trace.z] == [[0.0, 0.25], [None, 0.5]]
    assert [list(row) for row in trace.text] == [["0%", "25%"], ["", "50%"]]
    assert trace.texttemplate == "%{text}"
    assert list(trace.customdata[1][1]) == ["m2", "si.paraphrase", 10]
    assert (trace.zmin, trace.zmax) == (0.0, 1.0)
    assert fig.layout.title.text == "Violation rate"
    # the invisible click layer: one marker per filled cell, naming it in customdata
    assert clicks.type == "scatter" and clicks.name == "cells"
    assert list(zip(clicks.x, clicks.y, strict=True)) == [
        ("ad.format", "m1"),
        ("si.paraphrase", "m1"),
        ("si.paraphrase", "m2"),
    ]
    assert [list(c) for c in clicks.customdata][2] == ["m2", "si.paraphrase", 10]
    assert list(clicks.text) == ["0%", "25%", "50%"]


def test_heatmap_delta_is_diverging_around_zero():
    fig = figures.heatmap(pd.DataFrame(ROWS), "mean_delta")
    trace = fig.data[0]
    assert trace.zmid == 0.0
    assert [list(row) for row in trace.text] == [["", "+0.004"], ["", "-0.120"]]
    similarity = figures.heatmap(ROWS, "mean_similarity").data[0]
    assert [list(row) for row in similarity.text] == [["0.90", ""], ["", "0.81"]]


def test_heatmap_empty_and_unknown_metric():
    assert figures.heatmap([], "violation_rate").data == ()
    with pytest.raises(ValueError):
        figures.heatmap(ROWS, "nonsense")


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
