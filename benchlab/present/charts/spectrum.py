"""The latency spectrum of merged cells: every request of a cell's repeats, percentile by percentile, to the max."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import ResultsError
from ...schema import PERCENTILE_COLUMNS
from .frames import (
    HEIGHT,
    WIDTH,
    facets,
    load_order,
    load_point,
    long,
    nines,
    server_color,
    standing,
    tick_labels,
    title,
    values,
)

if TYPE_CHECKING:
    import altair as alt
    import pandas as pd

#: The ticks of the spectrum's x axis, the slowest request drawn one nine beyond 99.99 at its right end. The fastest
#: (percentile 0, where a run's faint line starts) is the axis's left end, unlabelled: a label there would sit on
#: the median's.
TICKS = {50.0: "50", 90.0: "90", 99.0: "99", 99.9: "99.9", 99.99: "99.99", 100.0: "max"}
MAX_AT = nines(99.999)


def _where(percentile: float) -> float:
    return MAX_AT if percentile >= 100 else nines(percentile)


def _runs_long(runs: pd.DataFrame) -> pd.DataFrame:
    """Each run's own percentiles (its min at 0 and max at 100), one row per run and percentile."""
    frame = standing(runs, "latency spectrum")
    frame = frame.assign(load_point=[load_point(r) for r in frame.to_dict("records")])
    columns = {"lat_min": 0.0, **PERCENTILE_COLUMNS, "lat_max": 100.0}
    table = long(frame, ["id", "server", "scenario", "load_point", "repeat", "standing"],
                 {c: frame.get(c) for c in columns}, "column")
    table["percentile"] = table.pop("column").map(columns).astype(float)
    table["latency_ms"] = table.pop("value") * 1000.0
    table["kind"] = "run"
    return table


def _merged(latency: pd.DataFrame) -> pd.DataFrame:
    """The merged percentiles in milliseconds, with their interval as one text, so a tooltip never shows "null"
    where there is none (a cell of one run)."""
    merged = latency.assign(load_point=[load_point(r) for r in latency.to_dict("records")],
                            latency_ms=latency["latency_s"] * 1000.0, low_ms=latency["low"] * 1000.0,
                            high_ms=latency["high"] * 1000.0, kind="merged")
    return merged.assign(interval=[f"{low:,.3f} to {high:,.3f}" if low == low and high == high else
                                   f"none: {n} run merged"
                                   for low, high, n in zip(merged["low_ms"], merged["high_ms"], merged["n"])])


def spectrum(latency: pd.DataFrame, runs: pd.DataFrame | None = None, *, note: str | None = None) -> alt.FacetChart:
    """The percentile spectrum of each cell's merged latency (:meth:`benchlab.analysis.suite.Suite.latency`).

    x is the percentile q at 1 / (1 - q/100) on a log scale, labelled 0, 90, 99, 99.9, 99.99 and max, so
    each further nine gets the same room; y is latency in milliseconds, on a log scale. A line per server
    joins the merged percentiles, with the run bootstrap interval as a band; given the runs frame, a faint
    line per run joins that run's own percentiles, dashed where the run was left out of the merged line or
    retaken (:func:`benchlab.analysis.validity.standing`). One panel per scenario and load point.

    Example
    -------
    >>> chart = spectrum(suite.latency(), suite.runs)       # doctest: +SKIP
    >>> chart.to_dict()["spec"]["layer"][0]["encoding"]["x"]["field"]  # doctest: +SKIP
    'nines'
    """
    import altair as alt
    import pandas as pd

    if latency is None or latency.empty:
        raise ResultsError("no merged latency to chart: these runs kept no latency histogram (imported or "
                           "older runs); chart their percentiles with charts.latency(suite.runs) instead")
    merged = _merged(latency)
    table = pd.concat([merged, _runs_long(runs)] if runs is not None else [merged], ignore_index=True)
    table = table[table["latency_ms"] > 0]  # a log axis has no 0 (JMeter's 0 ms medians)
    table = table.assign(nines=table["percentile"].map(_where))
    order = [p for _, p in sorted({(load_order(r), load_point(r)) for r in latency.to_dict("records")})]
    label = tick_labels({_where(p): text for p, text in TICKS.items()})
    x = alt.X("nines:Q", title="percentile",
              scale=alt.Scale(type="log", domain=[1, MAX_AT]),
              axis=alt.Axis(values=[_where(p) for p in TICKS], labelExpr=label, grid=True))
    y = alt.Y("latency_ms:Q", title="latency (ms)", scale=alt.Scale(type="log"))
    color = server_color(values(table, "server"))
    base = alt.Chart().encode(x=x, color=color)
    # a run left out of the merged line (the one rule), or retaken, is drawn dashed, its tooltip saying why
    run_lines = base.transform_filter(alt.datum.kind == "run").mark_line(opacity=0.25, strokeWidth=1).encode(
        y=y, detail="id:N",
        strokeDash=alt.condition(alt.datum.standing == "used", alt.value([1, 0]), alt.value([4, 3])),
        tooltip=[alt.Tooltip("server:N"), alt.Tooltip("repeat:Q"), alt.Tooltip("percentile:Q"),
                 alt.Tooltip("latency_ms:Q", title="this run's (ms)", format=",.3f"), alt.Tooltip("id:N", title="run"),
                 alt.Tooltip("standing:N", title="window")])
    band = base.transform_filter("datum.kind === 'merged' && isValid(datum.low_ms)").mark_area(opacity=0.15).encode(
        y=alt.Y("low_ms:Q", title="latency (ms)", scale=alt.Scale(type="log")), y2="high_ms:Q")
    lines = base.transform_filter(alt.datum.kind == "merged").mark_line(point=True, strokeWidth=2.5).encode(
        y=y, tooltip=[alt.Tooltip("server:N"), alt.Tooltip("percentile:Q"),
                      alt.Tooltip("latency_ms:Q", title="merged (ms)", format=",.3f"),
                      alt.Tooltip("interval:N", title="interval (ms)"), alt.Tooltip("method:N", title="by"),
                      alt.Tooltip("n:Q", title="runs merged"),
                      alt.Tooltip("count:Q", title="latencies", format=",d")])
    with_band = bool(merged["low_ms"].notna().any())
    layered = alt.layer(*((run_lines,) if runs is not None else ()), *((band,) if with_band else ()), lines,
                        data=table).properties(width=WIDTH + 60, height=HEIGHT)
    return layered.facet(
        **facets(table, order),
        title=title("Latency spectrum (ms), repeats merged, nines scale", runs if runs is not None else latency,
                    note),
    )
