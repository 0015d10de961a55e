"""Pure DataFrame → plotly figure builders for the Analysis page and the HTML report: box plots,
bars and the severity scatter (the model × relation heatmap is ``app.analysis.heatmaps``).

No Streamlit and no database here, so the HTML report needs no UI layer: each function takes the
rows ``app.analysis.metrics`` produces (as a DataFrame or list of dicts) and returns a
``plotly.graph_objects.Figure``, so they can be unit-tested by looking at the traces. Titles and
number formats come from the catalogue in ``app.analysis.catalogue``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from app.analysis.catalogue.definitions import (
    COMPARED_RATES,
    METRICS,
    SEVERITY_PROXIES,
    VIOLATION_RATE,
    metric_label,
)
from app.analysis.catalogue.formats import Unit, format_value, meta_value_order

Rows = pd.DataFrame | Iterable[Mapping[str, Any]]
"""What a figure is drawn from: a DataFrame, or rows as dicts."""


def as_frame(rows: Rows) -> pd.DataFrame:
    """``rows`` as a DataFrame (a DataFrame is taken as it is)."""
    return rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))


def box_plot(
    stats: Rows,
    *,
    measure_label: str = "Δ",
    title: str | None = None,
) -> go.Figure:
    """Box plots by relation (x) and model (one trace per model, grouped) from precomputed
    quartiles (columns model, relation_id, q1, median, q3, lowerfence, upperfence, mean, n)."""
    df = as_frame(stats)
    fig = go.Figure()
    if not df.empty:
        for model in sorted(df["model"].unique()):
            part = df[df["model"] == model].sort_values("relation_id")
            fig.add_trace(
                go.Box(
                    name=str(model),
                    x=list(part["relation_id"]),
                    q1=list(part["q1"]),
                    median=list(part["median"]),
                    q3=list(part["q3"]),
                    lowerfence=list(part["lowerfence"]),
                    upperfence=list(part["upperfence"]),
                    mean=list(part["mean"]),
                    boxpoints=False,
                )
            )
    fig.update_layout(
        title=title or f"{measure_label} by relation and model",
        boxmode="group",
        xaxis={"title": "relation", "tickangle": -45},
        yaxis={"title": measure_label},
        legend={"title": {"text": "model"}},
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return fig


_NAME_LINE = 22  # characters per line of a wrapped model name


def wrapped_name(name: str, width: int = _NAME_LINE) -> str:
    """A long model name broken into lines of at most ``width`` characters after its "-", "/",
    "_" or "." ("meta-llama-3.1-8b-instruct-turbo" → "meta-llama-3.1-8b-<br>instruct-turbo"):
    side by side (on top of a turned heatmap, under bars), unbroken names ran into each other."""
    lines, line = [], ""
    for part in re.findall(r"[^-/_.]+[-/_.]?|[-/_.]", name):
        if line and len(line) + len(part) > width:
            lines.append(line)
            line = ""
        line += part
    return "<br>".join([*lines, line])


def _model_axis(models: list[str]) -> dict[str, Any]:
    """An x axis of model names, each wrapped (not slanted) under its bars."""
    return {"tickmode": "array", "tickvals": models, "ticktext": [wrapped_name(m) for m in models],
            "tickangle": 0}  # fmt: skip


def _model_column(df: pd.DataFrame, name: str) -> list[float | None]:
    values = df.get(name, pd.Series([None] * len(df)))
    return [None if pd.isna(v) else float(v) for v in values]


def mad_bars(models: Rows) -> go.Figure:
    """MAD per model (one "MAD" bar trace, lower is better), on its own axis: sharing twin axes
    with the stability bars, a reader matched bars to the wrong scale."""
    df = as_frame(models)
    fig = go.Figure()
    if df.empty:
        return fig
    df = df.sort_values("model")
    mad = _model_column(df, "mad")
    fig.add_trace(
        go.Bar(
            name="MAD",
            x=[str(m) for m in df["model"]],
            y=mad,
            text=[format_value(v, ".3f") for v in mad],
            textposition="outside",
            cliponaxis=False,
        )
    )
    fig.update_layout(
        title="MAD per model (mean |Δ|, lower is better)",
        xaxis=_model_axis([str(m) for m in df["model"]]),
        yaxis={"title": "MAD = mean |Δ|", "rangemode": "tozero"},
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return fig


def stability_bars(models: Rows) -> go.Figure:
    """Stability per model, with and without the identity relation (higher is better), in
    percent on its own axis. Traces: "Stability (identity included)", "… excluded)"."""
    df = as_frame(models)
    fig = go.Figure()
    if df.empty:
        return fig
    df = df.sort_values("model")
    for name, key in (
        ("Stability (identity included)", "stability"),
        ("Stability (identity excluded)", "stability_excl_identity"),
    ):
        values = _model_column(df, key)
        fig.add_trace(
            go.Bar(
                name=name,
                x=[str(m) for m in df["model"]],
                y=values,
                text=[format_value(v, ".0%") for v in values],
                textposition="outside",
                cliponaxis=False,
            )
        )
    fig.update_layout(
        title="Stability per model (share of |Δ| < 0.05, higher is better)",
        barmode="group",
        xaxis=_model_axis([str(m) for m in df["model"]]),
        yaxis={"title": "stability", "range": [0, 1.1], "tickformat": ".0%"},
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return fig


# Each model's noise-floor line: dark, so it never reads as one of the coloured bars, and told
# apart from the other models' lines by its dash.
_FLOOR_INK = "#222222"
_FLOOR_DASHES = ("dash", "dot", "dashdot", "longdash", "longdashdot")


def _floor_lines(fig: go.Figure, models: list[str], floors: Mapping[str, float | None]) -> None:
    """Each model's noise floor: a dark line across the plot (its own dash per model), labelled
    on a white ground above the bars, at the right end (the left one sat on the first bars)."""
    drawn = [model for model in models if floors.get(model) is not None]
    for index, model in enumerate(drawn):
        floor = float(floors[model])  # type: ignore[arg-type]
        fig.add_hline(
            y=floor,
            line={"color": _FLOOR_INK, "width": 1.5, "dash": _FLOOR_DASHES[index % 5]},
            layer="above",
            annotation={
                "text": f"noise floor {model}: {floor:.0%}",
                "bgcolor": "rgba(255,255,255,0.9)",
                "font": {"color": _FLOOR_INK},
                "yshift": 12 * index,  # two floors close together: labels one above the other
            },
            annotation_position="top right",
        )


def violation_with_floor(
    rows: Rows,
    floors: Mapping[str, float | None],
) -> go.Figure:
    """Violation rate by relation, one bar trace per model, with each model's noise floor drawn
    as a dark dashed horizontal reference line (a layout shape, annotated on a white ground)."""
    df = as_frame(rows)
    fig = go.Figure()
    if df.empty:
        return fig
    colours = [
        "#636efa",
        "#ef553b",
        "#00cc96",
        "#ab63fa",
        "#ffa15a",
        "#19d3f3",
        "#ff6692",
        "#b6e880",
    ]
    for index, model in enumerate(sorted(df["model"].unique())):
        part = df[df["model"] == model].sort_values("relation_id")
        colour = colours[index % len(colours)]
        values = [None if pd.isna(v) else float(v) for v in part[VIOLATION_RATE]]
        fig.add_trace(
            go.Bar(name=str(model), x=list(part["relation_id"]), y=values, marker_color=colour)
        )
    _floor_lines(fig, sorted(df["model"].unique()), floors)
    fig.update_layout(
        title="Violation rate by relation, with each model's noise floor (si.identity)",
        barmode="group",
        yaxis={"title": "violation rate", "tickformat": ".0%", "rangemode": "tozero"},
        xaxis={"title": "relation", "tickangle": -45},
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return fig


def severity_scatter(
    rows: Rows,
    proxy: str = "levenshtein",
    *,
    outcome: str = "abs_delta",
    colour_by: str = "relation_id",
) -> go.Figure:
    """Follow-up severity (x: a proxy) against the outcome (y: |Δ| or answer changed 0/1), one
    trace per ``colour_by`` value; rows missing x or y are left out."""
    if proxy not in SEVERITY_PROXIES:
        raise ValueError(f"unknown severity proxy {proxy!r}")
    df = as_frame(rows)
    fig = go.Figure()
    y_title = "|Δ|" if outcome == "abs_delta" else "answer changed (1 = yes)"
    if not df.empty and proxy in df and outcome in df:
        df = df[df[proxy].notna() & df[outcome].notna()]
        for group in sorted(df[colour_by].fillna("(none)").unique()):
            part = df[df[colour_by].fillna("(none)") == group]
            fig.add_trace(
                go.Scatter(
                    name=str(group),
                    x=[float(v) for v in part[proxy]],
                    y=[float(v) for v in part[outcome]],
                    mode="markers",
                    marker={"size": 7, "opacity": 0.7},
                    customdata=list(part["id"]) if "id" in part else None,
                    hovertemplate="%{customdata}<br>x=%{x:.3f} y=%{y:.3f}<extra></extra>",
                )
            )
    fig.update_layout(
        title=f"{SEVERITY_PROXIES[proxy]} vs {y_title}",
        xaxis={"title": SEVERITY_PROXIES[proxy]},
        yaxis={"title": y_title},
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return fig


def breakdown_bars(rows: Rows, key: str, metric: str = VIOLATION_RATE) -> go.Figure:
    """``metric`` per value of a sample metadata key (x), one bar trace per model."""
    df = as_frame(rows)
    fig = go.Figure()
    order: list[str] = []
    if not df.empty:
        # Metadata values mix types across samples (0.5, "high", missing): order them with one
        # key that never compares a number with a string, and plot them as text categories.
        values_in_order = sorted(
            {str(v): v for v in df[key]}.items(), key=lambda item: meta_value_order(item[1])
        )
        order = [text for text, _ in values_in_order]
        for model in sorted(df["model"].unique()):
            part = df[df["model"] == model]
            by_value = {str(v): y for v, y in zip(part[key], part[metric], strict=True)}
            ys = [by_value.get(text) for text in order]
            fig.add_trace(
                go.Bar(
                    name=str(model),
                    x=order,
                    y=[None if y is None or pd.isna(y) else float(y) for y in ys],
                )
            )
    shown = metric_label(metric)
    axis = {"title": shown}
    if METRICS.get(metric) is not None and METRICS[metric].unit is Unit.PERCENT:
        axis["tickformat"] = ".0%"
    fig.update_layout(
        title=f"{shown} by {key}",
        barmode="group",
        xaxis={"title": key, "type": "category", "categoryorder": "array", "categoryarray": order},
        yaxis=axis,
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return fig


def compare_runs_bars(rows: Rows, label_a: str, label_b: str) -> go.Figure:
    """Violation rate per relation for two runs side by side (traces: run A, run B)."""
    df = as_frame(rows)
    fig = go.Figure()
    if not df.empty:
        df = df.sort_values("relation_id")
        rate_a, rate_b = COMPARED_RATES
        runs = ((rate_a, label_a, "#7f8c9d"), (rate_b, label_b, "#ef553b"))
        for column, label, colour in runs:
            values = [None if pd.isna(v) else float(v) for v in df[column]]
            fig.add_trace(
                go.Bar(
                    name=label,
                    x=list(df["relation_id"]),
                    y=values,
                    marker_color=colour,  # before in grey, after in colour: told apart at once
                    text=[format_value(v, ".1%") for v in values],
                    textposition="outside",
                )
            )
    fig.update_layout(
        title="Violation rate per relation: run A vs run B",
        barmode="group",
        # above the plot: under it, the legend ran into the axis title and slanted relations
        legend={"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"},
        yaxis={"title": "violation rate", "tickformat": ".0%"},
        xaxis={"title": "relation", "tickangle": -45},
        margin={"l": 10, "r": 10, "t": 90, "b": 10},
    )
    return fig
