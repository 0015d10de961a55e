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


def test_mad_and_stability_get_a_chart_each():
    """Issue 28 item 8: MAD and stability shared twin axes in one chart; now each has its own
    chart and axis (MAD in Δ units from 0, stability in percent up to 110% for the labels)."""
    models = [
        {"model": "m2", "mad": 0.2, "stability": 0.4, "stability_excl_identity": 0.3},
        {"model": "m1", "mad": 0.05, "stability": 0.8, "stability_excl_identity": None},
    ]
    mad = figures.mad_bars(models)
    assert [t.name for t in mad.data] == ["MAD"]
    assert list(mad.data[0].x) == ["m1", "m2"] and list(mad.data[0].y) == [0.05, 0.2]
    assert list(mad.data[0].text) == ["0.050", "0.200"]
    assert "yaxis2" not in mad.to_dict()["layout"]
    stability = figures.stability_bars(models)
    names = [t.name for t in stability.data]
    assert names == ["Stability (identity included)", "Stability (identity excluded)"]
    assert list(stability.data[1].y) == [None, 0.3]
    assert list(stability.data[0].text) == ["80%", "40%"]
    assert stability.layout.yaxis.tickformat == ".0%" and stability.layout.yaxis.range == (0, 1.1)
    assert "yaxis2" not in stability.to_dict()["layout"]
    assert figures.mad_bars([]).data == () and figures.stability_bars([]).data == ()


def test_violation_bars_with_noise_floor_lines():
    """Issue 28 item 8: the floor line is dark (not the bar colour of its model), and its label
    stands on a white ground at the right, above the bars; a second model's line is dotted."""
    fig = figures.violation_with_floor(ROWS, {"m1": 0.1, "m2": None})
    assert [t.name for t in fig.data] == ["m1", "m2"]
    assert list(fig.data[0].y) == [0.0, 0.25]
    (line,) = fig.layout.shapes  # only m1 has a floor
    assert (line.y0, line.y1) == (0.1, 0.1)
    assert line.line.dash == "dash" and line.layer == "above"
    assert line.line.color not in {t.marker.color for t in fig.data}
    (label,) = fig.layout.annotations
    assert "noise floor m1: 10%" in label.text and label.bgcolor.startswith("rgba(255,255,255")
    assert label.xanchor == "right"
    both = figures.violation_with_floor(ROWS, {"m1": 0.1, "m2": 0.12}).layout.shapes
    assert [s.line.dash for s in both] == ["dash", "dot"]


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


# ---------------------------------------------------------------- Compare runs and Breakdown


def test_compare_pickers_tell_alike_runs_apart_by_what_comes_first():
    """Issue 28 item 8: the pickers began with the long endpoint (model) names and were cut,
    so every choice read alike. Now start time, task, temperature and relation count come
    first; the legend names the temperature too."""
    from app.ui.analysis_tabs import compare_legend
    from app.ui.compare_runs_text import Sampling, run_choice_text, sampling_note

    run = {"id": "715f9ddf438d", "endpoint_name": "llama-hosted", "task_id": "sentiment",
           "model": "meta-llama-3.1-8b-instruct-turbo", "created_at": "2026-11-26T10:32:25"}  # fmt: skip
    hot = Sampling.of({"endpoint": {"temperature": 0.7, "top_p": 1.0, "seed": None}})
    cold = Sampling.of({"endpoint": {"temperature": 0.0, "top_p": 1.0, "seed": 1}})
    assert run_choice_text(run, ("a", "b", "c"), hot) == (
        "2026-11-26 10:32 · sentiment · T=0.7 · 3 relations · "
        "llama-hosted (meta-llama-3.1-8b-instruct-turbo) · 715f9d"
    )
    assert run_choice_text({**run, "status": "partial"}, ("a",), None).split(" · ")[2:4] == [
        "T unknown",
        "1 relation",
    ]
    assert (hot.text(), cold.text()) == ("T=0.7 · top-p 1 · no seed", "T=0 · top-p 1 · seed 1")
    assert "sampled differently" in sampling_note(hot, cold)
    assert "sampled differently" not in sampling_note(hot, hot)
    assert Sampling.of({}) == Sampling() and Sampling.of({"endpoint": "x"}) == Sampling()
    a, b = compare_legend(run, {**run, "id": "x"}, (hot, cold))
    assert (a, b) == ("A: llama-hosted · 2026-11-26 10:32 · T=0.7",
                      "B: llama-hosted · 2026-11-26 10:32 · T=0")  # fmt: skip


def test_compare_bars_legend_stands_above_the_plot():
    """Issue 28 item 8: below the plot (y = −0.35) the legend overlapped the axis title."""
    compare = [{"relation_id": "r1", "a_violation_rate": 0.1, "b_violation_rate": 0.3}]
    legend = figures.compare_runs_bars(compare, "A", "B").layout.legend
    assert (legend.y, legend.yanchor, legend.orientation) == (1.02, "bottom", "h")


def test_breakdown_opens_on_a_categorical_key_not_on_a_score():
    """Issue 28 item 8: "score" (the most common key) split into a bar per gold score value.
    The default is the first key whose values are mostly text; numbers mixed with a stray
    "high" stay numeric (3 numbers of 4 values, "(none)" not counted)."""
    from app.ui.analysis_tabs import default_breakdown_key, is_categorical

    values = {
        "score": [0.95, 0.97, 0.9, "high", "(none)"],
        "answer": ["110", "5.4", "(none)"],  # the demo's reference answers: numbers as text
        "category": ["physics", "math", "(none)"],
        "difficulty": [1, 2, 3],
    }

    def rows_of(key):
        return [{"model": "m", key: value} for value in values[key]]

    assert not is_categorical(values["score"]) and is_categorical(values["category"])
    assert not is_categorical(["(none)"]) and not is_categorical([])
    assert not is_categorical(values["answer"])
    assert default_breakdown_key(["score", "answer", "category", "difficulty"], rows_of) == (
        "category"
    )
    assert default_breakdown_key(["score", "difficulty"], rows_of) == "score"  # none: the first
