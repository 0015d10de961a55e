"""Pure DataFrame → plotly figure builders for the Analysis page and the HTML report: box plots,
bars and the severity scatter (the model × relation heatmap is ``app.analysis.heatmaps``).

No Streamlit and no database here, so the HTML report needs no UI layer: each function takes the
rows ``app.analysis.metrics`` produces (as a DataFrame or list of dicts) and returns a
``plotly.graph_objects.Figure``, so they can be unit-tested by looking at the traces. Titles and
number formats come from the catalogue in ``app.analysis.catalogue``.
"""

from __future__ import annotations

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


def mad_stability_bars(models: Rows) -> go.Figure:
    """Per model: MAD bars (left axis) and stability with / without identity (right axis).

    Traces, in order: "MAD", "Stability (identity included)", "Stability (identity excluded)".
    """
    df = as_frame(models)
    fig = go.Figure()
    if df.empty:
        return fig
    df = df.sort_values("model")
    x = [str(m) for m in df["model"]]

    def column(name: str) -> list[float | None]:
        return [None if pd.isna(v) else float(v) for v in df.get(name, pd.Series([None] * len(df)))]

    mad = column("mad")
    fig.add_trace(
        go.Bar(
            name="MAD",
            x=x,
            y=mad,
            text=[format_value(v, ".3f") for v in mad],
            textposition="outside",
            yaxis="y",
            offsetgroup="mad",
        )
    )
    for name, key in (
        ("Stability (identity included)", "stability"),
        ("Stability (identity excluded)", "stability_excl_identity"),
    ):
        values = column(key)
        fig.add_trace(
            go.Bar(
                name=name,
                x=x,
                y=values,
                text=[format_value(v, ".0%") for v in values],
                textposition="outside",
                yaxis="y2",
                offsetgroup=key,
            )
        )
    fig.update_layout(
        title="MAD (lower is better) and stability (higher is better)",
        barmode="group",
        yaxis={"title": "MAD = mean |Δ|", "rangemode": "tozero"},
        yaxis2={
            "title": "stability",
            "overlaying": "y",
            "side": "right",
            "range": [0, 1.1],
            "tickformat": ".0%",
        },
        legend={"orientation": "h", "y": -0.2},
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return fig


def violation_with_floor(
    rows: Rows,
    floors: Mapping[str, float | None],
) -> go.Figure:
    """Violation rate by relation, one bar trace per model, with each model's noise floor drawn
    as a dashed horizontal reference line (a layout shape, annotated)."""
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
        floor = floors.get(model)
        if floor is not None:
            fig.add_hline(
                y=float(floor),
                line_dash="dash",
                line_color=colour,
                annotation_text=f"noise floor {model}: {floor:.0%}",
                annotation_position="top left",
            )
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
        legend={"orientation": "h", "y": -0.35},
        yaxis={"title": "violation rate", "tickformat": ".0%"},
        xaxis={"title": "relation", "tickangle": -45},
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return fig
