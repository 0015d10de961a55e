"""The model × relation heatmap, drawn two ways from one grid of cells
(:func:`app.analysis.heatmap_grid.heatmap_grid`):

- :func:`heatmap_spec`, a Vega-Lite spec, for the Analysis page: the browser draws Streamlit's
  Vega chart far sooner than plotly.js, and this is the page's first chart; a click selects a
  cell (:data:`HEATMAP_SELECTION`);
- :func:`heatmap`, a plotly figure, for the HTML report, which embeds plotly.js for its other
  charts and can turn the grid a quarter (relations down the page).

Both print in each cell its value, n and interval as far as the number of columns leaves room
(:func:`~app.analysis.heatmap_grid.heatmap_cell_text`), show them all in the tooltip, and fade
cells resting on few cases.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from app.analysis.catalogue.definitions import VIOLATION_RATE
from app.analysis.catalogue.formats import format_value
from app.analysis.figures import Rows
from app.analysis.heatmap_grid import (
    HeatmapCell,
    HeatmapGrid,
    heatmap_cell_text,
    heatmap_grid,
    prints_detail,
)

# Pixels per model row, doubled: the dashboard's cells are near square.
_HEIGHT_PER_ROW = 38

# ---------------------------------------------------------------- plotly (the HTML report)


def _cell_text(cell: HeatmapCell, fmt: str) -> str:
    """What a cell can print: the value, then n, then the interval, one short line each (narrow
    enough for a cell on a 390 px phone screen)."""
    lines = [f"<b>{format_value(cell.value, fmt)}</b>", f"n={cell.n:,}"]
    if cell.interval_text():
        lines.append(cell.interval_text())
    return "<br>".join(lines)


def _printed(text: str, printed: str) -> str:
    """The part of a cell's text (:func:`_cell_text`) that ``heatmap_cell_text`` leaves room for."""
    if prints_detail(printed):
        return text
    return text.split("<br>")[0] if printed else ""


@dataclass(frozen=True)
class _Matrix:
    """The grid as plotly's rows (``down``) × columns (``across``): per position the value, the
    cell's full text and its customdata [model, relation_id, n, interval]."""

    across: list[str]
    down: list[str]
    z: list[list[float | None]]
    text: list[list[str]]
    custom: list[list[list[Any]]]
    uncertain: list[tuple[int, int]]  # (row, column) of the cells resting on few cases


def _matrix(grid: HeatmapGrid, relations_down: bool) -> _Matrix:
    cells = grid.cells_by_position()
    across, down = (
        (grid.models, grid.relations) if relations_down else (grid.relations, grid.models)
    )
    z, text, custom, uncertain = [], [], [], []
    for y, row in enumerate(down):
        z_row, text_row, custom_row = [], [], []
        for x, column in enumerate(across):
            model, relation_id = (column, row) if relations_down else (row, column)
            cell = cells.get((model, relation_id))
            z_row.append(cell.value if cell else None)
            text_row.append(_cell_text(cell, grid.number_format) if cell else "")
            custom_row.append(
                [model, relation_id, cell.n if cell else 0, cell.interval_text() if cell else ""]
            )
            if cell is not None and cell.uncertain:
                uncertain.append((y, x))
        z.append(z_row)
        text.append(text_row)
        custom.append(custom_row)
    return _Matrix(across, down, z, text, custom, uncertain)


def _colour_bar(grid: HeatmapGrid, relations_down: bool) -> dict[str, Any]:
    bar = {
        "title": {"text": grid.label, "side": "top"},
        "orientation": "h",
        "y": 1.0,
        "yanchor": "bottom",
        "yref": "paper",
        "x": 0.5,
        "xanchor": "center",
        "len": 1.0,
        "lenmode": "fraction",
        "thickness": 12,
        "tickformat": ".0%" if grid.percent else None,
    }
    if relations_down:
        # the models are named on top: the colour bar stands upright beside the first rows
        bar.update(
            title={"text": grid.label, "side": "right"},
            orientation="v",
            x=1.02,
            xanchor="left",
            y=1.0,
            yanchor="top",
            len=320,
            lenmode="pixels",
        )
    return {key: value for key, value in bar.items() if value is not None}


def _colour_trace(grid: HeatmapGrid, matrix: _Matrix, relations_down: bool) -> go.Heatmap:
    printed = heatmap_cell_text(len(matrix.across))
    trace = go.Heatmap(
        z=matrix.z,
        x=matrix.across,
        y=matrix.down,
        text=[[_printed(t, printed) for t in row] for row in matrix.text],
        texttemplate="%{text}",
        customdata=matrix.custom,
        colorscale=grid.scale.colours,
        hoverinfo="skip",  # the tooltip layer carries the tooltip
        colorbar=_colour_bar(grid, relations_down),
        hoverongaps=False,
        textfont={"size": 11},
        xgap=2,
        ygap=2,
    )
    if grid.scale.value_range is not None:
        trace.update(zmin=grid.scale.value_range[0], zmax=grid.scale.value_range[1])
    if grid.scale.midpoint is not None:
        trace.update(zmid=grid.scale.midpoint)
    return trace


def _fade_uncertain(fig: go.Figure, matrix: _Matrix) -> None:
    """A translucent white square, outlined dotted, over each cell resting on few cases."""
    for y, x in matrix.uncertain:
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


def _tooltip_layer(grid: HeatmapGrid, matrix: _Matrix) -> go.Scatter:
    """The tooltips: an invisible square marker ("cells") per filled cell, whose customdata
    names the cell."""
    hover = (
        "model %{customdata[0]}<br>relation %{customdata[1]}<br>"
        + grid.label
        + " %{hovertext}<br>n = %{customdata[2]}<br>"
        + ("95% interval %{customdata[3]}<br>" if grid.has_intervals else "")
        + "<extra></extra>"
    )
    filled = [
        (i, j)
        for i in range(len(matrix.down))
        for j in range(len(matrix.across))
        if matrix.z[i][j] is not None
    ]
    return go.Scatter(
        name="cells",
        x=[matrix.across[j] for _, j in filled],
        y=[matrix.down[i] for i, _ in filled],
        customdata=[matrix.custom[i][j] for i, j in filled],
        text=[matrix.text[i][j] for i, j in filled],
        hovertext=[format_value(matrix.z[i][j], grid.number_format) for i, j in filled],
        mode="markers",
        marker={"symbol": "square", "size": 28, "color": "rgba(0,0,0,0)"},
        hovertemplate=hover,
        showlegend=False,
    )


def _lay_out(fig: go.Figure, matrix: _Matrix, relations_down: bool, title: str) -> None:
    across_title, down_title = ("model", "relation") if relations_down else ("relation", "model")
    # A model row is tall (the dashboard's cells are near square); a relation row holds the
    # three lines of a cell's text when they are printed, else one.
    if not relations_down:
        row_px = 2 * _HEIGHT_PER_ROW
    else:
        row_px = 48 if prints_detail(heatmap_cell_text(len(matrix.across))) else 26
    fig.update_layout(
        title=title,
        xaxis={
            "title": across_title,
            # turned, the chart is tall: the models are named on top, where reading starts
            "side": "top" if relations_down else "bottom",
            "tickangle": 0 if relations_down else -45,
            "type": "category",
            # every column named (plotly otherwise skips every other one on wide heatmaps)
            "tickmode": "linear",
            "dtick": 1,
            "range": [-0.5, len(matrix.across) - 0.5],
            "showgrid": False,
            "automargin": True,
        },
        yaxis={
            "title": down_title,
            "type": "category",
            # first row on top; ranges fixed to the cells (the tooltip layer's markers made
            # autorange pad a blank band around them)
            "range": [len(matrix.down) - 0.5, -0.5],
            "showgrid": False,
            "automargin": True,
            "tickmode": "linear",
            "dtick": 1,
        },
        plot_bgcolor="white",  # missing cells show as blank, not as a coloured value
        height=max(300, 210 + row_px * len(matrix.down)),
        margin={"l": 10, "r": 10, "t": 110, "b": 10},
    )


def heatmap(
    rows: Rows,
    metric: str = VIOLATION_RATE,
    *,
    title: str | None = None,
    relations_down: bool = False,
) -> go.Figure:
    """Model (y) × relation (x) heatmap of ``metric`` as a plotly figure (the HTML report's).
    ``relations_down`` turns it a quarter: relations down the y axis, one row each, models
    across (for a page of fixed width with more relations than fit across it).

    Missing cells stay empty (z None, text ""). ``customdata`` holds [model, relation_id, n,
    interval] per cell; the tooltips come from a second, invisible marker trace ("cells", one
    point per filled cell, same customdata). Cells resting on few cases are faded behind a
    translucent white layer with a dotted outline.
    """
    grid = heatmap_grid(rows, metric)
    fig = go.Figure()
    if not grid.models:
        fig.update_layout(title=title or grid.label)
        return fig
    matrix = _matrix(grid, relations_down)
    fig.add_trace(_colour_trace(grid, matrix, relations_down))
    _fade_uncertain(fig, matrix)
    fig.add_trace(_tooltip_layer(grid, matrix))
    _lay_out(fig, matrix, relations_down, title or grid.label)
    return fig


# ---------------------------------------------------------------- Vega-Lite (the Analysis page)

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


def _spec_values(grid: HeatmapGrid) -> list[dict[str, Any]]:
    """One data row per filled cell, with the ink its text is printed in."""
    values = [c.value for c in grid.cells if c.value is not None]
    low, high = grid.scale.value_range or (min(values, default=0.0), max(values, default=1.0))
    data = []
    for cell in grid.cells:
        assert cell.value is not None
        dark = _dark(cell.value, low, high, grid.scale.midpoint)
        data.append(
            {
                "model": cell.model,
                "relation_id": cell.relation_id,
                "value": cell.value,
                "label": format_value(cell.value, grid.number_format),
                "detail": "\n".join([f"n={cell.n:,}", cell.interval_text()]).strip(),
                "n": cell.n,
                "interval": cell.interval_text(),
                "uncertain": cell.uncertain,
                "ink": "white" if dark and not cell.uncertain else "black",
            }
        )
    return data


def _spec_axes(grid: HeatmapGrid) -> dict[str, Any]:
    tooltip = [
        {"field": "model", "title": "model"},
        {"field": "relation_id", "title": "relation"},
        {"field": "label", "title": grid.label},
        {"field": "n", "title": "n", "format": ","},
    ]
    if grid.has_intervals:
        tooltip.append({"field": "interval", "title": "95% interval"})
    return {
        "x": {
            "field": "relation_id",
            "type": "nominal",
            "sort": grid.relations,
            "title": "relation",
            # every relation named: Vega otherwise drops labels whose rotated boxes touch
            # (half of them at 10 columns), though the slanted texts do not overlap
            "axis": {"labelAngle": -45, "labelLimit": 240, "labelOverlap": False},
        },
        "y": {
            "field": "model",
            "type": "nominal",
            "sort": grid.models,
            "title": "model",
            # model names are long ("smollm2-135m-instruct"): Vega cut them at 180 px
            "axis": {"labelLimit": 320},
        },
        "tooltip": tooltip,
    }


def _spec_colour_layer(grid: HeatmapGrid) -> dict[str, Any]:
    """The coloured cells, clickable: the selected cell is outlined."""
    colour_scale: dict[str, Any] = {"scheme": _VEGA_SCHEMES.get(grid.scale.colours, "reds")}
    if grid.scale.value_range is not None:
        colour_scale["domain"] = list(grid.scale.value_range)
    if grid.scale.midpoint is not None:
        colour_scale["domainMid"] = grid.scale.midpoint
    legend: dict[str, Any] = {"orient": "top", "direction": "horizontal", "gradientLength": 320}
    if grid.percent:
        legend["format"] = ".0%"
    select = {
        "type": "point",
        "fields": ["model", "relation_id"],
        "on": "click",
        "clear": "dblclick",
    }
    return {
        "params": [{"name": HEATMAP_SELECTION, "select": select}],
        "mark": {"type": "rect", "stroke": "black"},
        "encoding": {
            "color": {
                "field": "value",
                "type": "quantitative",
                "title": grid.label,
                "scale": colour_scale,
                "legend": legend,
            },
            "strokeWidth": {
                "condition": {"param": HEATMAP_SELECTION, "empty": False, "value": 3},
                "value": 0,
            },
        },
    }


def _spec_faded_layer() -> dict[str, Any]:
    """Cells resting on few cases: faded behind translucent white, outlined dotted."""
    return {
        "transform": [{"filter": "datum.uncertain"}],
        "mark": {
            "type": "rect",
            "fill": "white",
            "fillOpacity": 0.5,
            "stroke": "#888",
            "strokeWidth": 1,
            "strokeDash": [2, 2],
        },
    }


def _spec_text_layers(printed: str) -> list[dict[str, Any]]:
    """The value in bold, then n and the interval under it, as far as ``printed`` says."""
    ink = {"condition": {"test": "datum.ink == 'white'", "value": "white"}, "value": "black"}
    text_base = {"align": "center", "baseline": "middle"}
    layers = []
    if printed:
        layers.append(
            {
                "mark": {**text_base, "type": "text", "fontWeight": "bold", "dy": -9},
                "encoding": {"text": {"field": "label"}, "color": ink},
            }
        )
    if prints_detail(printed):
        layers.append(
            {
                "mark": {**text_base, "type": "text", "fontSize": 10, "dy": 8, "lineBreak": "\n"},
                "encoding": {"text": {"field": "detail"}, "color": ink},
            }
        )
    return layers


def heatmap_spec(rows: Rows, metric: str = VIOLATION_RATE) -> dict[str, Any]:
    """Model (y) × relation (x) heatmap of ``metric`` as a Vega-Lite spec (the Analysis page's,
    drawn by Streamlit's own Vega chunk, far lighter than plotly.js).

    A click selects a cell through the point selection :data:`HEATMAP_SELECTION` over
    ``model`` and ``relation_id``. Rows without a value leave their cell blank.
    """
    grid = heatmap_grid(rows, metric)
    return {
        "title": grid.label,
        "data": {"values": _spec_values(grid)},
        "height": {"step": 2 * _HEIGHT_PER_ROW},
        "encoding": _spec_axes(grid),
        "layer": [
            _spec_colour_layer(grid),
            _spec_faded_layer(),
            *_spec_text_layers(heatmap_cell_text(len(grid.relations))),
        ],
        "config": {"view": {"stroke": "transparent"}, "axis": {"grid": False}},
        # SVG: cells are DOM elements (the browser tests find them), and a few hundred is cheap.
        "usermeta": {"embedOptions": {"renderer": "svg"}},
    }
