"""The interaction chart of a factor: how each server's throughput moves as one setting changes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import UsageError
from ...schema import FACTOR_COLUMNS, base_name
from .frames import HEIGHT, finished, interval, number, title, with_cells

if TYPE_CHECKING:
    import altair as alt
    import pandas as pd


def setting_label(value) -> str:
    """A setting's value on the x axis: ``True`` -> "true", a server's default (None) -> "default".

    >>> [setting_label(v) for v in (True, None, 25.0, "parallel")]
    ['true', 'default', '25', 'parallel']
    """
    if value is None or (isinstance(value, float) and number(value) is None):
        return "default"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def interaction(runs: pd.DataFrame, factor: str, *, metric: str = "rps",
                note: str | None = None) -> alt.FacetChart:
    """The mean ``metric`` of each server (one line, its variants joined) at each setting of ``factor``,
    with the 95 % CI as error bars; one panel per scenario (columns) and load point (rows).

    Lines that run parallel mean the setting helps every server alike; lines that cross mean the ranking
    of the servers depends on it (an interaction).

    Parameters
    ----------
    runs : the tidy runs frame of a comparison with ``factors``
    factor : the factor drawn on the x axis: virtual_threads, max_threads, gc, heap, aot, java or server_cpus
    metric : a numeric column, "rps" by default
    note : the subtitle; by default :func:`describe` of ``runs``

    Example
    -------
    >>> chart = interaction(suite.runs, "virtual_threads")          # doctest: +SKIP
    >>> chart.to_dict()["spec"]["layer"][0]["mark"]["type"]          # doctest: +SKIP
    'line'
    """
    import altair as alt

    if factor not in FACTOR_COLUMNS:
        raise UsageError(f"unknown factor {factor!r}: choose one of {', '.join(FACTOR_COLUMNS)}")
    frame, order = with_cells(finished(runs, "interaction"))
    column = FACTOR_COLUMNS[factor]
    frame = frame.assign(base=frame["server"].map(base_name),
                         setting=[setting_label(v) for v in frame[column]] if column in frame else "default")
    table = _points(frame, metric)
    x = alt.X("setting:O", title=factor, sort=list(dict.fromkeys(frame["setting"])), axis=alt.Axis(labelAngle=0))
    color = alt.Color("base:N", title="server", scale=alt.Scale(domain=sorted(table["base"].unique())))
    base = alt.Chart().encode(x=x, color=color)  # the data sits on the layer, as a facet needs
    lines = base.mark_line(point=alt.OverlayMarkDef(size=60)).encode(
        y=alt.Y("value:Q", title=metric, scale=alt.Scale(zero=False)),
        tooltip=[alt.Tooltip("variants:N", title="server"), alt.Tooltip("setting:O", title=factor),
                 alt.Tooltip("value:Q", title=f"mean {metric}", format=",.1f"),
                 alt.Tooltip("ci_low:Q", title="95% CI low", format=",.1f"),
                 alt.Tooltip("ci_high:Q", title="95% CI high", format=",.1f"), alt.Tooltip("n:Q", title="repeats")],
    )
    layers = [lines]
    if table["ci_low"].map(number).notna().any():  # a cell of one run has no interval: no error bar layer
        layers.append(base.transform_filter("isValid(datum.bar_low)").mark_errorbar(ticks={"size": 10}).encode(
            y=alt.Y("bar_low:Q", title=metric), y2="bar_high:Q"))
    return alt.layer(*layers, data=table).properties(width=220, height=HEIGHT).facet(
        column=alt.Column("scenario:N", title="scenario"),
        row=alt.Row("load_point:N", title=None, sort=order),
    ).resolve_scale(y="independent").properties(
        title=title(f"{metric} by {factor}: one line per server", frame, note))


def _points(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One row per server (its variants joined) and setting in each panel: the mean ``metric``, its 95 % CI
    and the ends of the error bar drawn for it."""
    import pandas as pd

    points = []
    for (scenario, point, base, setting), group in frame.groupby(["scenario", "load_point", "base", "setting"],
                                                                 sort=False):
        mean, low, high, n = interval(group, metric)
        points.append({"scenario": scenario, "load_point": point, "base": base, "setting": setting,
                       "variants": ", ".join(dict.fromkeys(group["server"])), "value": mean, "ci_low": low,
                       "ci_high": high, "n": n})
    table = pd.DataFrame(points)
    # Two repeats can give an interval a thousand times the mean, which would flatten every line: an interval
    # is drawn up to twice the panel's highest mean (the tooltip keeps its true ends).
    top = 2 * table.groupby(["scenario", "load_point"])["value"].transform("max")
    return table.assign(bar_low=table["ci_low"].clip(lower=0), bar_high=table["ci_high"].clip(upper=top))
