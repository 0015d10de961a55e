"""app/analysis/heatmaps.py and heatmap_grid.py: the model × relation heatmap's cells, and its
two drawings (plotly for the HTML report, Vega-Lite for the Analysis page)."""

from __future__ import annotations

import pandas as pd
import pytest

from app.analysis import heatmap_grid, heatmaps

ROWS = [
    {"model": "m2", "relation_id": "si.paraphrase", "n": 10, "violation_rate": 0.5,
     "mean_delta": -0.12, "mean_similarity": 0.81},
    {"model": "m1", "relation_id": "si.paraphrase", "n": 8, "violation_rate": 0.25,
     "mean_delta": 0.004, "mean_similarity": None},
    {"model": "m1", "relation_id": "ad.format", "n": 4, "violation_rate": 0.0,
     "mean_delta": None, "mean_similarity": 0.9},
]  # fmt: skip


def _traces(fig) -> dict[str, object]:
    """A plotly heatmap's traces by name: "colour" (the heatmap), "labels" (the printed text),
    "cells" (the tooltips) and, where a cell rests on few cases, the dashed outline's legend."""
    return {trace.name or "colour": trace for trace in fig.data}


def _value_line(text: str) -> str:
    """A cell's printed value (its first line; the second holds n and the interval)."""
    return text.split("<br>")[0].removeprefix("<b>").removesuffix("</b>")


def test_heatmap_values_text_and_tooltip_data():
    fig = heatmaps.heatmap(ROWS, "violation_rate")
    traces = _traces(fig)
    trace, tooltips, labels = traces["colour"], traces["cells"], traces["labels"]
    assert list(trace.x) == ["ad.format", "si.paraphrase"]
    assert list(trace.y) == ["m1", "m2"]
    assert [list(row) for row in trace.z] == [[0.0, 0.25], [None, 0.5]]
    assert [[_value_line(t) for t in row] for row in trace.text] == [["0%", "25%"], ["", "50%"]]
    # the text layer prints each filled cell, in its own ink (light cells: black)
    assert [_value_line(t) for t in labels.text] == ["0%", "25%", "50%"]
    assert labels.mode == "text" and list(labels.textfont.color) == ["#000000"] * 3
    assert list(trace.customdata[1][1])[:3] == ["m2", "si.paraphrase", 10]
    assert (trace.zmin, trace.zmax) == (0.0, 1.0)
    assert fig.layout.title.text == "Violation rate"
    # the invisible tooltip layer: one marker per filled cell, naming it in customdata
    assert tooltips.type == "scatter" and tooltips.name == "cells"
    assert list(zip(tooltips.x, tooltips.y, strict=True)) == [
        ("ad.format", "m1"),
        ("si.paraphrase", "m1"),
        ("si.paraphrase", "m2"),
    ]
    assert [list(c)[:3] for c in tooltips.customdata][2] == ["m2", "si.paraphrase", 10]
    assert [_value_line(t) for t in tooltips.text] == ["0%", "25%", "50%"]


def test_heatmap_delta_is_diverging_around_zero():
    fig = heatmaps.heatmap(pd.DataFrame(ROWS), "mean_delta")
    trace = fig.data[0]
    assert (trace.zmin, trace.zmax) == (-0.12, 0.12)  # symmetric: 0 in the middle colour
    assert [[_value_line(t) for t in row] for row in trace.text] == [
        ["", "+0.004"],
        ["", "-0.120"],
    ]
    similarity = heatmaps.heatmap(ROWS, "mean_similarity").data[0]
    assert [[_value_line(t) for t in row] for row in similarity.text] == [
        ["0.90", ""],
        ["", "0.81"],
    ]


# Wilson 95% intervals worked by hand (z = 1.96): 4 of 4 → [0.510, 1]; 28 of 60 → [0.347, 0.594].
SMALL_AND_LARGE = [
    {"model": "m", "relation_id": "few", "n": 4, "pass": 0, "fail": 4, "skip": 0,
     "violation_rate": 1.0, "ci_low": 0.5101, "ci_high": 1.0},
    {"model": "m", "relation_id": "many", "n": 63, "pass": 32, "fail": 28, "skip": 3,
     "violation_rate": 28 / 60, "ci_low": 0.3469, "ci_high": 0.5935},
]  # fmt: skip


def test_heatmap_cells_print_n_and_the_95_percent_interval():
    """Issue 12 item 5: a 100% from 4 cases must not look like 47% from 60 — every cell prints
    and hovers its n (the judged PASS + FAIL cases) and its Wilson interval."""
    fig = heatmaps.heatmap(SMALL_AND_LARGE, "violation_rate")
    trace, tooltips = _traces(fig)["colour"], _traces(fig)["cells"]
    few, many = trace.text[0]
    assert few == "<b>100%</b><br>n=4<br>51–100%"
    assert many == "<b>47%</b><br>n=60<br>35–59%"
    assert [list(c) for c in tooltips.customdata] == [
        ["m", "few", 4, "51–100%"],
        ["m", "many", 60, "35–59%"],
    ]
    assert "n = %{customdata[2]}" in tooltips.hovertemplate
    assert "95% interval %{customdata[3]}" in tooltips.hovertemplate


def test_heatmap_outlines_only_cells_with_a_wide_interval_and_keeps_their_colour():
    """Issue 28 item 1: the 4-case cell (interval 49 points wide) keeps the colour of its value
    (100%: the ramp's darkest red, no white veil over it) and gets a dashed outline in its ink
    (white on that dark red), named in a legend entry; the 60-case cell (25 points) gets none."""
    cells = heatmap_grid.heatmap_cells(SMALL_AND_LARGE, "violation_rate")
    assert [(c.relation_id, c.uncertain) for c in cells] == [("few", True), ("many", False)]
    fig = heatmaps.heatmap(SMALL_AND_LARGE, "violation_rate")
    (outline,) = fig.layout.shapes
    assert (outline.x0, outline.x1, outline.y0, outline.y1) == (-0.44, 0.44, -0.44, 0.44)
    assert outline.fillcolor is None and outline.line.dash == "dash"
    assert outline.line.color == "#ffffff"
    legend = _traces(fig)[heatmap_grid.FEW_CASES_LEGEND]
    assert legend.showlegend and legend.line.dash == "dash"
    assert fig.layout.legend.yref == "container"  # at the figure's foot, clear of the colour bar
    # the colour scale's top stop is the 100% cell's colour, and its text is white on it
    assert fig.data[0].colorscale[-1] == (1.0, "#67000d")
    assert list(_traces(fig)["labels"].textfont.color) == ["#ffffff", "#000000"]
    assert heatmap_grid.FEW_CASES_LEGEND not in _traces(heatmaps.heatmap(
        [SMALL_AND_LARGE[1]], "violation_rate"))  # fmt: skip


def test_heatmap_colour_bar_starts_at_the_figures_left_edge_and_is_in_percent():
    """Issue 28 item 2: on a 390 px phone the report's heatmap scrolls sideways; a colour bar
    starting where the cells start (after the names) ran off the screen. It now starts at the
    figure's own left edge (container x = 0, 10 px in), 240 px long: in view at 390 px."""
    flat = heatmaps.heatmap(SMALL_AND_LARGE, "violation_rate")
    bar = flat.data[0].colorbar
    assert bar.tickformat == ".0%" and bar.orientation == "h"  # keeps the width for cells
    assert (bar.xref, bar.x, bar.xanchor, bar.xpad) == ("container", 0, "left", 10)
    assert (bar.len, bar.lenmode) == (240, "pixels")
    # under the figure's title, which names the metric (the title is pinned to the top edge)
    assert (bar.yref, bar.y, bar.yanchor) == ("container", 1, "top")
    assert flat.layout.title.text == "Violation rate" and flat.layout.title.yanchor == "top"
    # turned (models named on top): at the figure's foot, titled under the bar
    turned = heatmaps.heatmap(SMALL_AND_LARGE, "violation_rate", relations_down=True)
    bar = turned.data[0].colorbar
    assert (bar.xref, bar.x, bar.yref, bar.y, bar.yanchor) == ("container", 0, "container", 0,
                                                               "bottom")  # fmt: skip
    assert (bar.title.text, bar.title.side) == ("Violation rate", "bottom")
    # the few-cases legend from the same left edge, under the bar
    assert (turned.layout.legend.xref, turned.layout.legend.x) == ("container", 0)


def test_heatmap_interval_of_the_inconsistency_and_net_rates():
    """Inconsistency: Wilson over the cases with both answers (2 of 4 → [0.150, 0.850]); net
    rate: the violation interval less the noise floor, clipped at 0."""
    row = {**SMALL_AND_LARGE[1], "inconsistency_rate": 0.5, "n_answered": 4,
           "noise_floor": 0.4, "net_violation_rate": 28 / 60 - 0.4}  # fmt: skip
    inconsistency = heatmap_grid.heatmap_cell(row, "inconsistency_rate")
    assert inconsistency.n == 4 and inconsistency.interval_text() == "15–85%"
    net = heatmap_grid.heatmap_cell(row, "net_violation_rate")
    assert net.interval_text() == "0–19%"
    mean = heatmap_grid.heatmap_cell({"model": "m", "relation_id": "r", "n": 3, "mean_delta": 0.1},
                                "mean_delta")  # fmt: skip
    assert (mean.n, mean.interval_text(), mean.uncertain) == (3, "", True)


def test_heatmap_empty_and_unknown_metric():
    assert heatmaps.heatmap([], "violation_rate").data == ()
    with pytest.raises(ValueError):
        heatmaps.heatmap(ROWS, "nonsense")


def _spec_cells(spec: dict) -> dict[tuple[str, str], dict]:
    return {(c["model"], c["relation_id"]): c for c in spec["data"]["values"]}


def test_heatmap_spec_cells_print_value_n_and_interval_like_the_plotly_heatmap():
    """Same cells and text as :func:`heatmaps.heatmap`: 28/60 judged → "47%", n=60 and the
    Wilson interval 35–59%; the 4-case cell (interval 49 points wide) is the only uncertain one."""
    spec = heatmaps.heatmap_spec(SMALL_AND_LARGE, "violation_rate")
    cells = _spec_cells(spec)
    many, few = cells[("m", "many")], cells[("m", "few")]
    assert (many["label"], many["n"], many["interval"]) == ("47%", 60, "35–59%")
    assert many["detail"] == "n=60\n35–59%" and many["value"] == 28 / 60
    assert (few["label"], few["n"], few["uncertain"], many["uncertain"]) == ("100%", 4, True, False)
    assert spec["encoding"]["x"]["sort"] == ["few", "many"]  # relations sorted by name
    assert spec["encoding"]["x"]["axis"]["labelOverlap"] is False  # every column named
    # long model names are cut at 180 px (at 320 they took most of a phone's width); the
    # tooltip names the model in full
    assert spec["encoding"]["y"]["axis"]["labelLimit"] == 180
    assert spec["encoding"]["tooltip"][0] == {"field": "model", "title": "model"}
    assert spec["title"] == "Violation rate"


def test_heatmap_spec_outlines_only_uncertain_cells_dashed_and_draws_no_legend():
    """No fading: the uncertain cells get a dashed outline in their ink. The chart draws no
    legend (Vega starts a top legend where the cells start, off a 390 px phone's screen): the
    page draws it above the chart from :func:`heatmap_grid.heatmap_legend`."""
    spec = heatmaps.heatmap_spec(SMALL_AND_LARGE, "violation_rate")
    layers = spec["layer"]
    (outline,) = [layer for layer in layers if layer.get("transform")]
    assert outline["transform"] == [{"filter": "datum.uncertain"}]
    assert outline["mark"] == {"type": "rect", "fillOpacity": 0, "strokeWidth": 1.5,
                               "strokeDash": [4, 3]}  # fmt: skip
    assert outline["encoding"]["stroke"]["condition"]["test"] == "datum.ink == '#ffffff'"
    assert layers[0]["encoding"]["color"]["legend"] is None
    assert not any("shape" in layer.get("encoding", {}) for layer in layers)
    assert "legend" not in spec["config"]
    colour = layers[0]["mark"]
    assert "opacity" not in colour and "fillOpacity" not in colour  # the value's colour, whole
    plain = heatmaps.heatmap_spec([SMALL_AND_LARGE[1]], "violation_rate")["layer"]
    assert not [layer for layer in plain if layer.get("transform")]


def test_heatmap_spec_colour_scale_follows_the_metric():
    """Rates: the catalogue's red scale pinned to 0–100%, legend in percent; Δ: red–blue
    diverging around 0, its domain from the data; a missing value leaves its cell out."""
    rate = heatmaps.heatmap_spec(ROWS, "violation_rate")["layer"][0]["encoding"]["color"]
    # ColorBrewer Reds' 9 stops, one per 12.5%, as the report's plotly scale
    assert rate["scale"]["domain"] == [i / 8 for i in range(9)]
    assert rate["scale"]["range"][0] == "#fff5f0" and rate["scale"]["range"][-1] == "#67000d"
    assert rate["scale"]["interpolate"] == "rgb"
    assert rate["title"] == "Violation rate"
    delta_spec = heatmaps.heatmap_spec(ROWS, "mean_delta")
    delta = delta_spec["layer"][0]["encoding"]["color"]
    # RdBu's 11 stops over −0.12…0.12: red for a score that dropped, blue for one that rose
    assert delta["scale"]["domain"][0] == -0.12 and delta["scale"]["domain"][5] == 0.0
    assert delta["scale"]["range"][0] == "#67001f" and delta["scale"]["range"][-1] == "#053061"
    cells = _spec_cells(delta_spec)
    assert set(cells) == {("m2", "si.paraphrase"), ("m1", "si.paraphrase")}  # ad.format: None
    assert cells[("m2", "si.paraphrase")]["label"] == "-0.120"


def test_heatmap_spec_click_selects_one_cell_by_model_and_relation():
    spec = heatmaps.heatmap_spec(ROWS, "violation_rate")
    (param,) = spec["layer"][0]["params"]
    assert param["name"] == heatmaps.HEATMAP_SELECTION
    assert param["select"]["type"] == "point" and param["select"]["on"] == "click"
    assert param["select"]["fields"] == ["model", "relation_id"]


def test_heatmap_spec_empty_and_unknown_metric():
    assert heatmaps.heatmap_spec([], "violation_rate")["data"]["values"] == []
    with pytest.raises(ValueError):
        heatmaps.heatmap_spec(ROWS, "n")


def test_heatmap_spec_prints_white_only_on_dark_cells():
    """The ink of the larger WCAG contrast. 47% on Reds sits 0.733 of the way from stop 3
    (252,146,114) to stop 4 (251,106,74): (251,117,85), luminance 0.339, so black gives
    0.389 / 0.05 = 7.8:1 and white 1.05 / 0.389 = 2.7:1 → black. 100% is the darkest stop
    (103,0,13) → white, uncertain or not. Δ over the data's −0.12…0.004 (symmetric: ±0.12):
    −0.12 is RdBu's darkest red (white ink), 0.004 near the pale middle (black)."""
    rate = _spec_cells(heatmaps.heatmap_spec(SMALL_AND_LARGE, "violation_rate"))
    assert rate[("m", "many")]["ink"] == "#000000" and rate[("m", "few")]["ink"] == "#ffffff"
    delta = _spec_cells(heatmaps.heatmap_spec(ROWS, "mean_delta"))
    assert delta[("m2", "si.paraphrase")]["ink"] == "#ffffff"
    assert delta[("m1", "si.paraphrase")]["ink"] == "#000000"


def _printed_fields(n_relations: int) -> list[str]:
    rows = [
        {"model": "m", "relation_id": f"r{i:02d}", "n": 20, "pass": 15, "fail": 5,
         "violation_rate": 0.25}
        for i in range(n_relations)
    ]  # fmt: skip
    layers = heatmaps.heatmap_spec(rows, "violation_rate")["layer"]
    return [layer["encoding"]["text"]["field"] for layer in layers if layer["mark"] == "text"
            or layer["mark"].get("type") == "text"]  # fmt: skip


def test_wide_heatmaps_print_less_per_cell_and_keep_it_in_the_tooltip():
    """At 40 relations the n and interval lines of neighbouring cells overlapped, and the
    values too: up to 12 columns a cell prints all three, up to 24 its value, beyond nothing."""
    assert _printed_fields(12) == ["label", "detail"]
    assert _printed_fields(13) == ["label"]
    assert _printed_fields(24) == ["label"]
    assert _printed_fields(25) == []
    assert heatmap_grid.heatmap_cell_text(40) == "" and heatmap_grid.heatmap_cell_text(
        3
    ).startswith("value,")
    tooltip = heatmaps.heatmap_spec(SMALL_AND_LARGE, "violation_rate")["encoding"]["tooltip"]
    assert [t["title"] for t in tooltip] == ["model", "relation", "Violation rate", "n",
                                            "95% interval"]  # fmt: skip


def test_heatmap_turned_lists_relations_down_and_keeps_every_cell():
    """``relations_down`` (the HTML report, past 8 relations): relations on y, models on x,
    the same cells, text, tooltip data and faded squares, only turned; the ranges fit the cells."""
    rows = [*SMALL_AND_LARGE, {**SMALL_AND_LARGE[1], "model": "m2"}]
    fig = heatmaps.heatmap(rows, "violation_rate", relations_down=True)
    trace, tooltips = _traces(fig)["colour"], _traces(fig)["cells"]
    assert list(trace.x) == ["m", "m2"] and list(trace.y) == ["few", "many"]
    assert [list(row) for row in trace.z] == [[1.0, None], [28 / 60, 28 / 60]]
    assert trace.text[1][0] == "<b>47%</b><br>n=60<br>35–59%"  # 2 columns: all three lines
    assert [list(c)[:2] for c in tooltips.customdata] == [
        ["m", "few"],
        ["m", "many"],
        ["m2", "many"],
    ]
    assert list(zip(tooltips.x, tooltips.y, strict=True)) == [
        ("m", "few"),
        ("m", "many"),
        ("m2", "many"),
    ]
    shapes = fig.layout.shapes  # only m × few is uncertain: column 0, row 0
    assert [(s.x0, s.x1, s.y0, s.y1) for s in shapes] == [(-0.44, 0.44, -0.44, 0.44)]
    assert (fig.layout.xaxis.title.text, fig.layout.yaxis.title.text) == ("model", "relation")
    assert fig.layout.xaxis.side == "top" and fig.layout.xaxis.range == (-0.5, 1.5)
    assert fig.layout.yaxis.range == (1.5, -0.5)  # first relation on top
    assert trace.colorbar.orientation == "h"  # at the foot, from the figure's left edge
    # the models named on top, long names wrapped after a "-" (side by side, they ran together)
    assert list(fig.layout.xaxis.ticktext) == ["m", "m2"]
    assert heatmaps.wrapped_name("meta-llama-3.1-8b-instruct-turbo") == (
        "meta-llama-3.1-8b-<br>instruct-turbo"
    )  # 18 + 14 characters: the first 22-character line ends at a "-"


def test_plotly_heatmap_prints_less_on_wide_heatmaps_and_names_every_column():
    rows = [
        {"model": "m", "relation_id": f"r{i:02d}", "n": 20, "pass": 15, "fail": 5,
         "violation_rate": 0.25}
        for i in range(30)
    ]  # fmt: skip
    fig = heatmaps.heatmap(rows, "violation_rate")
    assert {t for t in fig.data[0].text[0]} == {""}  # 30 columns: nothing printed
    assert set(_traces(fig)["labels"].text) == {""}
    assert _traces(fig)["cells"].text[0].startswith("<b>25%</b><br>n=20")  # the tooltip keeps it
    assert (fig.layout.xaxis.tickmode, fig.layout.xaxis.dtick) == ("linear", 1)
    turned = heatmaps.heatmap(rows, "violation_rate", relations_down=True)
    assert turned.data[0].text[0][0].startswith("<b>25%</b><br>n=20")  # 1 column: all of it


def test_a_metric_s_cell_follows_its_catalogue_entry_alone(monkeypatch):
    """A new heatmap metric needs no code here: its scale in the catalogue says which count is
    its n and where its interval comes from."""
    from app.analysis.catalogue.definitions import CellInterval, HeatmapScale, Metric
    from app.analysis.catalogue.formats import Unit

    scale = HeatmapScale("Reds", ".0%", (0.0, 1.0), interval=CellInterval.WILSON_OVER_N,
                         n_key="n_refused")  # fmt: skip
    refusal = Metric("refusal_rate", "refusals", Unit.PERCENT, title="Refusals", heatmap=scale)
    monkeypatch.setitem(heatmap_grid.HEATMAP_METRICS, "refusal_rate", refusal)
    row = {"model": "m", "relation_id": "r", "pass": 30, "fail": 10, "refusal_rate": 0.5,
           "n_refused": 4}  # fmt: skip
    cell = heatmap_grid.heatmap_cell(row, "refusal_rate")
    assert (cell.n, cell.interval_text()) == (4, "15–85%")
    assert heatmap_grid.heatmap_cell({**row, "n_refused": 0}, "refusal_rate").n == 40  # judged


def test_heatmap_legend_names_the_ramp_its_ends_and_the_dashed_outline():
    """The page's legend (drawn above the chart, issue 28 item 2) holds the cells' own ramp:
    Reds' 9 stops one per 12.5% over 0–100%, ticked 0% / 50% / 100%; the dashed-outline entry
    only where a cell rests on few cases (the 4-case cell's interval spans 49 points > 30)."""
    legend = heatmap_grid.heatmap_legend(
        heatmap_grid.heatmap_grid(SMALL_AND_LARGE, "violation_rate")
    )
    assert legend.title == "Violation rate"
    assert legend.stops[0] == (0.0, "#fff5f0") and legend.stops[-1] == (1.0, "#67000d")
    assert [position for position, _ in legend.stops] == [i / 8 for i in range(9)]
    assert legend.ticks == ((0.0, "0%"), (0.5, "50%"), (1.0, "100%"))
    assert legend.few_cases
    many_only = heatmap_grid.heatmap_grid(SMALL_AND_LARGE[1:], "violation_rate")
    assert not heatmap_grid.heatmap_legend(many_only).few_cases  # 35–59%: 25 points wide


def test_heatmap_legend_of_a_diverging_metric_is_symmetric_around_its_midpoint():
    """Mean Δ over −0.12 and +0.004: RdBu laid symmetric around 0 by the larger distance, 0.12,
    so the ticks read −0.120 / +0.000 / +0.120 (the metric's signed format), 11 stops."""
    legend = heatmap_grid.heatmap_legend(heatmap_grid.heatmap_grid(ROWS, "mean_delta"))
    assert legend.ticks == ((0.0, "-0.120"), (0.5, "+0.000"), (1.0, "+0.120"))
    assert len(legend.stops) == 11 and legend.stops[5] == (0.5, "#f7f7f7")
