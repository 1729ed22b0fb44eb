"""Altair charts of benchlab results: a tidy frame in, a chart out.

Every function takes the tidy runs frame (one row per run, the columns of
:data:`benchlab.schema.COLUMNS`, latencies in seconds, sizes in bytes) or, for the resource timeline, the
samples frame, and returns an Altair chart. None of them saves or displays anything: a notebook shows
the chart by leaving it as a cell's last value, :mod:`benchlab.report` renders it into HTML.

Conventions shared by all charts:

- failed runs (``status != "ok"``) are left out; a frame with no finished run raises
  :class:`~benchlab.errors.ResultsError`;
- latencies are drawn in milliseconds, memory in MiB, CPU in percent of one core (100 % = one busy core);
- a missing value (an imported wrk text has no p99.9) is dropped, never drawn as zero;
- one repeat is fine: a cell with a single run has no confidence interval, so no error bar;
- the title names the unit and the subtitle says what was measured and on what (:func:`describe`).

The 95 % confidence intervals come from :func:`benchlab.stats.mean_ci` (t below 10 repeats, bootstrap
from 10), so a chart and the summary table agree.

Example
-------
>>> import benchlab, benchlab.charts as charts                      # doctest: +SKIP
>>> runs = benchlab.results.frame(benchlab.results.load_runs("data/results"))  # doctest: +SKIP
>>> charts.throughput(runs) | charts.latency(runs)                  # doctest: +SKIP
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Iterable, Mapping

from .errors import ResultsError
from .schema import CELL, PERCENTILE_COLUMNS

if TYPE_CHECKING:
    import altair as alt
    import pandas as pd

__all__ = [
    "throughput",
    "latency",
    "sweep",
    "resources",
    "published",
    "rate_sweep",
    "describe",
    "machine",
    "NINES_TICKS",
]

#: The ticks of the 'nines' axis: percentile p is drawn at 1 / (1 - p/100).
NINES_TICKS = {50.0: "50", 90.0: "90", 99.0: "99", 99.9: "99.9", 99.99: "99.99"}

_MIB = 2**20
_WIDTH = 220
_HEIGHT = 220


# --- shared pieces ------------------------------------------------------------------------------------

def nines(percentile: float) -> float:
    """Where ``percentile`` sits on the nines axis: 50 -> 2, 90 -> 10, 99 -> 100, 99.9 -> 1000.

    >>> nines(99.9)
    1000.0
    """
    return round(1.0 / (1.0 - percentile / 100.0), 6)


def _finished(frame: "pd.DataFrame", what: str) -> "pd.DataFrame":
    if frame is None or len(frame) == 0:
        raise ResultsError(f"no runs to chart for the {what} chart: run benchlab.run()/compare() first, "
                           "or load a results directory that holds run.json files")
    ok = frame[frame["status"] == "ok"] if "status" in frame.columns else frame
    if len(ok) == 0:
        raise ResultsError(f"every run failed, so there is nothing to chart for the {what} chart: "
                           "read the error column of the runs frame")
    return ok.copy()


def _load_point(row: Mapping) -> str:
    """How a run's load is named in a facet header: '200 connections', '500 req/s', '100 users x 1000'."""
    model = row.get("load") or "duration"
    if model == "rate" and _number(row.get("rate")) is not None:
        return f"{row['rate']:g} req/s"
    if model == "count" and _number(row.get("users")) is not None:
        loops = _number(row.get("loops"))
        return f"{int(row['users'])} users x {int(loops) if loops is not None else '?'}"
    connections = _number(row.get("connections"))
    return f"{int(connections)} connections" if connections is not None else "load"


def _load_order(row: Mapping) -> tuple:
    model = row.get("load") or "duration"
    key = {"duration": "connections", "rate": "rate", "count": "users"}.get(model, "connections")
    value = _number(row.get(key))
    return (model, value if value is not None else -1.0, _number(row.get("loops")) or 0.0)


def _number(value) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def _with_cells(frame: "pd.DataFrame") -> tuple["pd.DataFrame", list[str]]:
    """Add the facet label ``load_point`` and return the labels in a natural order."""
    frame = frame.copy()
    rows = frame.to_dict("records")
    frame["load_point"] = [_load_point(r) for r in rows]
    order = sorted({(_load_order(r), _load_point(r)) for r in rows})
    return frame, [label for _, label in order]


def _interval(values: Iterable[float]) -> tuple[float, float, float, int]:
    """Mean and 95 % CI of the repeats, by :func:`benchlab.stats.mean_ci`, so charts match the tables."""
    from .stats import mean_ci

    kept = [v for v in (_number(x) for x in values) if v is not None]
    if not kept:
        return (math.nan, math.nan, math.nan, 0)
    low, high, _method = mean_ci(kept)
    return (sum(kept) / len(kept), low, high, len(kept))


def machine(metadata: Mapping) -> str:
    """One line naming the machine a run's metadata describes: CPU model, cores, memory, kernel.

    >>> machine({"cpu": {"model": "AMD EPYC", "logical_cpus": 2}, "system": {"memory_bytes": 2**34}})
    'AMD EPYC, 2 cores, 16 GiB'
    """
    cpu = metadata.get("cpu", {}) or {}
    system = metadata.get("system", {}) or {}
    parts = [cpu.get("model") or "unknown CPU"]
    if cpu.get("logical_cpus"):
        parts.append(f"{cpu['logical_cpus']} cores")
    if system.get("memory_bytes"):
        parts.append(f"{system['memory_bytes'] / 2**30:.0f} GiB")
    if system.get("kernel"):
        parts.append(f"Linux {system['kernel']}")
    return ", ".join(parts)


def _values(frame: "pd.DataFrame", column: str) -> list:
    if column not in frame.columns:
        return []
    seen = []
    for value in frame[column].tolist():
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        if value not in seen:
            seen.append(value)
    return seen


def _repeats(frame: "pd.DataFrame") -> int:
    """The most runs any one cell (server and :data:`~benchlab.schema.CELL`) has: run() results all say repeat 1."""
    if "status" in frame.columns:
        frame = frame[frame["status"] == "ok"]
    keys = [c for c in ("server", *CELL) if c in frame.columns]
    if not keys or not len(frame):
        return 0
    return int(frame.groupby(keys, dropna=False).size().max())


def describe(frame: "pd.DataFrame", *, machine: str | None = None) -> str:
    """The parameters a chart's subtitle notes: tool, durations, cores, versions, repeats, machine.

    Parameters
    ----------
    frame : the tidy runs frame
    machine : a line naming the machine (see :func:`machine`); left out when None

    Example
    -------
    >>> import pandas as pd
    >>> describe(pd.DataFrame([{"server": "spring-jetty", "driver": "wrk", "duration": 30.0, "warmup": 10.0}]))
    'wrk, 30 s measured after 10 s warm-up, 1 repeat'
    """
    def joined(column: str, fmt=str) -> str:
        return "/".join(fmt(v) for v in _values(frame, column))

    parts = []
    if joined("driver"):
        parts.append(joined("driver"))
    if joined("duration"):
        text = f"{joined('duration', lambda v: f'{v:g}')} s measured"
        if joined("warmup"):
            text += f" after {joined('warmup', lambda v: f'{v:g}')} s warm-up"
        parts.append(text)
    if joined("threads"):
        threads = joined("threads", lambda v: f"{int(v)}")
        parts.append(f"{threads} load thread{'' if threads == '1' else 's'}")
    if joined("backend"):
        parts.append(f"backend {joined('backend')}")
    if joined("server_cpus"):
        parts.append(f"server cores {joined('server_cpus')}")
    if joined("load_cpus"):
        parts.append(f"load cores {joined('load_cpus')}")
    if joined("java_version"):
        parts.append(f"Java {joined('java_version')}")
    repeats = _repeats(frame)
    if repeats:
        parts.append(f"{repeats} repeat{'s' if repeats != 1 else ''}")
    if machine:
        parts.append(machine)
    return ", ".join(parts)


def _title(text: str, frame: "pd.DataFrame", note: str | None) -> "alt.TitleParams":
    import altair as alt

    subtitle = note if note is not None else describe(frame)
    return alt.TitleParams(text=text, subtitle=_wrap(subtitle), anchor="start")


def _wrap(text: str, width: int = 100) -> list[str]:
    """Subtitle lines of at most about ``width`` characters, broken after commas."""
    lines: list[str] = []
    for part in (text or "").split(", "):
        if lines and len(lines[-1]) + len(part) + 2 <= width:
            lines[-1] += ", " + part
        elif part:
            lines.append(part)
    return [line + ("," if i < len(lines) - 1 else "") for i, line in enumerate(lines)]


def _server_color(servers: list[str]) -> "alt.Color":
    import altair as alt

    return alt.Color("server:N", title="server", scale=alt.Scale(domain=sorted(servers)))


# --- throughput ---------------------------------------------------------------------------------------

def throughput(runs: "pd.DataFrame", *, metric: str = "rps", note: str | None = None) -> "alt.FacetChart":
    """Requests per second per server: the mean with its 95 % CI, and every repeat as a dot.

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

    frame, order = _with_cells(_finished(runs, "throughput"))
    keys = ["scenario", "load_point", "server"]
    dots = frame[keys + ["id", "repeat", "connections"]].assign(kind="run", value=frame[metric].astype(float))
    cells = []
    for (scenario, point, server), group in frame.groupby(keys, sort=True):
        mean, low, high, n = _interval(group[metric].tolist())
        cells.append({"scenario": scenario, "load_point": point, "server": server, "kind": "cell",
                      "value": mean, "ci_low": low, "ci_high": high, "n": n})
    table = pd.concat([dots, pd.DataFrame(cells)], ignore_index=True)

    base = alt.Chart(table).encode(
        x=alt.X("server:N", title=None, axis=alt.Axis(labelAngle=-30)),
        color=_server_color(_values(frame, "server")),
    )
    unit = "requests/s"
    # Throughput cannot be negative: an interval that reaches below 0 (two repeats far apart) is cut at the axis.
    y_scale = alt.Scale(domainMin=0)
    bars = base.transform_filter(alt.datum.kind == "cell").mark_bar(opacity=0.35).encode(
        y=alt.Y("value:Q", title=f"{metric} ({unit})", scale=y_scale),
        tooltip=[alt.Tooltip("server:N"), alt.Tooltip("value:Q", title=f"mean {metric}", format=",.0f"),
                 alt.Tooltip("ci_low:Q", title="95% CI low", format=",.0f"),
                 alt.Tooltip("ci_high:Q", title="95% CI high", format=",.0f"),
                 alt.Tooltip("n:Q", title="repeats")],
    )
    bars_ci = base.transform_filter("datum.kind === 'cell' && isValid(datum.ci_low)").mark_errorbar(
        ticks=True, thickness=2, clip=True).encode(
        y=alt.Y("ci_low:Q", title=f"{metric} ({unit})", scale=y_scale), y2="ci_high:Q",
        color=alt.value("black"),
    )
    repeats = base.transform_filter(alt.datum.kind == "run").mark_circle(size=55, opacity=0.9).encode(
        y=alt.Y("value:Q"),
        tooltip=[alt.Tooltip("server:N"), alt.Tooltip("repeat:Q"),
                 alt.Tooltip("value:Q", title=metric, format=",.1f"), alt.Tooltip("id:N", title="run")],
    )
    # A cell of one run has no interval: without any, leave the error bar layer out (Vega warns on empty extents).
    with_ci = any(_number(c["ci_low"]) is not None for c in cells)
    layered = alt.layer(*((bars, bars_ci, repeats) if with_ci else (bars, repeats))).properties(
        width=_WIDTH, height=_HEIGHT)
    return layered.facet(
        row=alt.Row("scenario:N", title="scenario"),
        column=alt.Column("load_point:N", title=None, sort=order),
        title=_title(f"Throughput ({unit}): mean, 95% CI and each repeat", frame, note),
    )


# --- latency percentile curve -------------------------------------------------------------------------

def _long(frame: "pd.DataFrame", keys: list[str], values: Mapping[str, "pd.Series"], name: str) -> "pd.DataFrame":
    """One row per run and value column (``name`` says which), run by run; missing values are dropped."""
    import pandas as pd

    wide = frame.reindex(columns=keys).assign(
        **{k: pd.to_numeric(v, errors="coerce") if v is not None else math.nan for k, v in values.items()})
    table = wide.melt(id_vars=keys, value_vars=list(values), var_name=name, value_name="value", ignore_index=False)
    return table.sort_index(kind="stable").dropna(subset=["value"]).reset_index(drop=True)


def _percentiles_long(frame: "pd.DataFrame") -> "pd.DataFrame":
    table = _long(frame, ["id", "server", "scenario", "load_point", "repeat"],
                  {column: frame.get(column) for column in PERCENTILE_COLUMNS}, "column")
    table["percentile"] = table.pop("column").map(PERCENTILE_COLUMNS).astype(float)
    table["nines"] = table["percentile"].map(nines)
    table["latency_ms"] = table.pop("value") * 1000.0
    return table


def latency(runs: "pd.DataFrame", *, note: str | None = None) -> "alt.FacetChart":
    """The latency percentile curve, HDR style: the tail is stretched out on a 'nines' axis.

    x is the percentile p drawn at 1 / (1 - p/100) on a log scale, labelled 50, 90, 99, 99.9, 99.99, so each
    further nine gets the same room; y is latency in milliseconds. A line per server joins the mean over the
    repeats, a dot per repeat shows their spread. Percentiles a tool did not report are left out.

    Example
    -------
    >>> latency(suite.runs).to_dict()["spec"]["layer"][0]["encoding"]["x"]["field"]  # doctest: +SKIP
    'nines'
    """
    import altair as alt

    frame, order = _with_cells(_finished(runs, "latency"))
    table = _percentiles_long(frame)
    if table.empty:
        raise ResultsError("no latency percentiles in these runs (the load tool reported none): "
                           "chart throughput instead")
    label = " : ".join(f"datum.value == {nines(p):g} ? '{text}'" for p, text in NINES_TICKS.items()) + " : ''"
    x = alt.X("nines:Q", title="percentile",
              scale=alt.Scale(type="log", domain=[nines(50.0), nines(99.99)]),
              axis=alt.Axis(values=[nines(p) for p in NINES_TICKS], labelExpr=label, grid=True))
    y = alt.Y("latency_ms:Q", title="latency (ms)")
    color = _server_color(_values(frame, "server"))
    lines = alt.Chart(table).mark_line(point=False).encode(
        x=x, y=alt.Y("mean(latency_ms):Q", title="latency (ms)"), color=color,
        tooltip=[alt.Tooltip("server:N"), alt.Tooltip("percentile:Q", title="percentile"),
                 alt.Tooltip("mean(latency_ms):Q", title="mean latency (ms)", format=",.2f"),
                 alt.Tooltip("count(latency_ms):Q", title="repeats")],
    )
    dots = alt.Chart(table).mark_circle(size=40, opacity=0.8).encode(
        x=x, y=y, color=color,
        tooltip=[alt.Tooltip("server:N"), alt.Tooltip("repeat:Q"), alt.Tooltip("percentile:Q"),
                 alt.Tooltip("latency_ms:Q", title="latency (ms)", format=",.2f"), alt.Tooltip("id:N", title="run")],
    )
    return alt.layer(lines, dots, data=table).properties(width=_WIDTH + 60, height=_HEIGHT).facet(
        row=alt.Row("scenario:N", title="scenario"),
        column=alt.Column("load_point:N", title=None, sort=order),
        title=_title("Latency by percentile (ms), nines scale", frame, note),
    )


# --- concurrency sweep --------------------------------------------------------------------------------

def sweep(runs: "pd.DataFrame", *, note: str | None = None) -> "alt.FacetChart":
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

    frame = _finished(runs, "sweep")
    frame = frame[frame["connections"].map(_number).notna()]
    frame = frame.assign(connections=frame["connections"].map(_number).astype(int))
    table = _long(frame, ["id", "server", "scenario", "connections", "repeat"],
                  {"throughput (requests/s)": frame.get("rps"),
                   "p99 latency (ms)": pd.to_numeric(frame.get("p99", math.nan), errors="coerce") * 1000}, "panel")
    if table.empty:
        raise ResultsError("no runs with a connection count to sweep: the sweep chart needs load='duration' runs")
    points = sorted(set(table["connections"]))
    # One connection count is a sweep of one point: let Vega-Lite pad the axis around it.
    scale = alt.Scale(type="log", base=2, domain=[points[0], points[-1]]) if len(points) > 1 else alt.Scale(
        type="log", base=2)
    x = alt.X("connections:Q", title="connections", scale=scale, axis=alt.Axis(values=points, format="d"))
    color = _server_color(_values(frame, "server"))
    lines = alt.Chart(table).mark_line(point=True).encode(
        x=x, y=alt.Y("mean(value):Q", title=None), color=color,
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
    return alt.layer(lines, dots, data=table).properties(width=_WIDTH + 60, height=_HEIGHT).facet(
        row=alt.Row("scenario:N", title="scenario"),
        column=alt.Column("panel:N", title=None, sort=["throughput (requests/s)", "p99 latency (ms)"]),
        title=_title("Concurrency sweep: throughput (requests/s) and p99 (ms) against connections", frame, note),
    ).resolve_scale(y="independent")


# --- resource timeline --------------------------------------------------------------------------------

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
    table["rss_mib"] = table["rss"].astype(float) / _MIB
    table["load_point"] = ""
    if runs is not None and len(runs):
        labelled, _ = _with_cells(runs)
        points = dict(zip(labelled["id"], labelled["load_point"]))
        table["load_point"] = table["id"].map(points).fillna("")
    table = table[["id", "server", "t", "cpu", "rss_mib", "load_point"]]
    color = _server_color(_values(table, "server"))
    tooltip = [alt.Tooltip("server:N"), alt.Tooltip("load_point:N", title="load"), alt.Tooltip("id:N", title="run"),
               alt.Tooltip("t:Q", title="time (s)", format=".2f"),
               alt.Tooltip("cpu:Q", title="CPU (% of one core)", format=".0f"),
               alt.Tooltip("rss_mib:Q", title="RSS (MiB)", format=",.0f")]
    base = alt.Chart(table).encode(x=alt.X("t:Q", title="time into the measured phase (s)"), color=color,
                                   detail="id:N", tooltip=tooltip)
    cpu = base.mark_line(point=True, strokeWidth=1.5).encode(
        y=alt.Y("cpu:Q", title=f"{role} CPU (% of one core)")).properties(width=_WIDTH * 2, height=160)
    rss = base.mark_line(point=True, strokeWidth=1.5).encode(
        y=alt.Y("rss_mib:Q", title=f"{role} RSS (MiB)", scale=alt.Scale(zero=False))).properties(
        width=_WIDTH * 2, height=160)
    frame_for_note = runs if runs is not None else samples.iloc[0:0]
    return alt.vconcat(cpu, rss, title=_title(f"{role.capitalize()} CPU (% of one core) and RSS (MiB) "
                                              "over the measured phase", frame_for_note, note))


# --- published figures -------------------------------------------------------------------------------

def _short(server: str) -> str:
    """'spring-jetty' and 'Jetty' both name jetty: published figures use the bare engine name."""
    name = str(server).strip().lower()
    return name[len("spring-"):] if name.startswith("spring-") else name


def published(runs: "pd.DataFrame", reference: "pd.DataFrame", *, baseline: str, metric: str = "rps",
              experiment: str | None = None, note: str | None = None) -> "alt.LayerChart":
    """Our ratio to a baseline server beside the published ratio, per server.

    A ratio cancels the machine: a faster machine raises every server, not their ratio. A bar is the
    ratio of the means (each server's mean ``metric`` over the baseline's); the dots are each run over the
    baseline's mean, so the spread of the repeats shows on both sides.

    Parameters
    ----------
    runs : our tidy runs frame, for one comparable cell (same scenario and load)
    reference : the published tidy frame (columns experiment, server, run, metric, value, unit), as in
        ``data/published/wrk.csv``
    baseline : the server the ratios are taken against, e.g. "spring-tomcat" (or "tomcat")
    metric : "rps" or a latency column such as "p99"; ratios are unitless
    experiment : which published experiment, when ``reference`` holds several

    Example
    -------
    >>> reference = pd.read_csv("data/published/wrk.csv")                              # doctest: +SKIP
    >>> published(suite.runs, reference, baseline="spring-tomcat")                     # doctest: +SKIP
    """
    import altair as alt
    import pandas as pd

    ours = _finished(runs, "published comparison")
    ref = reference.copy()
    if experiment is not None:
        ref = ref[ref["experiment"] == experiment]
    ref = ref[(ref["metric"] == metric) & pd.to_numeric(ref["run"], errors="coerce").notna()]
    if ref.empty:
        raise ResultsError(f"no published {metric!r} figures{f' for {experiment!r}' if experiment else ''}: "
                           "check data/published/ and the metric name")
    base = _short(baseline)
    rows = []
    for source, servers, values in (
        ("benchlab (ours)", ours["server"].map(_short), ours[metric].map(_number)),
        ("published", ref["server"].map(_short), ref["value"].map(_number)),
    ):
        table = pd.DataFrame({"server": servers.values, "value": values.values}).dropna()
        base_values = table.loc[table["server"] == base, "value"]
        if base_values.empty or base_values.mean() == 0:
            raise ResultsError(f"baseline {baseline!r} has no {metric} figures in the {source} runs: "
                               f"choose one of {', '.join(sorted(set(table['server'])))}")
        reference_mean = base_values.mean()
        for server, group in table.groupby("server"):
            rows.append({"source": source, "server": server, "kind": "mean",
                         "ratio": group["value"].mean() / reference_mean, "value": group["value"].mean(),
                         "n": len(group)})
            for i, value in enumerate(group["value"], 1):
                rows.append({"source": source, "server": server, "kind": "run", "ratio": value / reference_mean,
                             "value": value, "n": i})
    table = pd.DataFrame(rows)
    unit = "requests/s" if metric == "rps" else "s"
    color = alt.Color("source:N", title=None, scale=alt.Scale(domain=["benchlab (ours)", "published"]))
    # Explicit domains: the bars and the dots then share one x scale without Vega-Lite unioning two sorts.
    x = alt.X("server:N", title=None, axis=alt.Axis(labelAngle=0),
              scale=alt.Scale(domain=sorted(set(table["server"]))))
    offset = alt.XOffset("source:N", scale=alt.Scale(domain=["benchlab (ours)", "published"]))
    bars = alt.Chart(table).transform_filter(alt.datum.kind == "mean").mark_bar(opacity=0.6).encode(
        x=x, xOffset=offset, y=alt.Y("ratio:Q", title=f"{metric} ratio to {base} (x)"),
        color=color,
        tooltip=[alt.Tooltip("source:N"), alt.Tooltip("server:N"),
                 alt.Tooltip("ratio:Q", title=f"ratio to {base}", format=".2f"),
                 alt.Tooltip("value:Q", title=f"mean {metric} ({unit})", format=",.4g"),
                 alt.Tooltip("n:Q", title="runs")],
    )
    dots = alt.Chart(table).transform_filter(alt.datum.kind == "run").mark_circle(size=45, color="black").encode(
        x=x, xOffset=offset, y="ratio:Q", detail="source:N",
        tooltip=[alt.Tooltip("source:N"), alt.Tooltip("server:N"), alt.Tooltip("n:Q", title="run"),
                 alt.Tooltip("ratio:Q", title=f"ratio to {base}", format=".2f"),
                 alt.Tooltip("value:Q", title=f"{metric} ({unit})", format=",.4g")],
    )
    parity = alt.Chart(pd.DataFrame({"ratio": [1.0]})).mark_rule(strokeDash=[4, 4], color="gray").encode(y="ratio:Q")
    name = f" ({experiment})" if experiment else ""
    return alt.layer(bars, dots, parity).properties(
        width=_WIDTH + 80, height=_HEIGHT,
        title=_title(f"{metric} relative to {base} (x), ours beside the published figures{name}", ours, note),
    )


# --- latency against throughput (rate sweeps) ---------------------------------------------------------

def rate_sweep(runs: "pd.DataFrame", *, note: str | None = None) -> "alt.FacetChart":
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

    frame = _finished(runs, "latency-throughput")
    frame = frame[frame["load"] == "rate"].copy()
    if frame.empty:
        raise ResultsError("no constant-rate runs (load='rate') in this frame: run compare(load='rate', rates=[...])")
    frame["target"] = [(_number(t) if _number(t) is not None else _number(r))
                       for t, r in zip(frame["target_rps"], frame["rate"])]
    frame["p99_ms"] = frame["p99"].map(_number) * 1000.0
    frame["rps"] = frame["rps"].astype(float)
    table = frame[["id", "server", "scenario", "repeat", "target", "rps", "p99_ms"]].dropna(subset=["p99_ms"])
    color = _server_color(_values(table, "server"))
    means = alt.Chart(table).transform_aggregate(
        rps="mean(rps)", p99_ms="mean(p99_ms)", runs="count()", groupby=["server", "scenario", "target"],
    ).mark_line(point=True).encode(
        x=alt.X("rps:Q", title="achieved throughput (requests/s)"),
        y=alt.Y("p99_ms:Q", title="p99 latency (ms)"),
        order=alt.Order("target:Q"), color=color,
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
    return alt.layer(means, dots, data=table).properties(width=_WIDTH * 2, height=_HEIGHT + 40).facet(
        column=alt.Column("scenario:N", title="scenario"),
        title=_title("Latency against throughput: p99 (ms) by achieved requests/s, constant-rate runs",
                     frame, note),
    )
