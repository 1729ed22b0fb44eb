"""The machine during each measured window: a small chart per run, second by second, the disturbed seconds shaded."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import ResultsError
from .frames import LEGEND_LABEL_LIMIT, number, server_color, values

if TYPE_CHECKING:
    import altair as alt
    import pandas as pd

#: The height of each run's chart, in pixels.
HEIGHT = 90
#: The width of each run's chart, in pixels.
PANEL = 180
#: The widest a chart may be: the output area of JupyterLab and Notebook 7 at their default width and of the HTML
#: report's page is about 960 px; with a margin for the scroll bar, this fits each of them without scrolling.
FIT = 900
#: What a row of panels adds beside the panels themselves: the y axis and its title on the left (62 px, measured
#: by vl-convert) and the space between two panels; the server legend on the right takes its symbol and padding
#: (40 px) and its longest name, at most 7 px a character (128 px in all for "spring-undertow").
AXIS, SPACING, LEGEND_PAD, LEGEND_CHAR = 70, 20, 40, 7
#: At most this many runs are drawn (the first ones, in order): a chart per run, past that, is a wall.
MOST_RUNS = 24


def columns_that_fit(runs: int, servers=("spring-undertow",), *, width: int = FIT) -> int:
    """How many panels a row holds within ``width`` pixels beside the legend of ``servers``, at most ``runs`` (no
    empty column).

    >>> columns_that_fit(8), columns_that_fit(2), columns_that_fit(8, ["spring-undertow-virtual-threads-aot"])
    (3, 2, 2)
    """
    legend = LEGEND_PAD + LEGEND_CHAR * min(max((len(str(s)) for s in servers), default=0), LEGEND_LABEL_LIMIT // 7)
    fits = max(1, (width - AXIS - legend + SPACING) // (PANEL + SPACING))
    return max(1, min(runs, fits))


def _retake(run_id: str) -> int:
    """Which retake a retaken window's id names (``...-retaken2``: 2); 0 for a window that was kept."""
    head, _, k = str(run_id).rpartition("-retaken")
    return int(k) if head and k.isdigit() else 0


def _whole(value) -> str:
    known = number(value)
    return "?" if known is None else f"{known:g}"


def _labelled(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Each window's panel title, short enough for its panel: ``spring-jetty r2 w1``, then what it is where it was
    not used (``retaken 1``, ``left out``), and the titles in one sorted order: server, repeat, window, a window's
    retakes before it (as they were measured)."""
    first = frame.drop_duplicates("id").to_dict("records")
    said = {}
    for row in first:
        standing = row["standing"]
        extra = f" retaken {_retake(row['id'])}" if standing == "retaken" else "" if standing == "used" else " left out"
        said[row["id"]] = f"{row['server']} r{_whole(row.get('repeat'))} w{_whole(row.get('window'))}{extra}"
    if len(set(said.values())) < len(said):  # two cells of one server, repeat and window: the id tells them apart
        said = {run_id: f"{text} {str(run_id)[-8:]}" for run_id, text in said.items()}
    order = sorted(first, key=lambda r: (str(r["server"]), number(r.get("repeat")) or 0, number(r.get("window")) or 0,
                                         _retake(r["id"]) == 0, _retake(r["id"]), said[r["id"]]))
    return frame.assign(run=frame["id"].map(said)), [said[r["id"]] for r in order]


def series(frame: pd.DataFrame, *, columns: int | None = None, most: int = MOST_RUNS) -> alt.FacetChart:
    """One small chart per run (``Suite.series``): its throughput each second as a line, the seconds that were
    disturbed shaded red, and every figure of the second (the run's own CPU, the cores other processes and the
    host took, the JIT's) in its tooltip. A window retaken or left out is drawn too, its title saying so and its
    line dashed. The panels come in one sorted order (server, repeat, window) and wrap into rows that fit
    :data:`FIT` pixels (``columns``: how many a row, by default as many as fit); a window with no throughput
    second has no panel.

    Example
    -------
    >>> series(suite.series)    # doctest: +SKIP
    """
    import altair as alt

    if frame is None or frame.empty or frame["rps"].notna().sum() == 0:
        raise ResultsError("no window series to chart: the runs kept no byte counts (too short, imported, or a "
                           "load tool in a container)")
    drawn = frame.groupby("id", sort=False)["rps"].transform(lambda rps: rps.notna().any())
    frame = frame[drawn.astype(bool)]
    if "standing" not in frame:  # a series built without the suite: its status says what it can
        frame = frame.assign(standing=frame["status"].map(lambda s: "retaken" if s == "retaken" else "used"))
    table, order = _labelled(frame)
    order = order[:most]
    table = table[table["run"].isin(order)].copy()
    table["other"] = table[["other_server", "other_load"]].astype(float).max(axis=1)
    table["end"] = table["t"] + 1.0
    table["disturbed"] = table["disturbed"].astype(bool)
    tooltip = [alt.Tooltip("run:N", title="window"), alt.Tooltip("standing:N", title="used?"),
               alt.Tooltip("id:N", title="run"), alt.Tooltip("t:Q", title="second"),
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
        strokeDash=alt.condition(alt.datum.standing == "used", alt.value([1, 0]), alt.value([4, 3])),
        color=server_color(values(table, "server")), tooltip=tooltip)
    # no shade layer where no second was disturbed: an empty layer has no extent, and Vega warns of an infinite one
    layered = alt.layer(*([shade] if table["disturbed"].any() else []), rps, data=table)
    wrap = columns or columns_that_fit(len(order), values(table, "server"))
    return layered.properties(width=PANEL, height=HEIGHT).facet(
        facet=alt.Facet("run:N", title=None, sort=order, header=alt.Header(labelLimit=PANEL)),
        # each panel its own x axis: a shared one is drawn under every column of the last row, an empty slot too
        # (the report showed "an empty eighth panel that shows only an axis")
        columns=wrap).resolve_axis(x="independent").properties(
        title={"text": "Each measured window, second by second",
               "subtitle": ["requests/s each second; shaded: seconds other processes or the host took the run's cores;",
                            "dashed: a window retaken or left out, which enters no statistic (hover for the figures)"]})
