"""The model × relation heatmap, drawn two ways from one grid of cells
(:func:`app.analysis.heatmap_grid.heatmap_grid`):

- :func:`heatmap_spec`, a Vega-Lite spec, for the Analysis page: the browser draws Streamlit's
  Vega chart far sooner than plotly.js, and this is the page's first chart; a click selects a
  cell (:data:`HEATMAP_SELECTION`);
- :func:`heatmap`, a plotly figure, for the HTML report, which embeds plotly.js for its other
  charts and can turn the grid a quarter (relations down the page).

Both print in each cell its value, n and interval as far as the number of columns leaves room
(:func:`~app.analysis.heatmap_grid.heatmap_cell_text`), show them all in the tooltip, colour a
cell by its value alone (``app.analysis.heatmap_colours``: the same colour on the page and in the
report, text in the ink that contrasts with it) and outline dashed the cells resting on few
cases, with a legend entry saying so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from app.analysis.catalogue.definitions import VIOLATION_RATE
from app.analysis.catalogue.formats import format_value
from app.analysis.figures import Rows, wrapped_name
from app.analysis.heatmap_colours import DARK_INK, LIGHT_INK, ink_for
from app.analysis.heatmap_grid import (
    FEW_CASES_LEGEND,
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
    cell's full text and its customdata [model, relation_id, n, interval]; and per filled cell
    (in row order) its position, whether it rests on few cases and the ink of its text."""

    across: list[str]
    down: list[str]
    z: list[list[float | None]]
    text: list[list[str]]
    custom: list[list[list[Any]]]
    filled: list[tuple[int, int]]  # (row, column)
    uncertain: list[tuple[int, int]]  # (row, column) of the cells resting on few cases
    ink: dict[tuple[int, int], str]


def _matrix(grid: HeatmapGrid, relations_down: bool) -> _Matrix:
    cells = grid.cells_by_position()
    colours = grid.colours()
    across, down = (
        (grid.models, grid.relations) if relations_down else (grid.relations, grid.models)
    )
    z, text, custom, filled, uncertain, ink = [], [], [], [], [], {}
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
            if cell is not None and cell.value is not None:
                filled.append((y, x))
                ink[(y, x)] = ink_for(colours.fill(cell.value))
                if cell.uncertain:
                    uncertain.append((y, x))
        z.append(z_row)
        text.append(text_row)
        custom.append(custom_row)
    return _Matrix(across, down, z, text, custom, filled, uncertain, ink)


# The colour bar's length: the gradient reads as well at 240 px as across the whole plot, and
# fits a phone's screen.
_COLOUR_BAR_PX = 240


def _colour_bar(grid: HeatmapGrid, relations_down: bool) -> dict[str, Any]:
    """A horizontal colour bar from the figure's left edge, not the cells': the report scrolls
    a heatmap sideways on a phone, and a bar starting after the names ran off a 390 px screen.
    Placed in the figure's own frame ("container"): placed on the plot's, plotly widened the
    left margin to hold it. Turned (the models named on top), it sits at the foot, titled under
    the bar; else under the figure's title, which names the metric (the report's 70 px top
    margin holds no second title)."""
    bar: dict[str, Any] = {
        "orientation": "h",
        "xref": "container",
        "x": 0,
        "xanchor": "left",
        "xpad": 10,
        "len": _COLOUR_BAR_PX,
        "lenmode": "pixels",
        "thickness": 12,
        "yref": "container",
    }
    if relations_down:
        bar.update(title={"text": grid.label, "side": "bottom"}, y=0, yanchor="bottom", ypad=30)
    else:
        bar.update(y=1, yanchor="top", ypad=34)
    if grid.percent:
        bar["tickformat"] = ".0%"
    return bar


def _colour_trace(grid: HeatmapGrid, matrix: _Matrix, relations_down: bool) -> go.Heatmap:
    """The coloured cells: the colour follows the value alone (the grid's ramp, as explicit
    stops so the page and the report agree); the text is printed by :func:`_label_layer`."""
    colours = grid.colours()
    printed = heatmap_cell_text(len(matrix.across))
    return go.Heatmap(
        z=matrix.z,
        x=matrix.across,
        y=matrix.down,
        text=[[_printed(t, printed) for t in row] for row in matrix.text],
        customdata=matrix.custom,
        colorscale=colours.plotly_scale(),
        zmin=colours.low,
        zmax=colours.high,
        hoverinfo="skip",  # the tooltip layer carries the tooltip
        colorbar=_colour_bar(grid, relations_down),
        hoverongaps=False,
        xgap=2,
        ygap=2,
    )


def _label_layer(grid: HeatmapGrid, matrix: _Matrix) -> go.Scatter:
    """Each filled cell's printed text ("labels"), black on light cells and white on dark ones
    (a heatmap trace prints all its text in one colour)."""
    printed = heatmap_cell_text(len(matrix.across))
    return go.Scatter(
        name="labels",
        x=[matrix.across[x] for _, x in matrix.filled],
        y=[matrix.down[y] for y, _ in matrix.filled],
        text=[_printed(matrix.text[y][x], printed) for y, x in matrix.filled],
        mode="text",
        textfont={"size": 11, "color": [matrix.ink[position] for position in matrix.filled]},
        hoverinfo="skip",
        showlegend=False,
    )


def _outline_uncertain(fig: go.Figure, matrix: _Matrix) -> None:
    """A dashed outline, in the cell's ink, just inside each cell resting on few cases; and its
    legend entry (a dashed line named :data:`FEW_CASES_LEGEND`)."""
    inset = 0.44
    for y, x in matrix.uncertain:
        fig.add_shape(
            type="rect",
            x0=x - inset,
            x1=x + inset,
            y0=y - inset,
            y1=y + inset,
            line={"color": matrix.ink[(y, x)], "width": 1.5, "dash": "dash"},
            layer="above",
            name="uncertain",
        )
    if matrix.uncertain:
        fig.add_trace(
            go.Scatter(
                name=FEW_CASES_LEGEND,
                x=[None],
                y=[None],
                mode="lines",
                line={"color": "#333", "width": 1.5, "dash": "dash"},
                hoverinfo="skip",
                showlegend=True,
            )
        )
        # At the figure's foot, from its left edge (in view on a phone, the heatmap scrolled
        # to its start).
        fig.update_layout(
            showlegend=True,
            legend={"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom",
                    "xref": "container", "x": 0, "xanchor": "left"},
        )  # fmt: skip


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


def _model_ticks(models: list[str]) -> dict[str, Any]:
    return {"tickmode": "array", "tickvals": models, "ticktext": [wrapped_name(m) for m in models]}


def _lay_out(fig: go.Figure, matrix: _Matrix, relations_down: bool, title: str) -> None:
    across_title, down_title = ("model", "relation") if relations_down else ("relation", "model")
    # A model row is tall (the dashboard's cells are near square); a relation row holds the
    # three lines of a cell's text when they are printed, else one.
    if not relations_down:
        row_px = 2 * _HEIGHT_PER_ROW
    else:
        row_px = 48 if prints_detail(heatmap_cell_text(len(matrix.across))) else 26
    fig.update_layout(
        # at the figure's top edge: the colour bar stands under it (see _colour_bar)
        title={"text": title, "yref": "container", "y": 1, "yanchor": "top", "pad": {"t": 8}},
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
            **(_model_ticks(matrix.across) if relations_down else {}),
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
            **({} if relations_down else _model_ticks(matrix.down)),
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
    interval] per cell; the printed text comes from a text trace ("labels", per cell in the ink
    that contrasts with its colour), the tooltips from an invisible marker trace ("cells", one
    point per filled cell, same customdata), both after it. Cells resting on few cases keep their
    colour and get a dashed outline, named in a legend entry.
    """
    grid = heatmap_grid(rows, metric)
    fig = go.Figure()
    if not grid.models:
        fig.update_layout(title=title or grid.label)
        return fig
    matrix = _matrix(grid, relations_down)
    fig.add_trace(_colour_trace(grid, matrix, relations_down))
    fig.add_trace(_label_layer(grid, matrix))
    _outline_uncertain(fig, matrix)
    fig.add_trace(_tooltip_layer(grid, matrix))
    _lay_out(fig, matrix, relations_down, title or grid.label)
    return fig


# ---------------------------------------------------------------- Vega-Lite (the Analysis page)

HEATMAP_SELECTION = "cell"
"""The Vega-Lite heatmap's point-selection parameter: a click selects one model × relation."""

# The page's heatmap is never narrower than its model names plus this much per relation column:
# on a phone (390 px) it scrolls sideways instead of squeezing cells to ~20 px, where the
# numbers overlapped. Per column: room for "51–100%" when n and interval are printed, for
# "100%" when only the value is, a thin stripe when nothing is.
_MODEL_LABEL_PX = 180
_COLUMN_MIN_PX = {"detail": 56, "value": 44, "": 16}


# The page heatmap's height beyond its rows: title and slanted relation names (the legend is
# the page's own, above the chart).
_FRAME_PX = 250


def heatmap_min_width(n_relations: int) -> int:
    """The least width in pixels the page's heatmap of ``n_relations`` columns is drawn at
    (model names, axis title and each column at its readable minimum)."""
    printed = heatmap_cell_text(n_relations)
    column = _COLUMN_MIN_PX["detail" if prints_detail(printed) else printed and "value"]
    return _MODEL_LABEL_PX + 40 + n_relations * column


def _spec_values(grid: HeatmapGrid) -> list[dict[str, Any]]:
    """One data row per filled cell, with the ink its text is printed in (black or white,
    whichever contrasts more with the cell's colour: ``app.analysis.heatmap_colours``)."""
    colours = grid.colours()
    data = []
    for cell in grid.cells:
        assert cell.value is not None
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
                "ink": ink_for(colours.fill(cell.value)),
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
    # a thin white gap between cells, so a dashed outline reads as its own cell's
    gap = {"paddingInner": 0.04}
    return {
        "x": {
            "field": "relation_id",
            "type": "nominal",
            "sort": grid.relations,
            "title": "relation",
            "scale": gap,
            # every relation named: Vega otherwise drops labels whose rotated boxes touch
            # (half of them at 10 columns), though the slanted texts do not overlap
            "axis": {"labelAngle": -45, "labelLimit": 240, "labelOverlap": False},
        },
        "y": {
            "field": "model",
            "type": "nominal",
            "sort": grid.models,
            "title": "model",
            "scale": gap,
            # long model names are cut with "…" (the tooltip names the model in full): at
            # 320 px they took most of a phone's width
            "axis": {"labelLimit": _MODEL_LABEL_PX},
        },
        "tooltip": tooltip,
    }


def _spec_colour_layer(grid: HeatmapGrid) -> dict[str, Any]:
    """The coloured cells, clickable: the selected cell is outlined. The colour follows the
    value alone, on the same explicit stops as the HTML report's heatmap."""
    colours = grid.colours()
    colour_scale: dict[str, Any] = {
        "type": "linear",
        "domain": colours.domain(),
        "range": colours.hex_stops(),
        "interpolate": "rgb",
    }
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
                # the page draws the legend above the chart (app.ui.heatmap_legend): Vega starts
                # a top legend where the cells start, off a phone's screen
                "legend": None,
            },
            "strokeWidth": {
                "condition": {"param": HEATMAP_SELECTION, "empty": False, "value": 3},
                "value": 0,
            },
        },
    }


# A cell's ink as a colour value (not a scale: the colour scale is the cells' own).
_INK = {"condition": {"test": f"datum.ink == '{LIGHT_INK}'", "value": LIGHT_INK}, "value": DARK_INK}


def _spec_few_cases_layer() -> dict[str, Any]:
    """Cells resting on few cases: a dashed outline in the cell's ink (the colour untouched;
    the page's legend, ``app.analysis.heatmap_grid.heatmap_legend``, says what it means)."""
    return {
        "transform": [{"filter": "datum.uncertain"}],
        "mark": {"type": "rect", "fillOpacity": 0, "strokeWidth": 1.5, "strokeDash": [4, 3]},
        "encoding": {"stroke": _INK},
    }


def _spec_text_layers(printed: str) -> list[dict[str, Any]]:
    """The value in bold, then n and the interval under it, as far as ``printed`` says; each in
    its cell's ink."""
    text_base = {"align": "center", "baseline": "middle"}
    layers = []
    if printed:
        layers.append(
            {
                "mark": {**text_base, "type": "text", "fontWeight": "bold", "dy": -9},
                "encoding": {"text": {"field": "label"}, "color": _INK},
            }
        )
    if prints_detail(printed):
        layers.append(
            {
                "mark": {**text_base, "type": "text", "fontSize": 10, "dy": 8, "lineBreak": "\n"},
                "encoding": {"text": {"field": "detail"}, "color": _INK},
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
    layers = [_spec_colour_layer(grid)]
    if any(cell.uncertain for cell in grid.cells):
        layers.append(_spec_few_cases_layer())
    return {
        "title": grid.label,
        "data": {"values": _spec_values(grid)},
        # A height in pixels, not a step per row: Streamlit fits charts to a size, and Vega
        # warned "Dropping fit-y" in the console for a step. The title and slanted
        # relation names take _FRAME_PX of it; each model row 2 × _HEIGHT_PER_ROW.
        "height": _FRAME_PX + 2 * _HEIGHT_PER_ROW * len(grid.models),
        "encoding": _spec_axes(grid),
        "layer": [*layers, *_spec_text_layers(heatmap_cell_text(len(grid.relations)))],
        "config": {
            "view": {"stroke": "transparent"},
            "axis": {"grid": False},
        },
        # SVG: cells are DOM elements (the browser tests find them), and a few hundred is cheap.
        "usermeta": {"embedOptions": {"renderer": "svg"}},
    }
