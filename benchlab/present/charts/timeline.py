"""Charts over time: the warm-up curves before the measurement, and CPU and RSS during it, a line per run."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ...errors import ResultsError
from .frames import LEGEND_LABEL_LIMIT, MIB, WIDTH, server_color, title, values, with_cells, wrap

if TYPE_CHECKING:
    import altair as alt
    import pandas as pd


def resources(samples: pd.DataFrame, *, runs: pd.DataFrame | None = None, role: str = "server",
              note: str | None = None, max_points: int = 400) -> alt.VConcatChart:
    """Server CPU (% of one core) and RSS (MiB) over the measured phase, a line per run, coloured by server; given
    ``runs``, a window left out or retaken (:func:`benchlab.analysis.validity.standing`) is dashed.

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
    table["standing"] = "used"
    if runs is not None and len(runs):
        from ...analysis.validity import standing

        labelled, _ = with_cells(runs)
        points = dict(zip(labelled["id"], labelled["load_point"]))
        table["load_point"] = table["id"].map(points).fillna("")
        table["standing"] = table["id"].map(dict(zip(runs["id"], standing(runs)))).fillna("not in the runs given")
    table = table[["id", "server", "t", "cpu", "rss_mib", "load_point", "standing"]]
    color = server_color(values(table, "server"))
    tooltip = [alt.Tooltip("server:N"), alt.Tooltip("load_point:N", title="load"), alt.Tooltip("id:N", title="run"),
               alt.Tooltip("standing:N", title="window"), alt.Tooltip("t:Q", title="time (s)", format=".2f"),
               alt.Tooltip("cpu:Q", title="CPU (% of one core)", format=".0f"),
               alt.Tooltip("rss_mib:Q", title="RSS (MiB)", format=",.0f")]
    # a window left out or retaken (the one rule) is drawn dashed, as in the windows chart
    base = alt.Chart(table).encode(x=alt.X("t:Q", title="time into the measured phase (s)"), color=color,
                                   detail="id:N", tooltip=tooltip,
                                   strokeDash=alt.condition(alt.datum.standing == "used", alt.value([1, 0]),
                                                            alt.value([4, 3])))
    cpu = base.mark_line(point=True, strokeWidth=1.5).encode(
        y=alt.Y("cpu:Q", title=f"{role} CPU (% of one core)")).properties(width=WIDTH * 2, height=160)
    rss = base.mark_line(point=True, strokeWidth=1.5).encode(
        y=alt.Y("rss_mib:Q", title=f"{role} RSS (MiB)", scale=alt.Scale(zero=False))).properties(
        width=WIDTH * 2, height=160)
    frame_for_note = runs if runs is not None else samples.iloc[0:0]
    return alt.vconcat(cpu, rss, title=title(f"{role.capitalize()} CPU (% of one core) and RSS (MiB) "
                                              "over the measured phase", frame_for_note, note, width=WIDTH * 2 + 60))


def warmup(curves: pd.DataFrame, *, runs: pd.DataFrame | None = None, note: str | None = None) -> alt.VConcatChart:
    """The warm-up of every run: requests/s, the JIT's compile time and p99 (ms) of each slice against the
    time since the warm-up began, one line per run, coloured by server; a run whose warm-up hit its limit
    is drawn dashed.

    The JIT settling shows twice: as a throughput line that climbs and flattens, and as a compile-time
    line that climbs about a second per second while the compiler works and goes flat when it is quiet.
    A throughput plateau while the compile line still climbs is not a steady state; a line still climbing
    at its end is a run flagged ``not_warm``. Servers without JVM counters draw no compile line.

    Parameters
    ----------
    curves : ``Suite.warmups`` (:func:`benchlab.analysis.steady.curves`): id, server, repeat, t, rps, p99, steady
    runs : the runs frame, for the subtitle
    note : the subtitle; by default :func:`describe` of ``runs``

    Example
    -------
    >>> warmup(suite.warmups, runs=suite.runs)    # doctest: +SKIP
    """
    import altair as alt

    if curves is None or len(curves) == 0:
        raise ResultsError("no warm-up curves to chart: only warmup='auto' keeps one; a fixed warm-up does not")
    table = curves.copy()
    table["p99_ms"] = table["p99"].astype(float) * 1e3
    table["ended"] = table["steady"].map({True: "steady", False: "limit reached"}).fillna("fixed")
    color = server_color(values(table, "server"))
    tooltip = [alt.Tooltip("server:N"), alt.Tooltip("id:N", title="run"), alt.Tooltip("t:Q", title="time (s)"),
               alt.Tooltip("rps:Q", title="requests/s", format=",.0f"),
               alt.Tooltip("p99_ms:Q", title="p99 (ms)", format=",.1f"), alt.Tooltip("ended:N", title="warm-up"),
               alt.Tooltip("class:N", title="class"), alt.Tooltip("jit_quiet_s:Q", title="JIT quiet at (s)"),
               alt.Tooltip("compile_s:Q", title="JIT compile time so far (s)", format=",.1f"),
               alt.Tooltip("jit_cpu_s:Q", title="JIT CPU so far (s)", format=",.1f"),
               alt.Tooltip("phase:N", title="phase"), alt.Tooltip("connections:Q", title="connections")]
    for column in ("compile_s", "jit_cpu_s", "class", "jit_quiet_s", "phase", "connections"):
        if column not in table:
            table[column] = None
    base = alt.Chart(table).encode(
        x=alt.X("t:Q", title="time since the warm-up began (s)"), color=color, detail="id:N", tooltip=tooltip,
        strokeDash=alt.StrokeDash("ended:N", title="warm-up ended", sort=["steady", "limit reached"]))
    rps = base.mark_line(point=True, strokeWidth=1.5).encode(
        y=alt.Y("rps:Q", title="requests/s in the slice")).properties(width=WIDTH * 2, height=180)
    p99 = base.mark_line(point=True, strokeWidth=1.5).encode(
        y=alt.Y("p99_ms:Q", title="p99 in the slice (ms)", scale=alt.Scale(type="log"))).properties(
        width=WIDTH * 2, height=140)
    panels = [rps]
    if table["compile_s"].notna().any():
        panels.append(base.transform_filter("isValid(datum.compile_s)").mark_line(point=True, strokeWidth=1.5).encode(
            y=alt.Y("compile_s:Q", title="JIT compile time so far (s)")).properties(width=WIDTH * 2, height=140))
    panels.append(p99)
    frame_for_note = runs if runs is not None else table.iloc[0:0]
    return alt.vconcat(*panels, title=title("Warm-up: requests/s, JIT compile time and p99 (ms) per slice until warm",
                                            frame_for_note, note, width=WIDTH * 2 + 60))


def live(rows: pd.DataFrame) -> alt.VConcatChart:
    """What a run under way has done so far: requests/s per slice, and the JIT's compile time where the server
    has JVM counters, against the seconds since its warm-up began, a line per run.

    ``rows`` has a row per slice: ``run`` (its label), ``t``, ``phase`` ("prime", "load", "resume", "fixed": a
    fixed warm-up's one slice), ``rps``,
    and ``compile_s`` when known: the rows :func:`benchlab.running.warmup.warm_up` hands its ``on_slice``.

    Example
    -------
    >>> import pandas as pd
    >>> chart = live(pd.DataFrame([{"run": "spring-jetty r1", "t": 5.0, "phase": "load", "rps": 900.0}]))
    >>> chart.to_dict()["vconcat"][0]["mark"]["type"]
    'line'
    """
    import altair as alt

    table = rows.copy()
    for column in ("phase", "compile_s", "connections"):
        if column not in table:
            table[column] = None
    tooltip = [alt.Tooltip("run:N"), alt.Tooltip("phase:N"), alt.Tooltip("t:Q", title="time (s)", format=".0f"),
               alt.Tooltip("rps:Q", title="requests/s", format=",.0f"), alt.Tooltip("connections:Q"),
               alt.Tooltip("compile_s:Q", title="JIT compile time so far (s)", format=",.1f")]
    base = alt.Chart(table).encode(x=alt.X("t:Q", title="time since the warm-up began (s)"),
                                   color=alt.Color("run:N", title="run", legend=alt.Legend(
                                       orient="bottom", labelLimit=LEGEND_LABEL_LIMIT, symbolOpacity=1)),
                                   tooltip=tooltip)
    panels = [base.mark_line(point=True).encode(y=alt.Y("rps:Q", title="requests/s in the slice")).properties(
        width=WIDTH * 2, height=150)]
    if table["compile_s"].notna().any():
        panels.append(base.transform_filter("isValid(datum.compile_s)").mark_line(point=True).encode(
            y=alt.Y("compile_s:Q", title="JIT compile time so far (s)")).properties(width=WIDTH * 2, height=110))
    runs = ", ".join(values(table, "run"))
    return alt.vconcat(*panels, title=alt.TitleParams(
        "Warming now: each slice as it ends (the final charts replace this when the run ends)",
        subtitle=wrap(runs, 90), anchor="start"))
