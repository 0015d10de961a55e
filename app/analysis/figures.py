"""Pure DataFrame → plotly figure builders for the Analysis page and the HTML report.

No Streamlit and no database here, so the HTML report needs no UI layer: each function takes the
rows ``app.analysis.metrics`` produces (as a DataFrame or list of dicts) and returns a
``plotly.graph_objects.Figure``, so they can be unit-tested by looking at the traces. Titles,
colour scales and number formats come from the catalogue in ``app.analysis.catalogue``.

The Analysis page's heatmap, its first chart, is the exception: :func:`heatmap_spec` builds it
as a Vega-Lite spec (the same cells as :func:`heatmap`, which the HTML report keeps), because
the browser draws Streamlit's Vega chart far sooner than plotly.js.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from app.analysis.catalogue import (
    FEW_CASES,
    HEATMAP_METRICS,
    METRICS,
    SEVERITY_PROXIES,
    WIDE_INTERVAL,
    Unit,
    format_interval_percent,
    heatmap_title,
    meta_value_order,
    metric_label,
)
from app.analysis.proportions import wilson_interval

_HEIGHT_PER_ROW = 38


def _frame(rows: pd.DataFrame | Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    return rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))


def format_value(value: Any, fmt: str) -> str:
    """A cell label: the value in ``fmt`` (Python format spec), or "" when missing."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    return format(float(value), fmt)


@dataclass(frozen=True)
class HeatmapCell:
    """One model × relation cell: the value, how many cases it rests on (``n``: the denominator
    of the rate, or the observations behind a mean) and its 95% interval where one is known."""

    model: str
    relation_id: str
    value: float | None
    n: int
    low: float | None = None
    high: float | None = None

    @property
    def uncertain(self) -> bool:
        """Too few cases to read the colour at face value: the interval is wider than
        ``WIDE_INTERVAL``, or (no interval) fewer than ``FEW_CASES`` cases."""
        if self.low is not None and self.high is not None:
            return self.high - self.low > WIDE_INTERVAL
        return self.n < FEW_CASES

    def interval_text(self) -> str:
        return format_interval_percent(self.low, self.high)


def _number(row: Mapping[str, Any], key: str) -> float | None:
    value = row.get(key)
    return None if value is None or pd.isna(value) else float(value)


def _count(row: Mapping[str, Any], *keys: str) -> int:
    return sum(int(row.get(key) or 0) for key in keys)


def heatmap_cell(row: Mapping[str, Any], metric: str) -> HeatmapCell:
    """The cell of ``metric`` for one model × relation row of ``app.analysis.metrics.summarize``.

    Rates carry a Wilson 95% interval: the violation rate its own (``ci_low``/``ci_high``), the
    net rate that interval less the noise floor (clipped at 0, the floor taken as fixed), the
    inconsistency rate one over the cases with both answers. Means carry n only.
    """
    value = _number(row, metric)
    # n behind a rate is its denominator, the judged (PASS + FAIL) cases, not SKIPs and ERRORs
    judged = _count(row, "pass", "fail") if "pass" in row else _count(row, "n")
    low = high = None
    n = judged
    if metric == "violation_rate":
        low, high = _number(row, "ci_low"), _number(row, "ci_high")
    elif metric == "net_violation_rate":
        floor = _number(row, "noise_floor")
        ci_low, ci_high = _number(row, "ci_low"), _number(row, "ci_high")
        if value is not None and floor is not None and ci_low is not None and ci_high is not None:
            low, high = max(0.0, ci_low - floor), max(0.0, ci_high - floor)
    elif metric == "inconsistency_rate":
        n = _count(row, "n_answered")
        if value is not None and n:
            low, high = wilson_interval(round(value * n), n)
    elif metric == "mean_delta":
        n = _count(row, "n_observations") or judged
    if value is None:
        low = high = None
    return HeatmapCell(str(row["model"]), str(row["relation_id"]), value, n, low, high)


def heatmap_cells(
    rows: pd.DataFrame | Iterable[Mapping[str, Any]], metric: str
) -> list[HeatmapCell]:
    """Every filled cell of a heatmap of ``metric`` (rows without a value are left out)."""
    return [
        cell
        for cell in (heatmap_cell(row, metric) for row in _frame(rows).to_dict("records"))
        if cell.value is not None
    ]


# How many relation columns a heatmap cell's printed text fits in (at the page's usual width,
# ~900 px of plot): beyond the first, n and interval overlapped their neighbours; beyond the
# second, even the value did. Wider heatmaps print less; the tooltip always carries everything.
CELL_DETAIL_MAX_COLUMNS = 12
CELL_VALUE_MAX_COLUMNS = 24


def heatmap_cell_text(n_columns: int) -> str:
    """What each cell of a heatmap with ``n_columns`` relations prints: ``"value, n and 95%
    interval"``, ``"value"`` or ``""`` (nothing: hover a cell)."""
    if n_columns <= CELL_DETAIL_MAX_COLUMNS:
        return "value, n and 95% interval"
    return "value" if n_columns <= CELL_VALUE_MAX_COLUMNS else ""


def _cell_text(cell: HeatmapCell, fmt: str) -> str:
    """What a cell can print: the value, then n, then the interval, one short line each (narrow
    enough for a cell on a 390 px phone screen)."""
    lines = [f"<b>{format_value(cell.value, fmt)}</b>", f"n={cell.n:,}"]
    if cell.interval_text():
        lines.append(cell.interval_text())
    return "<br>".join(lines)


def _printed(text: str, printed: str) -> str:
    """The part of a cell's text (:func:`_cell_text`) that ``heatmap_cell_text`` leaves room for."""
    if printed.startswith("value,"):
        return text
    return text.split("<br>")[0] if printed else ""


def heatmap(
    rows: pd.DataFrame | Iterable[Mapping[str, Any]],
    metric: str = "violation_rate",
    *,
    title: str | None = None,
    relations_down: bool = False,
) -> go.Figure:
    """Model (y) × relation (x) heatmap of ``metric``; every cell prints its value, its n and
    its 95% interval (where one is known), as far as the number of columns leaves room
    (:func:`heatmap_cell_text`), and its tooltip always shows them. ``relations_down`` turns it
    a quarter: relations down the y axis, one row each, models across (for a page of fixed
    width, such as the HTML report, with more relations than fit across it).

    Cells whose interval is wide (few cases) are faded behind a translucent white layer with a
    dotted outline, so 100% from 4 cases does not read like 47% from 60. Missing cells stay
    empty (z None, text ""). ``customdata`` holds [model, relation_id, n, interval] per cell; a
    second, invisible marker trace ("cells", one point per filled cell, same customdata) makes
    cells clickable in Streamlit. Models and relations are sorted by name.
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
    models = sorted(df["model"].astype(str).unique())
    relations = sorted(df["relation_id"].astype(str).unique())
    cells = {(c.model, c.relation_id): c for c in heatmap_cells(df, metric)}
    # The grid's rows and columns: models × relations, or relations × models turned.
    across, down = (models, relations) if relations_down else (relations, models)

    def cell_at(row: str, column: str) -> HeatmapCell | None:
        return cells.get((column, row) if relations_down else (row, column))

    z, text, custom = [], [], []
    for row in down:
        z_row, text_row, custom_row = [], [], []
        for column in across:
            cell = cell_at(row, column)
            model, relation_id = (column, row) if relations_down else (row, column)
            z_row.append(cell.value if cell else None)
            text_row.append(_cell_text(cell, fmt) if cell else "")
            custom_row.append(
                [model, relation_id, cell.n if cell else 0, cell.interval_text() if cell else ""]
            )
        z.append(z_row)
        text.append(text_row)
        custom.append(custom_row)
    interval_line = (
        "95% interval %{customdata[3]}<br>"
        if any(c.interval_text() for c in cells.values())
        else ""
    )
    hover = (
        "model %{customdata[0]}<br>relation %{customdata[1]}<br>"
        + label
        + " %{hovertext}<br>n = %{customdata[2]}<br>"
        + interval_line
        + "<extra></extra>"
    )
    percent = scale.value_range == (0.0, 1.0) and fmt.endswith("%")
    colour_bar = {
        "title": {"text": label, "side": "top"},
        "orientation": "h",
        "y": 1.0,
        "yanchor": "bottom",
        "yref": "paper",
        "x": 0.5,
        "xanchor": "center",
        "len": 1.0,
        "lenmode": "fraction",
        "thickness": 12,
        "tickformat": ".0%" if percent else None,
    }
    if relations_down:
        # the models are named on top: the colour bar stands upright beside the first rows
        colour_bar.update(
            title={"text": label, "side": "right"},
            orientation="v",
            x=1.02,
            xanchor="left",
            y=1.0,
            yanchor="top",
            len=320,
            lenmode="pixels",
        )
    printed = heatmap_cell_text(len(across))
    trace = go.Heatmap(
        z=z,
        x=across,
        y=down,
        text=[[_printed(t, printed) for t in row] for row in text],
        texttemplate="%{text}",
        customdata=custom,
        colorscale=scale.colours,
        hoverinfo="skip",  # the click layer below carries the tooltip
        colorbar={k: v for k, v in colour_bar.items() if v is not None},
        hoverongaps=False,
        textfont={"size": 11},
        xgap=2,
        ygap=2,
    )
    if scale.value_range is not None:
        trace.update(zmin=scale.value_range[0], zmax=scale.value_range[1])
    if scale.midpoint is not None:
        trace.update(zmid=scale.midpoint)
    fig.add_trace(trace)
    # Fade uncertain cells: a translucent white square over the colour, outlined dotted.
    for y, row in enumerate(down):
        for x, column in enumerate(across):
            cell = cell_at(row, column)
            if cell is not None and cell.uncertain:
                fig.add_shape(
                    type="rect",
                    x0=x - 0.5,
                    x1=x + 0.5,
                    y0=y - 0.5,
                    y1=y + 0.5,
                    fillcolor="rgba(255,255,255,0.5)",
                    line={"color": "#888", "width": 1, "dash": "dot"},
                    layer="above",
                    name="uncertain",
                )
    # Streamlit reports no selection for heatmap traces (streamlit/streamlit#8760), so every
    # filled cell also gets an invisible square marker: clicking it selects the point, whose
    # customdata names the cell.
    filled = [(i, j) for i in range(len(down)) for j in range(len(across)) if z[i][j] is not None]
    fig.add_trace(
        go.Scatter(
            name="cells",
            x=[across[j] for _, j in filled],
            y=[down[i] for i, _ in filled],
            customdata=[custom[i][j] for i, j in filled],
            text=[text[i][j] for i, j in filled],
            hovertext=[format_value(z[i][j], fmt) for i, j in filled],
            mode="markers",
            marker={"symbol": "square", "size": 28, "color": "rgba(0,0,0,0)"},
            hovertemplate=hover,
            showlegend=False,
        )
    )
    across_title, down_title = ("model", "relation") if relations_down else ("relation", "model")
    # A model row is tall (the dashboard's cells are near square); a relation row holds the
    # three lines of a cell's text when they are printed, else one.
    if not relations_down:
        row_px = 2 * _HEIGHT_PER_ROW
    else:
        row_px = 48 if printed.startswith("value,") else 26
    fig.update_layout(
        title=title or label,
        xaxis={
            "title": across_title,
            # turned, the chart is tall: the models are named on top, where reading starts
            "side": "top" if relations_down else "bottom",
            "tickangle": 0 if relations_down else -45,
            "type": "category",
            # every column named (plotly otherwise skips every other one on wide heatmaps)
            "tickmode": "linear",
            "dtick": 1,
            "range": [-0.5, len(across) - 0.5],
            "showgrid": False,
            "automargin": True,
        },
        yaxis={
            "title": down_title,
            "type": "category",
            # first row on top; ranges fixed to the cells (the click layer's markers made
            # autorange pad a blank band around them)
            "range": [len(down) - 0.5, -0.5],
            "showgrid": False,
            "automargin": True,
            "tickmode": "linear",
            "dtick": 1,
        },
        plot_bgcolor="white",  # missing cells show as blank, not as a coloured value
        height=max(300, 210 + row_px * len(down)),
        margin={"l": 10, "r": 10, "t": 110, "b": 10},
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


def compare_runs_bars(
    rows: pd.DataFrame | Iterable[Mapping[str, Any]], label_a: str, label_b: str
) -> go.Figure:
    """Violation rate per relation for two runs side by side (traces: run A, run B)."""
    df = _frame(rows)
    fig = go.Figure()
    if not df.empty:
        df = df.sort_values("relation_id")
        runs = (("a_violation_rate", label_a, "#7f8c9d"), ("b_violation_rate", label_b, "#ef553b"))
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


# ---------------------------------------------------------------- Vega-Lite heatmap (Analysis)

HEATMAP_SELECTION = "cell"
"""The Vega-Lite heatmap's point-selection parameter: a click selects one model × relation."""

# Plotly's named scales (``app.analysis.catalogue``) → the Vega scheme drawing the same colours.
_VEGA_SCHEMES = {
    "Reds": "reds",
    "Blues": "blues",
    "Greens": "greens",
    "Oranges": "oranges",
    "Purples": "purples",
    "RdBu": "redblue",
}
# Cell ink turns white where the colour is dark: past this share of a sequential scale, or of
# the longer half of a diverging one (counted from its middle).
_DARK_FROM = 0.6


def _dark(value: float, low: float, high: float, midpoint: float | None) -> bool:
    if midpoint is None:
        return high > low and (value - low) / (high - low) > _DARK_FROM
    half = max(abs(low - midpoint), abs(high - midpoint))
    return half > 0 and abs(value - midpoint) / half > _DARK_FROM


def heatmap_spec(
    rows: pd.DataFrame | Iterable[Mapping[str, Any]],
    metric: str = "violation_rate",
) -> dict[str, Any]:
    """The Analysis heatmap as a Vega-Lite spec (drawn by Streamlit's own Vega chunk, far
    lighter than plotly.js): model (y) × relation (x), coloured by ``metric`` with its scale
    from ``app.analysis.catalogue``; each cell prints its value, n and 95% interval, as far as the number
    of relation columns leaves room (:func:`heatmap_cell_text`), and its tooltip always shows
    them; cells resting on few cases are faded with a dotted outline, like :func:`heatmap`.

    A click selects a cell through the point selection :data:`HEATMAP_SELECTION` over
    ``model`` and ``relation_id``. Models and relations are sorted by name; rows without a
    value leave their cell blank.
    """
    label = heatmap_title(metric)  # raises ValueError for a metric a heatmap cannot show
    scale = HEATMAP_METRICS[metric].heatmap
    assert scale is not None
    fmt = scale.number_format
    df = _frame(rows)
    cells = heatmap_cells(df, metric) if not df.empty else []
    models = sorted(df["model"].astype(str).unique()) if not df.empty else []
    relations = sorted(df["relation_id"].astype(str).unique()) if not df.empty else []
    values = [c.value for c in cells if c.value is not None]
    low, high = scale.value_range or (min(values, default=0.0), max(values, default=1.0))
    data = []
    for cell in cells:
        assert cell.value is not None
        dark = _dark(cell.value, low, high, scale.midpoint)
        detail = "\n".join([f"n={cell.n:,}", cell.interval_text()]).strip()
        data.append(
            {
                "model": cell.model,
                "relation_id": cell.relation_id,
                "value": cell.value,
                "label": format_value(cell.value, fmt),
                "detail": detail,
                "n": cell.n,
                "interval": cell.interval_text(),
                "uncertain": cell.uncertain,
                "ink": "white" if dark and not cell.uncertain else "black",
            }
        )
    colour_scale: dict[str, Any] = {"scheme": _VEGA_SCHEMES.get(scale.colours, "reds")}
    if scale.value_range is not None:
        colour_scale["domain"] = list(scale.value_range)
    if scale.midpoint is not None:
        colour_scale["domainMid"] = scale.midpoint
    percent = scale.value_range == (0.0, 1.0) and fmt.endswith("%")
    tooltip = [
        {"field": "model", "title": "model"},
        {"field": "relation_id", "title": "relation"},
        {"field": "label", "title": label},
        {"field": "n", "title": "n", "format": ","},
    ]
    if any(c.interval_text() for c in cells):
        tooltip.append({"field": "interval", "title": "95% interval"})
    legend: dict[str, Any] = {"orient": "top", "direction": "horizontal", "gradientLength": 320}
    if percent:
        legend["format"] = ".0%"
    ink = {"condition": {"test": "datum.ink == 'white'", "value": "white"}, "value": "black"}
    text_base = {"align": "center", "baseline": "middle"}
    printed = heatmap_cell_text(len(relations))
    text_layers = []
    if printed:
        text_layers.append(
            {
                "mark": {**text_base, "type": "text", "fontWeight": "bold", "dy": -9},
                "encoding": {"text": {"field": "label"}, "color": ink},
            }
        )
    if printed.startswith("value,"):
        text_layers.append(
            {
                "mark": {**text_base, "type": "text", "fontSize": 10, "dy": 8, "lineBreak": "\n"},
                "encoding": {"text": {"field": "detail"}, "color": ink},
            }
        )
    return {
        "title": label,
        "data": {"values": data},
        "height": {"step": 2 * _HEIGHT_PER_ROW},
        "encoding": {
            "x": {
                "field": "relation_id",
                "type": "nominal",
                "sort": relations,
                "title": "relation",
                # every relation named: Vega otherwise drops labels whose rotated boxes touch
                # (half of them at 10 columns), though the slanted texts do not overlap
                "axis": {"labelAngle": -45, "labelLimit": 240, "labelOverlap": False},
            },
            "y": {
                "field": "model",
                "type": "nominal",
                "sort": models,
                "title": "model",
                # model names are long ("smollm2-135m-instruct"): Vega cut them at 180 px
                "axis": {"labelLimit": 320},
            },
            "tooltip": tooltip,
        },
        "layer": [
            {
                "params": [
                    {
                        "name": HEATMAP_SELECTION,
                        "select": {
                            "type": "point",
                            "fields": ["model", "relation_id"],
                            "on": "click",
                            "clear": "dblclick",
                        },
                    }
                ],
                "mark": {"type": "rect", "stroke": "black"},
                "encoding": {
                    "color": {
                        "field": "value",
                        "type": "quantitative",
                        "title": label,
                        "scale": colour_scale,
                        "legend": legend,
                    },
                    # the selected cell is outlined
                    "strokeWidth": {
                        "condition": {"param": HEATMAP_SELECTION, "empty": False, "value": 3},
                        "value": 0,
                    },
                },
            },
            {
                # cells resting on few cases: faded behind translucent white, outlined dotted
                "transform": [{"filter": "datum.uncertain"}],
                "mark": {
                    "type": "rect",
                    "fill": "white",
                    "fillOpacity": 0.5,
                    "stroke": "#888",
                    "strokeWidth": 1,
                    "strokeDash": [2, 2],
                },
            },
            *text_layers,
        ],
        "config": {"view": {"stroke": "transparent"}, "axis": {"grid": False}},
        # SVG: cells are DOM elements (the browser tests find them), and a few hundred is cheap.
        "usermeta": {"embedOptions": {"renderer": "svg"}},
    }
