"""The load charts: throughput, the latency percentile curve, the concurrency sweep and the rate sweep."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ...analysis.cells import forks as cell_forks
from ...errors import ResultsError
from ...schema import PERCENTILE_COLUMNS
from ..numbers import rate
from .frames import (
    HEIGHT,
    NINES_TICKS,
    WIDTH,
    facets,
    finished,
    interval,
    long,
    nines,
    number,
    server_color,
    server_fill,
    standing,
    tick_labels,
    title,
    values,
    with_cells,
    with_setup,
)

if TYPE_CHECKING:
    import altair as alt
    import pandas as pd


# --- throughput ---------------------------------------------------------------------------------------

def throughput(runs: pd.DataFrame, *, metric: str = "rps", note: str | None = None) -> alt.FacetChart:
    """Requests per second per server: the mean with its 95 % CI, and every repeat (a fork) as a dot.

    The mean and its interval are the summary's: over fork means of the windows the one rule lets in
    (:mod:`benchlab.analysis.validity`), a fork's windows averaged first; a window left out (generator-bound, not
    warm...) is a hollow triangle and one retaken (disturbed, measured again) a hollow diamond, outlined in its
    server's colour, its tooltip saying why; a side with none left has no bar, and the subtitle says why. An
    interval that would reach past :data:`CLIP` times the largest figure drawn (two repeats far apart) is cut there,
    so the bars stay readable, and the subtitle says so.

    One panel per scenario (rows) and load point (columns, e.g. '200 connections').

    Parameters
    ----------
    runs : the tidy runs frame
    metric : a throughput column, "rps" by default
    note : the subtitle; by default :func:`describe` of ``runs``

    Example
    -------
    >>> chart = throughput(suite.runs)            # doctest: +SKIP
    >>> chart.to_dict()["spec"]["layer"][0]["mark"]["type"]  # doctest: +SKIP
    'bar'
    """
    import altair as alt
    import pandas as pd

    from ...analysis.validity import Tally

    frame, order = with_cells(standing(runs, "throughput"))
    used = frame[frame["standing"] == "used"]
    keys = ["scenario", "load_point", "server"]
    cells = _cell_means(used, keys, metric)
    table = pd.concat([_points(frame, keys, metric), pd.DataFrame(cells)], ignore_index=True)
    top, clipped = _axis(table)
    if clipped:
        cut = f"an interval of {clipped} past {top:,.0f} {metric} is cut at the axis: too few repeats to bound it"
        note = f"{note}; {cut}" if note else cut
    unit = "requests/s"
    bars, bars_ci, repeats = _throughput_marks(table, values(frame, "server"), metric, unit, top=top)
    # A cell of one run has no interval, and a cell whose every window was left out has no mean: leave out the
    # layers with nothing to draw (Vega warns on empty extents), and say why there is no bar.
    with_ci = any(number(c["ci_low"]) is not None for c in cells)
    if not cells:
        empty = f"no bars: {Tally.of(frame)}; each is drawn hollow, its tooltip saying why"
        note = f"{empty}; {note}" if note else empty
    layered = alt.layer(*([bars] if cells else []), *([bars_ci] if with_ci else []), repeats).properties(
        width=WIDTH, height=HEIGHT)
    return layered.facet(
        **facets(frame, order),
        title=title(f"Throughput ({unit}): mean, 95% CI and each repeat", frame, note,
                    width=len(order) * (WIDTH + 20) + 60),
    )


def _points(frame: pd.DataFrame, keys: list[str], metric: str) -> pd.DataFrame:
    """A dot a fork, its used windows' mean (what the interval is over), and a hollow mark a window left out or
    retaken, its ``left_out`` saying which and why."""
    import pandas as pd

    forks = cell_forks(frame[frame["standing"] == "used"])
    dots = forks[keys + ["id", "repeat", "connections", "windows"]].assign(kind="run", left_out="used",
                                                                           value=forks[metric].astype(float))
    out = frame[frame["standing"] != "used"]
    hollow = out[keys + ["id", "repeat", "connections"]].assign(
        left_out=out["standing"], kind=["retaken" if s == "retaken" else "left out" for s in out["standing"]],
        windows=1, value=out[metric].astype(float))
    return pd.concat([dots, hollow], ignore_index=True)


def _cell_means(frame: pd.DataFrame, keys: list[str], metric: str) -> list[dict]:
    """One row per cell of ``keys``: the mean ``metric`` with its 95 % CI and the number of forks (:func:`interval`)."""
    cells = []
    for (scenario, point, server), group in frame.groupby(keys, sort=True):
        mean, low, high, n = interval(group, metric)
        known = number(low) is not None and number(high) is not None
        cells.append({"scenario": scenario, "load_point": point, "server": server, "kind": "cell",
                      "value": mean, "ci_low": low, "ci_high": high, "n": n, "windows": len(group),
                      "ci": f"{rate(low)} to {rate(high)}" if known else f"none: {n} repeat{'s' if n != 1 else ''}"})
    return cells


#: The shape of each kind of dot: a fork used, a window left out by the one rule, a window retaken.
MARKS = {"run": "circle", "left out": "triangle-down", "retaken": "diamond"}

#: An interval reaching past this many times the largest mean or repeat drawn is cut at the axis.
CLIP = 1.5


def _axis(table: pd.DataFrame) -> tuple[float | None, str]:
    """The top of the throughput axis, and which cells' intervals reach past it (""): :data:`CLIP` times the
    largest figure drawn, where some interval would stretch the axis further."""
    import numpy as np

    drawn = pd_numbers(table["value"])
    highs = pd_numbers(table["ci_high"]) if "ci_high" in table else np.zeros(0)
    if not len(drawn) or not len(highs) or highs.max() <= CLIP * drawn.max():
        return None, ""
    top = CLIP * float(drawn.max())
    over = table[table.get("ci_high").astype(float) > top]
    return top, ", ".join(sorted(set(over["server"].astype(str))))


def pd_numbers(column):
    import numpy as np
    import pandas as pd

    values = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)
    return values[np.isfinite(values)]


def _throughput_marks(table: pd.DataFrame, servers: list[str], metric: str, unit: str,
                      top: float | None = None) -> tuple[alt.Chart, alt.Chart, alt.Chart]:
    """The bars of the cells' means, their CI error bars, a dot per repeat and a hollow one per window left out, on
    one x axis of servers; the axis ends at ``top`` where an interval would stretch it (:func:`_axis`)."""
    import altair as alt

    base = alt.Chart(table).encode(
        x=alt.X("server:N", title=None, axis=alt.Axis(labelAngle=-30)),
        color=server_color(servers),
    )
    # Throughput cannot be negative: an interval that reaches below 0 (two repeats far apart) is cut at the axis.
    y_scale = alt.Scale(domainMin=0) if top is None else alt.Scale(domain=[0, top], clamp=True)
    bars = base.transform_filter(alt.datum.kind == "cell").mark_bar(opacity=0.35).encode(
        y=alt.Y("value:Q", title=f"{metric} ({unit})", scale=y_scale),
        tooltip=[alt.Tooltip("server:N"), alt.Tooltip("value:Q", title=f"mean {metric}", format=",.0f"),
                 alt.Tooltip("ci:N", title="95% CI"), alt.Tooltip("n:Q", title="repeats"),
                 alt.Tooltip("windows:Q", title="windows used")],
    )
    bars_ci = base.transform_filter("datum.kind === 'cell' && isValid(datum.ci_low)").mark_errorbar(
        ticks=True, thickness=2, clip=True).encode(
        y=alt.Y("ci_low:Q", title=f"{metric} ({unit})", scale=y_scale), y2="ci_high:Q",
        color=alt.value("black"),
    )
    # A fork used is a filled dot; a window left out (a triangle) or retaken (a diamond) is hollow, drawn by its
    # outline in its server's colour: filled marks have no stroke, so a hollow one would be invisible.
    # the legend's symbols as outlines: the shapes say which is which, a hollow mark is a window not used
    legend = alt.Legend(labelExpr="datum.label == 'run' ? 'a fork' : datum.label", symbolFillColor="transparent",
                        symbolStrokeColor="black", symbolStrokeWidth=1.5)
    repeats = base.transform_filter("datum.kind !== 'cell'").mark_point(
        size=60, opacity=1, filled=False, strokeWidth=2).encode(
        y=alt.Y("value:Q", title=f"{metric} ({unit})", scale=y_scale),
        shape=alt.Shape("kind:N", title=None, scale=alt.Scale(domain=list(MARKS), range=list(MARKS.values())),
                        legend=legend),
        # a fork filled with its server's colour, the others hollow: a condition on the fill, not its opacity,
        # which would fill every symbol of the legend black
        fill=alt.condition(alt.datum.kind == "run", server_fill(servers), alt.value("transparent")),
        tooltip=[alt.Tooltip("server:N"), alt.Tooltip("repeat:Q"),
                 alt.Tooltip("value:Q", title=f"{metric}, the fork's mean", format=",.1f"),
                 alt.Tooltip("windows:Q", title="windows"), alt.Tooltip("id:N", title="first run"),
                 alt.Tooltip("left_out:N", title="window")],
    )
    return bars, bars_ci, repeats


# --- latency percentile curve -------------------------------------------------------------------------

def _percentiles_long(frame: pd.DataFrame) -> pd.DataFrame:
    table = long(frame, ["id", "server", "scenario", "load_point", "repeat", "standing"],
                  {column: frame.get(column) for column in PERCENTILE_COLUMNS}, "column")
    table["percentile"] = table.pop("column").map(PERCENTILE_COLUMNS).astype(float)
    table["nines"] = table["percentile"].map(nines)
    table["latency_ms"] = table.pop("value") * 1000.0
    return table


def latency(runs: pd.DataFrame, *, note: str | None = None) -> alt.FacetChart:
    """The latency percentile curve, HDR style: the tail is stretched out on a 'nines' axis.

    x is the percentile p drawn at 1 / (1 - p/100) on a log scale, labelled 50, 90, 99, 99.9, 99.99, so each
    further nine gets the same room; y is latency in milliseconds. A line per server joins the mean over the
    windows used (the one rule's, as the summary's), a dot per window shows their spread, hollow where the window
    was left out or retaken. Percentiles a tool did not report are left out.

    Example
    -------
    >>> latency(suite.runs).to_dict()["spec"]["layer"][0]["encoding"]["x"]["field"]  # doctest: +SKIP
    'nines'
    """
    import altair as alt

    frame, order = with_cells(standing(runs, "latency"))
    table = _percentiles_long(frame)
    if table.empty:
        raise ResultsError("no latency percentiles in these runs (the load tool reported none): "
                           "chart throughput instead")
    label = tick_labels({nines(p): text for p, text in NINES_TICKS.items()})
    x = alt.X("nines:Q", title="percentile",
              scale=alt.Scale(type="log", domain=[nines(50.0), nines(99.99)]),
              axis=alt.Axis(values=[nines(p) for p in NINES_TICKS], labelExpr=label, grid=True))
    y = alt.Y("latency_ms:Q", title="latency (ms)")
    color = server_color(values(frame, "server"))
    # the line is the mean over the windows used, as the summary's; a window left out or retaken is a hollow dot
    lines = alt.Chart(table).transform_filter(alt.datum.standing == "used").mark_line(point=False).encode(
        x=x, y=alt.Y("mean(latency_ms):Q", title="latency (ms)"), color=color,
        tooltip=[alt.Tooltip("server:N"), alt.Tooltip("percentile:Q", title="percentile"),
                 alt.Tooltip("mean(latency_ms):Q", title="mean latency (ms)", format=",.2f"),
                 alt.Tooltip("count(latency_ms):Q", title="repeats")],
    )
    dots = alt.Chart(table).mark_point(size=40, opacity=0.8, filled=False, strokeWidth=1.5).encode(
        x=x, y=y, color=color, fill=server_fill(values(frame, "server")),
        fillOpacity=alt.condition(alt.datum.standing == "used", alt.value(0.8), alt.value(0.0)),
        tooltip=[alt.Tooltip("server:N"), alt.Tooltip("repeat:Q"), alt.Tooltip("percentile:Q"),
                 alt.Tooltip("latency_ms:Q", title="latency (ms)", format=",.2f"), alt.Tooltip("id:N", title="run"),
                 alt.Tooltip("standing:N", title="window")],
    )
    return alt.layer(lines, dots, data=table).properties(width=WIDTH + 60, height=HEIGHT).facet(
        **facets(frame, order),
        title=title("Latency by percentile (ms), nines scale", frame, note, width=len(order) * (WIDTH + 80) + 60),
    )


# --- concurrency sweep --------------------------------------------------------------------------------

def sweep(runs: pd.DataFrame, *, note: str | None = None) -> alt.FacetChart:
    """Throughput and p99 against the number of connections, one line per server, so the knee shows.

    The line joins the mean of the repeats at each connection count; a dot marks each repeat. The two
    panels have their own y axes: requests/s on the left, p99 in milliseconds on the right.

    Example
    -------
    >>> sweep(suite.runs).to_dict()["facet"]["column"]["field"]   # doctest: +SKIP
    'panel'
    """
    import altair as alt
    import pandas as pd

    frame = finished(runs, "sweep")
    frame = frame[frame["connections"].map(number).notna()]
    frame = frame.assign(connections=frame["connections"].map(number).astype(int))
    frame, dashed = with_setup(frame)
    table = long(frame, ["id", "server", "scenario", "connections", "repeat", "setup"],
                  {"throughput (requests/s)": frame.get("rps"),
                   "p99 latency (ms)": pd.to_numeric(frame.get("p99", math.nan), errors="coerce") * 1000}, "panel")
    if table.empty:
        raise ResultsError("no runs with a connection count to sweep: the sweep chart needs load='duration' runs")
    points = sorted(set(table["connections"]))
    # One connection count is a sweep of one point: let Vega-Lite pad the axis around it.
    scale = alt.Scale(type="log", base=2, domain=[points[0], points[-1]]) if len(points) > 1 else alt.Scale(
        type="log", base=2)
    x = alt.X("connections:Q", title="connections", scale=scale, axis=alt.Axis(values=points, format="d"))
    color = server_color(values(frame, "server"))
    lines = alt.Chart(table).mark_line(point=True).encode(
        x=x, y=alt.Y("mean(value):Q", title=None), color=color, **dashed,
        tooltip=[alt.Tooltip("server:N"), alt.Tooltip("connections:Q"), alt.Tooltip("panel:N", title="metric"),
                 alt.Tooltip("mean(value):Q", title="mean", format=",.2f"),
                 alt.Tooltip("count(value):Q", title="repeats")],
    )
    dots = alt.Chart(table).mark_circle(size=30, opacity=0.6).encode(
        x=x, y=alt.Y("value:Q", title=None), color=color,
        tooltip=[alt.Tooltip("server:N"), alt.Tooltip("connections:Q"), alt.Tooltip("repeat:Q"),
                 alt.Tooltip("panel:N", title="metric"), alt.Tooltip("value:Q", format=",.2f"),
                 alt.Tooltip("id:N", title="run")],
    )
    return alt.layer(lines, dots, data=table).properties(width=WIDTH + 60, height=HEIGHT).facet(
        **facets(frame, ["throughput (requests/s)", "p99 latency (ms)"], column="panel"),
        title=title("Concurrency sweep: throughput (requests/s) and p99 (ms) against connections", frame, note,
                    width=2 * (WIDTH + 80) + 60),
    ).resolve_scale(y="independent")


# --- latency against throughput (rate sweeps) ---------------------------------------------------------

def rate_sweep(runs: pd.DataFrame, *, note: str | None = None) -> alt.FacetChart:
    """p99 against the achieved throughput for constant-rate runs, a line per server in order of the target.

    Each point is one offered rate: while a server keeps up, achieved rps follows the target and p99
    stays flat; past its capacity achieved rps stalls and p99 climbs: the knee. Dots are single runs, the
    line joins the means per target rate.

    Example
    -------
    >>> rate_sweep(suite.runs).to_dict()["spec"]["layer"][0]["encoding"]["y"]["field"]  # doctest: +SKIP
    'p99_ms'
    """
    import altair as alt

    frame = finished(runs, "latency-throughput")
    frame = frame[frame["load"] == "rate"].copy()
    if frame.empty:
        raise ResultsError("no constant-rate runs (load='rate') in this frame: run compare(load='rate', rates=[...])")
    frame["target"] = [(number(t) if number(t) is not None else number(r))
                       for t, r in zip(frame["target_rps"], frame["rate"])]
    frame["p99_ms"] = frame["p99"].map(number) * 1000.0
    frame["rps"] = frame["rps"].astype(float)
    frame, dashed = with_setup(frame)
    table = frame[["id", "server", "scenario", "repeat", "setup", "target", "rps", "p99_ms"]].dropna(subset=["p99_ms"])
    color = server_color(values(table, "server"))
    means = alt.Chart(table).transform_aggregate(
        rps="mean(rps)", p99_ms="mean(p99_ms)", runs="count()", groupby=["server", "scenario", "setup", "target"],
    ).mark_line(point=True).encode(
        x=alt.X("rps:Q", title="achieved throughput (requests/s)"),
        y=alt.Y("p99_ms:Q", title="p99 latency (ms)"),
        order=alt.Order("target:Q"), color=color, **dashed,
        tooltip=[alt.Tooltip("server:N"), alt.Tooltip("target:Q", title="target (req/s)", format=",.0f"),
                 alt.Tooltip("rps:Q", title="achieved (req/s)", format=",.0f"),
                 alt.Tooltip("p99_ms:Q", title="p99 (ms)", format=",.2f"), alt.Tooltip("runs:Q", title="repeats")],
    )
    dots = alt.Chart(table).mark_circle(size=30, opacity=0.5).encode(
        x="rps:Q", y="p99_ms:Q", color=color,
        tooltip=[alt.Tooltip("server:N"), alt.Tooltip("target:Q", title="target (req/s)", format=",.0f"),
                 alt.Tooltip("rps:Q", title="achieved (req/s)", format=",.0f"),
                 alt.Tooltip("p99_ms:Q", title="p99 (ms)", format=",.2f"), alt.Tooltip("id:N", title="run")],
    )
    return alt.layer(means, dots, data=table).properties(width=WIDTH * 2, height=HEIGHT + 40).facet(
        column=alt.Column("scenario:N", title="scenario"),
        title=title("Latency against throughput: p99 (ms) by achieved requests/s, constant-rate runs",
                     frame, note, width=len(values(table, "scenario")) * (WIDTH * 2 + 20) + 60),
    )
