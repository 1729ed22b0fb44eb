"""The pieces every chart shares: finished runs, cell labels, confidence intervals, titles and colours."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from ...analysis import cells
from ...analysis.cells import forks, key, varying
from ...errors import ResultsError
from ...schema import CELL

if TYPE_CHECKING:
    import altair as alt
    import pandas as pd

#: The ticks of the 'nines' axis: percentile p is drawn at 1 / (1 - p/100).
NINES_TICKS = {50.0: "50", 90.0: "90", 99.0: "99", 99.9: "99.9", 99.99: "99.99"}

MIB = 2**20
WIDTH = 220
HEIGHT = 220
#: Pixels per character of a subtitle (11 px) in a wide font (DejaVu Sans): a subtitle wrapped at the chart's
#: width with this fits in any browser, whatever font it draws the static SVG with.
SUBTITLE_PX = 6.6
#: The same for the title (13 px, bold): a chart of one narrow panel breaks its title in two lines rather than
#: draw it past the image's edge.
TITLE_PX = 8.4
#: Room for the server legend: long names such as "spring-undertow" are never cut (Vega's default is 160 px).
LEGEND_LABEL_LIMIT = 260
#: What the legend usually adds to a chart's width, which the subtitle may use too.
LEGEND_PX = 110
#: The cell columns a chart draws as its panels or its x axis (the scenario and the load point); every other
#: cell column that varies is a setup, named beside the load point, so runs of two setups are never pooled.
DRAWN = ("scenario", "load", "connections", "rate", "users", "loops")


# --- frames and labels ------------------------------------------------------------------------------------

def nines(percentile: float) -> float:
    """Where ``percentile`` sits on the nines axis: 50 -> 2, 90 -> 10, 99 -> 100, 99.9 -> 1000.

    >>> nines(99.9)
    1000.0
    """
    return round(1.0 / (1.0 - percentile / 100.0), 6)


def finished(frame: pd.DataFrame, what: str) -> pd.DataFrame:
    if frame is None or len(frame) == 0:
        raise ResultsError(f"no runs to chart for the {what} chart: run benchlab.run()/compare() first, "
                           "or load a results directory that holds run.json files")
    ok = cells.ok(frame)
    if len(ok) == 0:
        raise ResultsError(f"every run failed, so there is nothing to chart for the {what} chart: "
                           "read the error column of the runs frame")
    return ok.copy()


def standing(frame: pd.DataFrame, what: str) -> pd.DataFrame:
    """The finished and the retaken windows of the runs frame, each with its ``standing`` (the one rule,
    :func:`benchlab.analysis.validity.standing`), for a chart that draws the windows used and marks the others."""
    from ...analysis.validity import standing as decided

    finished(frame, what)
    shown = frame[frame["status"].isin(["ok", "retaken"])] if "status" in frame else frame
    return shown.assign(standing=decided(shown))


def load_point(row: Mapping) -> str:
    """How a run's load is named in a facet header: '200 connections', '500 req/s', '100 users x 1000', with a
    protocol other than HTTP/1.1: '16 connections, h2c x 10 streams'."""
    model = row.get("load") or "duration"
    protocol, streams = row.get("protocol"), number(row.get("streams")) or 1
    wire = "" if protocol in (None, "http1") else f", {protocol}" + (f" x {streams:g} streams" if streams > 1 else "")
    if model == "rate" and number(row.get("rate")) is not None:
        return f"{row['rate']:g} req/s{wire}"
    if model == "count" and number(row.get("users")) is not None:
        loops = number(row.get("loops"))
        return f"{int(row['users'])} users x {int(loops) if loops is not None else '?'}{wire}"
    connections = number(row.get("connections"))
    return f"{int(connections)} connections{wire}" if connections is not None else "load"


def load_order(row: Mapping) -> tuple:
    model = row.get("load") or "duration"
    key = {"duration": "connections", "rate": "rate", "count": "users"}.get(model, "connections")
    value = number(row.get(key))
    return (model, value if value is not None else -1.0, number(row.get("loops")) or 0.0)


def number(value) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def setup(row: Mapping, columns: Iterable[str]) -> str:
    """How the setup columns that vary are named beside the load: '3 s measured after 1 s warm-up'; a label as it
    is written (the panel's "press 2").

    >>> setup({"duration": 3.0, "warmup": 1.0, "label": "press 2"}, ["duration", "warmup", "label"])
    '3 s measured after 1 s warm-up, press 2'
    """
    parts = []
    columns = list(columns)
    if "duration" in columns:
        parts.append(f"{number(row.get('duration')):g} s measured" if number(row.get("duration")) is not None
                     else "no duration")
    if "warmup" in columns:
        warmup = row.get("warmup")
        text = f"{number(warmup):g} s warm-up" if number(warmup) is not None else f"warm-up {key(warmup)}"
        parts[-1:] = [f"{parts[-1]} after {text}"] if parts else [text]
    parts += [str(key(row.get(c))) if c == "label" else f"{c.replace('_', ' ')} {key(row.get(c))}"
              for c in columns if c not in ("duration", "warmup")]
    return ", ".join(parts)


def _sortable(value) -> tuple:
    value = key(value)
    return (0, number(value), "") if number(value) is not None else (1, 0.0, str(value))


def with_cells(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Add the facet label ``load_point`` and return the labels in a natural order.

    Runs of different cells (:func:`benchlab.schema.cell`) are never pooled, as in the statistics: the cell
    columns that vary within one load point (a duration, a warm-up, the cores, pipelining ...) are named in the
    label, so each cell gets its own panel, its own mean and its own interval.
    """
    import pandas as pd

    frame = frame.copy()
    rows = frame.to_dict("records")
    points = pd.Series([load_point(r) for r in rows], index=frame.index)
    mixed = [c for c in varying(frame)
             if c != "scenario" and frame[c].astype(str).groupby(points).nunique().max() > 1]
    labels = [", ".join(filter(None, (point, setup(r, mixed)))) for point, r in zip(points, rows)]
    frame["load_point"] = labels
    order = sorted({(load_order(r), tuple(_sortable(r.get(c)) for c in mixed), label)
                    for r, label in zip(rows, labels)})
    return frame, [label for *_, label in order]


def setups(frame: pd.DataFrame) -> list[str]:
    """The cell columns that vary and are not drawn as a panel or an axis (:data:`DRAWN`): each a setup."""
    return [c for c in varying(frame) if c not in DRAWN]


def with_setup(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """Add the column ``setup`` naming the setup columns that vary (:func:`setup`), and the encoding that draws
    each setup as its own dashed line (none when all runs share one setup), so a line never averages two."""
    import altair as alt

    mixed = setups(frame)
    frame = frame.assign(setup=[setup(r, mixed) for r in frame.to_dict("records")])
    return frame, ({"strokeDash": alt.StrokeDash("setup:N", title="setup")} if mixed else {})


def interval(runs: pd.DataFrame, metric: str) -> tuple[float, float, float, int]:
    """(mean, low, high, n) of ``metric`` over ``runs``, a cell's runs of one server, as the summary takes them:
    each fork's windows averaged first (:func:`benchlab.analysis.cells.fork_means`), then the mean of the fork
    means and its 95 % interval (:func:`benchlab.analysis.stats.describe`), so a chart and the table beside it
    agree; ``n`` counts forks."""
    from ...analysis.stats import describe

    d = describe(cells.fork_means(runs[metric], cells.fork_keys(runs)))
    return d["mean"], d["ci_low"], d["ci_high"], d["n"]


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


def machine_of(records: Iterable) -> str:
    """One line naming the machine stored runs were measured on: :func:`machine` of the first finished run's
    metadata (a failed run may have stopped before its machine was read).

    >>> machine_of([])
    'unknown CPU'
    """
    return machine(next((r.metadata for r in records if r.status == "ok"), {}))


def values(frame: pd.DataFrame, column: str) -> list:
    if column not in frame.columns:
        return []
    seen = []
    for value in frame[column].tolist():
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        if value not in seen:
            seen.append(value)
    return seen


def most_repeats(frame: pd.DataFrame) -> int:
    """The most forks any one cell and server (:data:`~benchlab.schema.CELL`) has: a fork's windows count once;
    run() results all say repeat 1."""
    frame = forks(cells.ok(frame))
    keys = [c for c in ("server", *CELL) if c in frame.columns]
    if not keys or not len(frame):
        return 0
    return int(frame.assign(**{c: frame[c].map(key) for c in keys}).groupby(keys, dropna=False).size().max())


def describe(frame: pd.DataFrame, *, machine: str | None = None) -> str:
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
        return "/".join(fmt(v) for v in values(frame, column))

    parts = []
    if joined("driver"):
        parts.append(joined("driver"))
    if joined("duration"):
        text = f"{joined('duration', lambda v: f'{v:g}')} s measured"
        if joined("warmup"):
            # warmup="auto" is stored as the word: the warm-up lasted until throughput settled
            warmup = joined("warmup", lambda v: f"{v:g} s" if isinstance(v, (int, float)) else str(v))
            text += f" after {warmup} warm-up"
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
    repeats = most_repeats(frame)
    if repeats:
        parts.append(f"{repeats} repeat{'s' if repeats != 1 else ''}")
    mixed = [c.replace("_", " ") for c in setups(frame)]
    if mixed:
        parts.append(f"{' and '.join(mixed)} differ{'s' if len(mixed) == 1 else ''} between runs: drawn apart, "
                     "never pooled")
    if machine:
        parts.append(machine)
    return ", ".join(parts)


def title(text: str, frame: pd.DataFrame, note: str | None, *, width: float = WIDTH) -> alt.TitleParams:
    """The title, with the subtitle (``note``, by default :func:`describe`) wrapped at ``width`` pixels:
    the width the chart's panels take, so no line reaches past the chart's right edge; a title too long for that
    width is a list of lines."""
    import altair as alt

    subtitle = note if note is not None else describe(frame)
    chars = max(40, int((width + LEGEND_PX) / SUBTITLE_PX))  # the legend beside the panels widens the image
    heading = max(30, int((width + LEGEND_PX) / TITLE_PX))
    return alt.TitleParams(text=text if len(text) <= heading else wrap(text, heading), subtitle=wrap(subtitle, chars),
                           anchor="start")


def wrap(text: str, width: int = 100) -> list[str]:
    """Subtitle lines of at most ``width`` characters, broken between words.

    >>> wrap("wrk, 2 s measured, server cores 0, load cores 1", 20)
    ['wrk, 2 s measured,', 'server cores 0, load', 'cores 1']
    """
    import textwrap

    return textwrap.wrap(text or "", width, break_long_words=False, break_on_hyphens=False)


def server_color(servers: list[str]) -> alt.Color:
    """A colour per server; the legend's symbols drawn solid, whatever the opacity of the marks they stand for."""
    import altair as alt

    return alt.Color("server:N", title="server", scale=alt.Scale(domain=sorted(servers)),
                     legend=alt.Legend(labelLimit=LEGEND_LABEL_LIMIT, symbolOpacity=1))


def server_fill(servers: list[str]) -> alt.Fill:
    """The fill of a server's marks, with :func:`server_color`'s scale and legend, so Vega-Lite draws the two as one
    legend (a fill with no legend beside a colour with one is a conflict it warns of in the report)."""
    import altair as alt

    return alt.Fill("server:N", title="server", scale=alt.Scale(domain=sorted(servers)),
                    legend=alt.Legend(labelLimit=LEGEND_LABEL_LIMIT, symbolOpacity=1))


def facets(frame: pd.DataFrame, order: list[str], column: str = "load_point") -> dict:
    """The facet encodings of a chart of cells: a column per load point (``column``), and a row per scenario only
    where there are several; a lone scenario is named once, above the columns, not as a facet of one value.

    >>> import pandas as pd
    >>> sorted(facets(pd.DataFrame({"scenario": ["hello"]}), ["8 connections"]))
    ['column']
    """
    import altair as alt

    scenarios = values(frame, "scenario")
    if len(scenarios) == 1:
        return {"column": alt.Column(f"{column}:N", title=f"scenario {scenarios[0]}", sort=order)}
    return {"row": alt.Row("scenario:N", title="scenario"), "column": alt.Column(f"{column}:N", title=None,
                                                                                  sort=order)}


def tick_labels(ticks: Mapping[float, str]) -> str:
    """A Vega label expression that names each tick position (exactly, as JSON writes the number) and no other.

    >>> tick_labels({2.0: "50", 99999.999999: "max"})
    "datum.value == 2.0 ? '50' : datum.value == 99999.999999 ? 'max' : ''"
    """
    return " : ".join(f"datum.value == {where!r} ? '{text}'" for where, text in ticks.items()) + " : ''"


def long(frame: pd.DataFrame, keys: list[str], values: Mapping[str, pd.Series], name: str) -> pd.DataFrame:
    """One row per run and value column (``name`` says which), run by run; missing values are dropped."""
    import pandas as pd

    wide = frame.reindex(columns=keys).assign(
        **{k: pd.to_numeric(v, errors="coerce") if v is not None else math.nan for k, v in values.items()})
    table = wide.melt(id_vars=keys, value_vars=list(values), var_name=name, value_name="value", ignore_index=False)
    return table.sort_index(kind="stable").dropna(subset=["value"]).reset_index(drop=True)
