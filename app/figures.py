"""Pure DataFrame → plotly figure builders for the Analysis page and the HTML report.

No Streamlit and no database here, so the HTML report needs no UI layer: each function takes the
rows ``app.metrics`` produces (as a DataFrame or list of dicts) and returns a
``plotly.graph_objects.Figure``, so they can be unit-tested by looking at the traces. Titles,
colour scales and number formats come from the catalogue in ``app.columns``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from app.columns import HEATMAP_METRICS, SEVERITY_PROXIES, heatmap_title

_HEIGHT_PER_ROW = 38


def _frame(rows: pd.DataFrame | Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    return rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))


def format_value(value: Any, fmt: str) -> str:
    """A cell label: the value in ``fmt`` (Python format spec), or "" when missing."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    return format(float(value), fmt)


def heatmap(
    rows: pd.DataFrame | Iterable[Mapping[str, Any]],
    metric: str = "violation_rate",
    *,
    title: str | None = None,
) -> go.Figure:
    """Model (y) × relation (x) heatmap of ``metric`` with the value printed in every cell.

    Missing cells stay empty (z None, text ""). ``customdata`` holds [model, relation_id, n] per
    cell; a second, invisible marker trace ("cells", one point per filled cell, same customdata)
    makes cells clickable in Streamlit. Models and relations are sorted by name.
    """
    label = heatmap_title(metric)  # raises ValueError for a metric a heatmap cannot show
    scale = HEATMAP_METRICS[metric].heatmap
    assert scale is not None
    fmt = scale.number_format
    df = _frame(rows)
    fig = go.Figure()
    if df.empty:
        fig.update_layout(title=title or label)
        return fig
    models = sorted(df["model"].unique())
    relations = sorted(df["relation_id"].unique())
    lookup = {(r["model"], r["relation_id"]): r for r in df.to_dict("records")}
    z, text, custom = [], [], []
    for model in models:
        z_row, text_row, custom_row = [], [], []
        for relation_id in relations:
            row = lookup.get((model, relation_id))
            value = row.get(metric) if row else None
            value = None if value is None or pd.isna(value) else float(value)
            z_row.append(value)
            text_row.append(format_value(value, fmt))
            custom_row.append([model, relation_id, int(row["n"]) if row and "n" in row else 0])
        z.append(z_row)
        text.append(text_row)
        custom.append(custom_row)
    hover = (
        "model %{y}<br>relation %{x}<br>" + label + " %{text}<br>n=%{customdata[2]}<extra></extra>"
    )
    trace = go.Heatmap(
        z=z,
        x=relations,
        y=models,
        text=text,
        texttemplate="%{text}",
        customdata=custom,
        colorscale=scale.colours,
        hoverinfo="skip",  # the click layer below carries the tooltip
        colorbar={"title": {"text": label}},
        hoverongaps=False,
    )
    if scale.value_range is not None:
        trace.update(zmin=scale.value_range[0], zmax=scale.value_range[1])
    if scale.midpoint is not None:
        trace.update(zmid=scale.midpoint)
    fig.add_trace(trace)
    # Streamlit reports no selection for heatmap traces (streamlit/streamlit#8760), so every
    # filled cell also gets an invisible square marker: clicking it selects the point, whose
    # customdata names the cell.
    filled = [
        (model, relation_id, custom[i][j])
        for i, model in enumerate(models)
        for j, relation_id in enumerate(relations)
        if z[i][j] is not None
    ]
    fig.add_trace(
        go.Scatter(
            name="cells",
            x=[relation_id for _, relation_id, _ in filled],
            y=[model for model, _, _ in filled],
            customdata=[data for _, _, data in filled],
            text=[text[models.index(m)][relations.index(r)] for m, r, _ in filled],
            mode="markers",
            marker={"symbol": "square", "size": 28, "color": "rgba(0,0,0,0)"},
            hovertemplate=hover,
            showlegend=False,
        )
    )
    fig.update_layout(
        title=title or label,
        xaxis={"title": "relation", "tickangle": -45, "type": "category", "showgrid": False},
        yaxis={"title": "model", "type": "category", "autorange": "reversed", "showgrid": False},
        plot_bgcolor="white",  # missing cells show as blank, not as a coloured value
        height=max(260, 160 + _HEIGHT_PER_ROW * len(models)),
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return fig


def box_plot(
    stats: pd.DataFrame | Iterable[Mapping[str, Any]],
    *,
    measure_label: str = "Δ",
    title: str | None = None,
) -> go.Figure:
    """Box plots by relation (x) and model (one trace per model, grouped) from precomputed
    quartiles (columns model, relation_id, q1, median, q3, lowerfence, upperfence, mean, n)."""
    df = _frame(stats)
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


def mad_stability_bars(models: pd.DataFrame | Iterable[Mapping[str, Any]]) -> go.Figure:
    """Per model: MAD bars (left axis) and stability with / without identity (right axis).

    Traces, in order: "MAD", "Stability (identity included)", "Stability (identity excluded)".
    """
    df = _frame(models)
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
    rows: pd.DataFrame | Iterable[Mapping[str, Any]],
    floors: Mapping[str, float | None],
) -> go.Figure:
    """Violation rate by relation, one bar trace per model, with each model's noise floor drawn
    as a dashed horizontal reference line (a layout shape, annotated)."""
    df = _frame(rows)
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
        values = [None if pd.isna(v) else float(v) for v in part["violation_rate"]]
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
    rows: pd.DataFrame | Iterable[Mapping[str, Any]],
    proxy: str = "levenshtein",
    *,
    outcome: str = "abs_delta",
    colour_by: str = "relation_id",
) -> go.Figure:
    """Follow-up severity (x: a proxy) against the outcome (y: |Δ| or answer changed 0/1), one
    trace per ``colour_by`` value; rows missing x or y are left out."""
    if proxy not in SEVERITY_PROXIES:
        raise ValueError(f"unknown severity proxy {proxy!r}")
    df = _frame(rows)
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


def breakdown_bars(
    rows: pd.DataFrame | Iterable[Mapping[str, Any]], key: str, metric: str = "violation_rate"
) -> go.Figure:
    """``metric`` per value of a sample metadata key (x), one bar trace per model."""
    df = _frame(rows)
    fig = go.Figure()
    if not df.empty:
        for model in sorted(df["model"].unique()):
            part = df[df["model"] == model].sort_values(key)
            values = [None if pd.isna(v) else float(v) for v in part[metric]]
            fig.add_trace(go.Bar(name=str(model), x=[str(v) for v in part[key]], y=values))
    fig.update_layout(
        title=f"{metric.replace('_', ' ')} by {key}",
        barmode="group",
        xaxis={"title": key, "type": "category"},
        yaxis={"title": metric.replace("_", " ")},
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return fig


def compare_runs_bars(
    rows: pd.DataFrame | Iterable[Mapping[str, Any]], label_a: str, label_b: str
) -> go.Figure:
    """Violation rate per relation for two runs side by side (traces: run A, run B)."""
    df = _frame(rows)
    fig = go.Figure()
    if not df.empty:
        df = df.sort_values("relation_id")
        for column, label in (("a_violation_rate", label_a), ("b_violation_rate", label_b)):
            values = [None if pd.isna(v) else float(v) for v in df[column]]
            fig.add_trace(go.Bar(name=label, x=list(df["relation_id"]), y=values))
    fig.update_layout(
        title="Violation rate per relation: run A vs run B",
        barmode="group",
        yaxis={"title": "violation rate", "tickformat": ".0%"},
        xaxis={"title": "relation", "tickangle": -45},
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return fig
