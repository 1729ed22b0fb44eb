"""The capacity search's chart: each step's percentile against its offered rate, the limit, each fork's capacity."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import ResultsError
from .frames import HEIGHT, WIDTH, server_color, values

if TYPE_CHECKING:
    import altair as alt
    import pandas as pd


def capacity(steps: pd.DataFrame, *, note: str | None = None) -> alt.LayerChart:
    """Each step of each fork's capacity search (:func:`benchlab.analysis.cost.steps`): its percentile (ms, log
    scale) at its offered rate, filled where it passed and hollow where it failed, a square where it was a whole
    window holding the rate found; the limit as a dashed rule; each
    fork's capacity as a vertical tick on the rate axis, hollow where the validity rule left its window out.

    Example
    -------
    >>> capacity(cost.steps(suite.records)).to_dict()["layer"][0]["encoding"]["x"]["field"]  # doctest: +SKIP
    'rate'
    """
    import altair as alt

    if steps is None or steps.empty:
        raise ResultsError("no capacity search in these runs: give slo='p99<5ms' with load='rate'")
    table = steps.assign(latency_ms=steps["latency_s"].astype(float) * 1e3,
                         result=steps["passed"].map({True: "passed", False: "failed"}),
                         standing=steps["kept"].map({True: "used", False: "left out"}),
                         kind=steps["held"].map({True: "held window", False: "search step"}))
    limit_ms = float(str(table["slo"].iloc[0]).split("<")[1].removesuffix("ms"))
    percentile = str(table["percentile"].iloc[0])
    color = server_color(values(table, "server"))
    tips = [alt.Tooltip("server:N"), alt.Tooltip("fork:N"), alt.Tooltip("step:Q"),
            alt.Tooltip("rate:Q", title="offered (req/s)", format=",.0f"),
            alt.Tooltip("latency_ms:Q", title=f"{percentile} (ms)", format=",.3g"), alt.Tooltip("result:N"),
            alt.Tooltip("kind:N", title="window"), alt.Tooltip("why:N", title="failed on")]
    x = alt.X("rate:Q", title="offered rate (requests/s)", scale=alt.Scale(zero=False))
    points = alt.Chart(table).mark_point(size=60, filled=False).encode(
        x=x, y=alt.Y("latency_ms:Q", title=f"{percentile} latency (ms)", scale=alt.Scale(type="log")), color=color,
        fill=alt.condition("datum.passed", color, alt.value("transparent")),
        shape=alt.Shape("kind:N", title=None, scale=alt.Scale(domain=["search step", "held window"],
                                                              range=["circle", "square"])), tooltip=tips)
    rule = alt.Chart(table.head(1)).mark_rule(strokeDash=[6, 3], color="black").encode(
        y=alt.datum(limit_ms), tooltip=[alt.Tooltip("slo:N", title="limit")])
    found = table.drop_duplicates("id").dropna(subset=["capacity_rps"])
    ticks = alt.Chart(found).mark_tick(thickness=2, size=40).encode(
        x=alt.X("capacity_rps:Q"), color=color, opacity=alt.condition("datum.kept", alt.value(1.0), alt.value(0.3)),
        tooltip=[alt.Tooltip("server:N"), alt.Tooltip("fork:N"),
                 alt.Tooltip("capacity_rps:Q", title="capacity (req/s)", format=",.0f"),
                 alt.Tooltip("capacity_by:N", title="stopped by"), alt.Tooltip("standing:N", title="window")])
    text = (f"Capacity under {table['slo'].iloc[0]}: each search step's {percentile} by offered rate (hollow: "
            "failed, square: held), the limit dashed, each fork's capacity a tick")
    return alt.LayerChart(layer=[points, rule, ticks]).properties(
        width=WIDTH * 2, height=HEIGHT + 40, title=alt.TitleParams(text, subtitle=note or ""))
