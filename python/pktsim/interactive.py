"""Zoomable figures for the HTML report, drawn with plotly from the plots
:func:`pktsim.series.time_plots` prepares (the same data as the static
figures of :mod:`pktsim.plots`).

The page carries plotly.js inline once (:func:`plotly_js`, about 5 MB), so
it works offline: no script is fetched from a CDN. Each figure is a
``<div>`` (:func:`figure_div`): drag to zoom, double-click to zoom out,
click a legend entry to hide its line, hover for values; the camera
button downloads the view as SVG.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .series import Heatmap, Lines, TimePlot

#: Plotly's own colour cycle is fine, but matplotlib's keeps a line the
#: same colour in the page and in the SVG/PDF beside it.
COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf"]

#: Figure height in px (the width follows the page).
HEIGHT = 430

#: The mode bar's options: no plotly logo; the camera button saves SVG.
CONFIG: dict[str, Any] = {
    "displaylogo": False,
    "responsive": True,
    "toImageButtonOptions": {"format": "svg"},
}


def plotly_js() -> str:
    """plotly.js (minified), to put in one inline ``<script>`` of a page."""
    from plotly.offline import get_plotlyjs

    return str(get_plotlyjs())


def _lines_figure(p: Lines) -> Any:
    import plotly.graph_objects as go
    import polars as pl

    fig = go.Figure()
    groups = {r[0]: r[1] for r in p.data.select("line", "group").unique().iter_rows()}
    colours: dict[str, str] = {}
    for line in p.order:
        colours.setdefault(groups.get(line, line), COLOURS[len(colours) % len(COLOURS)])
    for line in p.order:
        sub = p.data.filter(pl.col("line") == line)
        if sub.height == 0:
            continue
        if line in p.points:
            fig.add_trace(go.Scatter(
                x=sub["t"].to_list(), y=sub["value"].to_list(), name=line, mode="markers",
                legendgroup=groups[line],
                marker={"color": colours[groups[line]], "size": 3, "opacity": 0.4},
            ))
            continue
        dash = bool(sub["dash"][0])
        fig.add_trace(go.Scatter(
            x=sub["t"].to_list(), y=sub["value"].to_list(), name=line, mode="lines",
            legendgroup=groups[line],
            line={"color": colours[groups[line]], "width": 1.2 if dash else 1.5,
                  "dash": "dash" if dash else "solid", "shape": "hv" if p.step else "linear"},
        ))
    fig.update_layout(xaxis_title=p.xlabel, yaxis_title=p.ylabel, hovermode="closest")
    if p.logy:
        fig.update_yaxes(type="log", **_log_ticks(p.data["value"].to_list()))
    else:
        fig.update_yaxes(rangemode="tozero")
    for x, label in p.marks:
        # A dotted line at each scheduled change, labelled at the top.
        fig.add_vline(x=x, line={"color": "#444", "width": 1, "dash": "dot"})
        if label:
            fig.add_annotation(x=x, y=1.0, yref="paper", text=label, showarrow=False,
                               textangle=-90, xanchor="right", yanchor="top",
                               bgcolor="rgba(255,255,255,0.75)",
                               font={"size": 10, "color": "#333"})
    return fig


def _log_ticks(values: list[float]) -> dict[str, Any]:
    """Ticks of a log axis over ``values``: 1, 2, 5 per decade, labelled in
    plain numbers (plotly's own minor labels read "2" for 20)."""
    import math

    pos = [v for v in values if v is not None and v > 0]
    if not pos:
        return {}
    lo, hi = math.floor(math.log10(min(pos))), math.ceil(math.log10(max(pos)))
    ticks = [m * 10.0**k for k in range(lo, hi + 1) for m in (1, 2, 5)]
    return {"tickvals": ticks, "ticktext": [f"{t:,.10g}" for t in ticks]}


def _heatmap_figure(p: Heatmap) -> Any:
    import plotly.graph_objects as go

    fig = go.Figure(go.Heatmap(
        x=p.edges, y=p.rows, z=p.z, zmin=0, zmax=p.zmax, colorscale="Viridis",
        colorbar={"title": {"text": p.zlabel}},
        hovertemplate="%{y}<br>t=%{x}<br>%{z:.1f}<extra></extra>",
    ))
    fig.update_layout(xaxis_title=p.xlabel, yaxis_title=p.ylabel, yaxis_autorange="reversed")
    return fig


def figure(p: TimePlot) -> Any:
    """A plotly Figure of a prepared time plot (lines or heat map)."""
    from .series import Heatmap

    fig = _heatmap_figure(p) if isinstance(p, Heatmap) else _lines_figure(p)
    height = HEIGHT
    if isinstance(p, Heatmap):
        height = int(min(900, max(HEIGHT, 120 + 14 * len(p.rows))))
    fig.update_layout(title={"text": p.title}, height=height, template="plotly_white",
                      margin={"l": 70, "r": 20, "t": 50, "b": 50})
    return fig


def figure_div(p: TimePlot, div_id: str) -> str:
    """The HTML of one figure (a ``<div>`` and the inline script drawing
    it); plotly.js must be on the page already (:func:`plotly_js`)."""
    return str(figure(p).to_html(full_html=False, include_plotlyjs=False, div_id=div_id,
                                 config=CONFIG))
