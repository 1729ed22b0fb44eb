"""The resource timeline: server (or load tool) CPU and RSS over the measured phase, a line per run."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..errors import ResultsError
from .frames import MIB, WIDTH, server_color, title, values, with_cells

if TYPE_CHECKING:
    import altair as alt
    import pandas as pd


def resources(samples: "pd.DataFrame", *, runs: "pd.DataFrame | None" = None, role: str = "server",
              note: str | None = None, max_points: int = 400) -> "alt.VConcatChart":
    """Server CPU (% of one core) and RSS (MiB) over the measured phase, a line per run, coloured by server.

    Parameters
    ----------
    samples : the samples frame (``Suite.samples`` or ``Run.samples_frame()``): id, server, t, role, cpu, rss
    runs : the runs frame, for the subtitle (``describe``) and the tooltips' scenario and load
    role : "server" (default) or "load", whose samples to draw
    note : the subtitle; by default :func:`describe` of ``runs``
    max_points : at most this many samples per run are drawn (evenly thinned), to keep reports small

    Example
    -------
    >>> resources(suite.samples, runs=suite.runs)    # doctest: +SKIP
    """
    import altair as alt
    import pandas as pd

    if samples is None or len(samples) == 0:
        raise ResultsError("no CPU/memory samples to chart: the runs were too short to sample, "
                           "or were imported; use a duration of a few seconds")
    table = samples[samples["role"] == role].copy()
    if table.empty:
        raise ResultsError(f"no {role!r} samples to chart: choose role='server' or role='load'")
    table = pd.concat([group.iloc[:: max(1, math.ceil(len(group) / max_points))]
                       for _, group in table.groupby("id", sort=False)], ignore_index=True)
    table["cpu"] = table["cpu"].astype(float)
    table["rss_mib"] = table["rss"].astype(float) / MIB
    table["load_point"] = ""
    if runs is not None and len(runs):
        labelled, _ = with_cells(runs)
        points = dict(zip(labelled["id"], labelled["load_point"]))
        table["load_point"] = table["id"].map(points).fillna("")
    table = table[["id", "server", "t", "cpu", "rss_mib", "load_point"]]
    color = server_color(values(table, "server"))
    tooltip = [alt.Tooltip("server:N"), alt.Tooltip("load_point:N", title="load"), alt.Tooltip("id:N", title="run"),
               alt.Tooltip("t:Q", title="time (s)", format=".2f"),
               alt.Tooltip("cpu:Q", title="CPU (% of one core)", format=".0f"),
               alt.Tooltip("rss_mib:Q", title="RSS (MiB)", format=",.0f")]
    base = alt.Chart(table).encode(x=alt.X("t:Q", title="time into the measured phase (s)"), color=color,
                                   detail="id:N", tooltip=tooltip)
    cpu = base.mark_line(point=True, strokeWidth=1.5).encode(
        y=alt.Y("cpu:Q", title=f"{role} CPU (% of one core)")).properties(width=WIDTH * 2, height=160)
    rss = base.mark_line(point=True, strokeWidth=1.5).encode(
        y=alt.Y("rss_mib:Q", title=f"{role} RSS (MiB)", scale=alt.Scale(zero=False))).properties(
        width=WIDTH * 2, height=160)
    frame_for_note = runs if runs is not None else samples.iloc[0:0]
    return alt.vconcat(cpu, rss, title=title(f"{role.capitalize()} CPU (% of one core) and RSS (MiB) "
                                              "over the measured phase", frame_for_note, note, width=WIDTH * 2 + 60))
