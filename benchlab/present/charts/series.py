"""The machine during each measured window: a small chart per run, second by second, the disturbed seconds shaded."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import ResultsError
from .frames import server_color, values

if TYPE_CHECKING:
    import altair as alt
    import pandas as pd

#: The height of each run's chart, in pixels.
HEIGHT = 90
#: At most this many runs are drawn (the first ones, in order): a chart per run, past that, is a wall.
MOST_RUNS = 24


def series(frame: pd.DataFrame, *, columns: int = 4, most: int = MOST_RUNS) -> alt.FacetChart:
    """One small chart per run (``Suite.series``): its throughput each second as a line, the seconds that were
    disturbed shaded red, and every figure of the second (the run's own CPU, the cores other processes and the
    host took, the JIT's) in its tooltip. A retaken window is drawn too, its title saying so.

    Example
    -------
    >>> series(suite.series)    # doctest: +SKIP
    """
    import altair as alt

    if frame is None or frame.empty or frame["rps"].notna().sum() == 0:
        raise ResultsError("no window series to chart: the runs kept no byte counts (too short, imported, or a "
                           "load tool in a container)")
    table = frame[frame["id"].isin(list(dict.fromkeys(frame["id"]))[:most])].copy()
    table["run"] = table["id"] + table["status"].map(lambda s: " (retaken)" if s == "retaken" else "")
    table["other"] = table[["other_server", "other_load"]].astype(float).max(axis=1)
    table["end"] = table["t"] + 1.0
    table["disturbed"] = table["disturbed"].astype(bool)
    tooltip = [alt.Tooltip("run:N"), alt.Tooltip("t:Q", title="second"),
               alt.Tooltip("rps:Q", title="requests/s", format=",.0f"),
               alt.Tooltip("server_cpu:Q", title="server CPU (cores)", format=".2f"),
               alt.Tooltip("load_cpu:Q", title="load CPU (cores)", format=".2f"),
               alt.Tooltip("other_server:Q", title="others on the server's cores", format=".2f"),
               alt.Tooltip("other_load:Q", title="others on the load's cores", format=".2f"),
               alt.Tooltip("steal:Q", title="steal (cores)", format=".2f"),
               alt.Tooltip("jit_cpu:Q", title="JIT (cores)", format=".2f"),
               alt.Tooltip("disturbed:N")]
    base = alt.Chart().encode(x=alt.X("t:Q", title="second of the window"))
    shade = base.mark_rect(color="#d62728", opacity=0.18).encode(x2="end:Q", y=alt.value(0),
                                                                 y2=alt.value(HEIGHT)).transform_filter(
        alt.datum.disturbed)
    rps = base.mark_line(point=True, strokeWidth=1.5).encode(
        y=alt.Y("rps:Q", title="requests/s", scale=alt.Scale(zero=True)),
        color=server_color(values(table, "server")), tooltip=tooltip)
    # no shade layer where no second was disturbed: an empty layer has no extent, and Vega warns of an infinite one
    layered = alt.layer(*([shade] if table["disturbed"].any() else []), rps, data=table)
    return layered.properties(width=180, height=HEIGHT).facet(
        facet=alt.Facet("run:N", title=None, sort=list(dict.fromkeys(table["run"]))), columns=columns).properties(
        title={"text": "Each measured window, second by second",
               "subtitle": "requests/s each second; shaded: seconds other processes or the host took the run's cores "
                           "(hover for the figures)"})
