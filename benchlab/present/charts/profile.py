"""Why one server is faster, drawn: each server's profile as an icicle, and each layer's CPU per request against a
baseline with its interval over forks (issue 51; the figures are :mod:`benchlab.analysis.profiles`')."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...analysis import cells
from ...analysis.profiles import LAYERS, frame_layer
from ...errors import ResultsError
from .frames import LEGEND_LABEL_LIMIT, describe, title, values, wrap

if TYPE_CHECKING:
    import altair as alt
    import pandas as pd

#: A frame under this share of its server's samples is not drawn (its subtree neither): the Vega spec of a whole
#: profile would hold tens of thousands of frames, most of them one sample.
MIN_SHARE = 0.005
#: The icicle's width and each level's height, in pixels: with the layer legend beside it, it fits the output area
#: of JupyterLab, Notebook 7 and the report (about 900 px, :data:`benchlab.present.charts.series.FIT`).
FLAME_WIDTH, LEVEL = 700, 10
#: Pixels a character of a frame's label takes (9 px text): a label is cut to what its frame's width holds.
LABEL_PX = 5.5
#: One colour per layer, in :data:`~benchlab.analysis.profiles.LAYERS`' order, the same in every profile chart; the
#: last ("JVM and other") grey.
COLOURS = ("#d62728", "#8c564b", "#9467bd", "#1f77b4", "#17becf", "#2ca02c", "#bcbd22", "#ff7f0e", "#7f7f7f")


def layer_color() -> alt.Color:
    """A colour per layer of :data:`~benchlab.analysis.profiles.LAYERS`, in its order."""
    import altair as alt

    return alt.Color("layer:N", title="layer", scale=alt.Scale(domain=[name for name, _ in LAYERS],
                                                                range=list(COLOURS)),
                     legend=alt.Legend(labelLimit=LEGEND_LABEL_LIMIT, symbolOpacity=1))


def flame(stacks: pd.DataFrame, server: str | None = None) -> alt.VConcatChart:
    """Each server's profile as an icicle (``Suite.profiles``): its root at the top, a frame's width its share of
    the server's CPU samples over all its forks, coloured by layer (the layer of its stack down to it); frames
    under :data:`MIN_SHARE` of the samples are left out, and each panel's title says how many samples that cut.
    ``server``: draw that one only.

    Example
    -------
    >>> flame(suite.profiles, "spring-tomcat")    # doctest: +SKIP
    """
    import altair as alt

    if stacks is None or stacks.empty:
        raise ResultsError("no profiled window to draw: compare(..., profile=True) takes one a fork")
    servers = [server] if server else values(stacks, "server")
    if server and server not in set(stacks["server"]):
        raise ResultsError(f"no profiled window of {server}: profiled are {', '.join(values(stacks, 'server'))}")
    panels = [_icicle(stacks[stacks["server"] == name], name) for name in servers]
    heading = "Where each server's CPU went: its stacks, root at the top, width its share of the samples"
    note = (f"{describe(stacks)}; async-profiler cpu samples of every thread of the server (GC, JIT and kernel "
            f"included), over each server's forks; frames under {MIN_SHARE:.1%} of a server's samples not drawn")
    return alt.vconcat(*panels).properties(title=alt.TitleParams(heading, subtitle=wrap(note, 120), anchor="start"))


def _icicle(mine: pd.DataFrame, server: str) -> alt.LayerChart:
    import altair as alt

    table, cut, drawn, frames = _nodes(mine)
    table = table.assign(bottom=table["depth"] + 1)
    tooltip = [alt.Tooltip("frame:N"), alt.Tooltip("layer:N"), alt.Tooltip("samples:Q", format=","),
               alt.Tooltip("share:Q", title="share (%)", format=".1%"),
               alt.Tooltip("us_per_request:Q", title="CPU per request (µs)", format=",.2f")]
    x = alt.X("x0:Q", title=None, axis=None, scale=alt.Scale(domain=[0, 1]))
    y = alt.Y("depth:Q", title=None, axis=None, scale=alt.Scale(domain=[0, int(table["bottom"].max())], reverse=True))
    boxes = alt.Chart(table).mark_rect(stroke="white", strokeWidth=0.5).encode(
        x=x, x2="x1:Q", y=y, y2="bottom:Q", color=layer_color(), tooltip=tooltip)
    # the labels from the boxes' data (one dataset, not two), only where the frame is wide enough to name
    labels = alt.Chart(table).mark_text(align="left", baseline="middle", dx=2, fontSize=9).encode(
        x="x0:Q", y="middle:Q", text="label:N", tooltip=tooltip).transform_filter(
        "datum.label != ''").transform_calculate(middle="datum.depth + 0.5")
    forks = mine["fork"].nunique()
    said = (f"{server}: {int(mine['samples'].sum()):,} samples over {forks} fork{'s' if forks != 1 else ''}; "
            f"{drawn:,} of its {frames:,} frames drawn, the rest under {MIN_SHARE:.1%} each: {cut:.0%} of the samples' "
            "stacks drawn down to their last frame above that, not to their leaf")
    return alt.LayerChart(layer=[boxes, labels]).properties(
        width=FLAME_WIDTH, height=LEVEL * int(table["bottom"].max()),
        title=alt.TitleParams(said, anchor="start", fontSize=11))


def _nodes(mine: pd.DataFrame) -> tuple[pd.DataFrame, float, int, int]:
    """The icicle's frames of one server (a row each: its place, share, layer and label), the share of its
    samples whose stack is cut short by a frame under :data:`MIN_SHARE`, and the frames drawn of all."""
    import pandas as pd

    folded = mine.groupby("stack", sort=False)["samples"].sum()
    total = float(folded.sum())
    us = float(mine.drop_duplicates("fork")["cpu_per_request"].astype(float).mean()) * 1e6
    root: dict = {}
    frames = 0
    for stack, count in folded.items():
        level = root
        for name in str(stack).split(";"):
            node = level.get(name)
            if node is None:
                node = level[name] = [0, {}]
                frames += 1
            node[0] += int(count)
            level = node[1]
    rows: list[dict] = []
    cut = _walk(root, 0.0, 0, LAYERS[-1][0], total, rows)
    table = pd.DataFrame(rows)
    table["us_per_request"] = table["share"] * us
    return table, cut / total if total else 0.0, len(table), frames


def _walk(level: dict, start: float, depth: int, above: str, total: float, rows: list[dict]) -> int:
    """Lay out the frames of ``level`` from ``start`` (a share of the samples), alphabetically as flame graphs do;
    the samples of the subtrees left out come back."""
    cut, x = 0, start
    for name in sorted(level):
        samples, below = level[name]
        width = samples / total
        if width < MIN_SHARE:
            cut += samples
        else:
            layer = frame_layer(name) or above  # the stack down to this frame: its first claimed frame decides
            fits = int(width * FLAME_WIDTH / LABEL_PX)
            short = name.rsplit("/", 1)[-1]
            label = short if len(short) <= fits else short[:fits - 1] + "…" if fits > 3 else ""
            rows.append({"frame": name, "layer": layer, "depth": depth, "x0": x, "x1": x + width,
                         "samples": samples, "share": width, "label": label})
            cut += _walk(below, x, depth + 1, layer, total, rows)
        x += width
    return cut


def layer_differences(differences: pd.DataFrame) -> alt.FacetChart:
    """Each layer's CPU per request against the baseline (``Suite.layers()``): a bar per layer, the mean difference
    over forks in microseconds (right: more CPU than the baseline spends there), with its 95% interval (none with
    one fork a side); a panel per server, its layers in the order of how much of its difference they explain.

    Example
    -------
    >>> layer_differences(suite.layers())    # doctest: +SKIP
    """
    import altair as alt

    if differences is None or differences.empty:
        raise ResultsError("no layer to compare: profile two servers (compare(..., profile=True)) first")
    table = differences.assign(rank=differences.groupby("server", sort=False).cumcount())
    shown = [c for c in cells.varying(table)]
    table["panel"] = table["server"].astype(str) + (
        table[shown].astype(str).agg(", ".join, axis=1).map(lambda s: f" ({s})") if shown else "")
    baseline = ", ".join(map(str, values(table, "baseline")))
    tooltip = [alt.Tooltip("server:N"), alt.Tooltip("layer:N"),
               alt.Tooltip("difference:Q", title="difference (µs per request)", format="+,.2f"),
               alt.Tooltip("low:Q", title="95% low", format="+,.2f"), alt.Tooltip("high:Q", title="95% high",
                                                                                 format="+,.2f"),
               alt.Tooltip("us_per_request:Q", title="server (µs per request)", format=",.2f"),
               alt.Tooltip("baseline_us_per_request:Q", title=f"{baseline} (µs per request)", format=",.2f"),
               alt.Tooltip("explains:Q", title="part of the whole difference", format=".0%"),
               alt.Tooltip("forks:Q"), alt.Tooltip("baseline_forks:Q", title=f"{baseline} forks")]
    y = alt.Y("layer:N", title=None, sort=alt.EncodingSortField("rank", op="min"))
    x = alt.X("difference:Q", title=f"CPU per request against {baseline} (µs)")
    bars = alt.Chart().mark_bar().encode(x=x, y=y, color=layer_color(), tooltip=tooltip)
    whiskers = alt.Chart().mark_errorbar(ticks=True).encode(
        x=alt.X("low:Q", title=f"CPU per request against {baseline} (µs)"), x2="high:Q", y=y,
        tooltip=tooltip).transform_filter("isValid(datum.low) && isValid(datum.high)")
    zero = alt.Chart().mark_rule(color="black").encode(x=alt.datum(0))
    text = f"CPU per request by layer against {baseline} (µs per request, 95% interval over forks)"
    # not describe(): its repeats count rows, and this frame has one per layer, not per fork
    forks = ", ".join(f"{server} {n}" for server, n in dict(zip(table["server"], table["forks"])).items())
    note = (f"forks: {forks}, {baseline} {int(table['baseline_forks'].max())}; bar: the server's mean over forks minus "
            f"{baseline}'s, the layers ordered by how much of the whole difference they explain; line: Welch's 95% "
            "interval over forks (none with one fork a side)")
    return alt.layer(bars, whiskers, zero, data=table).properties(width=420).facet(
        row=alt.Row("panel:N", title=None, header=alt.Header(labelAngle=0, labelAlign="left", labelLimit=200))
    ).resolve_scale(y="independent").properties(title=title(text, table, note, width=420 + 200))
