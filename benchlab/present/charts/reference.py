"""Our runs beside published figures: each server's ratio to the same baseline, for both sources."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import ResultsError
from .frames import HEIGHT, WIDTH, finished, number, title

if TYPE_CHECKING:
    import altair as alt
    import pandas as pd


def _short(server: str) -> str:
    """'spring-jetty' and 'Jetty' both name jetty: published figures use the bare engine name."""
    name = str(server).strip().lower()
    return name[len("spring-"):] if name.startswith("spring-") else name


def published(runs: pd.DataFrame, reference: pd.DataFrame, *, baseline: str, metric: str = "rps",
              experiment: str | None = None, note: str | None = None) -> alt.LayerChart:
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

    ours = finished(runs, "published comparison")
    ref = _figures(reference, metric, experiment)
    base = _short(baseline)
    table = pd.DataFrame([
        *_ratios("benchlab (ours)", ours["server"].map(_short), ours[metric].map(number), base, baseline, metric),
        *_ratios("published", ref["server"].map(_short), ref["value"].map(number), base, baseline, metric),
    ])
    bars, dots = _marks(table, metric, base)
    parity = alt.Chart(pd.DataFrame({"ratio": [1.0]})).mark_rule(strokeDash=[4, 4], color="gray").encode(y="ratio:Q")
    name = f" ({experiment})" if experiment else ""
    # not alt.layer(): it facets layers that share facet encodings, so its type is LayerChart | FacetChart
    return alt.LayerChart(layer=[bars, dots, parity]).properties(
        width=WIDTH + 80, height=HEIGHT,
        title=title(f"{metric} relative to {base} (x), ours beside the published figures{name}", ours, note,
                    width=WIDTH + 140),
    )


def _figures(reference: pd.DataFrame, metric: str, experiment: str | None) -> pd.DataFrame:
    """The published rows of one metric (and experiment) that are runs, not summaries."""
    import pandas as pd

    ref = reference.copy()
    if experiment is not None:
        ref = ref[ref["experiment"] == experiment]
    ref = ref[(ref["metric"] == metric) & pd.to_numeric(ref["run"], errors="coerce").notna()]
    if ref.empty:
        raise ResultsError(f"no published {metric!r} figures{f' for {experiment!r}' if experiment else ''}: "
                           "check data/published/ and the metric name")
    return ref


def _ratios(source: str, servers: pd.Series, values: pd.Series, base: str, baseline: str, metric: str) -> list[dict]:
    """One source's rows: each server's mean over the baseline's mean ("mean"), and each run over it ("run")."""
    import pandas as pd

    table = pd.DataFrame({"server": servers.values, "value": values.values}).dropna()
    base_values = table.loc[table["server"] == base, "value"]
    if base_values.empty or base_values.mean() == 0:
        raise ResultsError(f"baseline {baseline!r} has no {metric} figures in the {source} runs: "
                           f"choose one of {', '.join(sorted(set(table['server'])))}")
    reference_mean = base_values.mean()
    rows = []
    for server, group in table.groupby("server"):
        rows.append({"source": source, "server": server, "kind": "mean",
                     "ratio": group["value"].mean() / reference_mean, "value": group["value"].mean(),
                     "n": len(group)})
        for i, value in enumerate(group["value"], 1):
            rows.append({"source": source, "server": server, "kind": "run", "ratio": value / reference_mean,
                         "value": value, "n": i})
    return rows


def _marks(table: pd.DataFrame, metric: str, base: str) -> tuple[alt.Chart, alt.Chart]:
    """The bars of the mean ratios and the dots of the runs, side by side per source on one x scale."""
    import altair as alt

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
    return bars, dots
