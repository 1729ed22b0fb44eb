"""The two noises of a server's throughput that a comparison's design is made from: how far its forks lie apart
(with their round, and beyond what a round shares with the other servers' forks) and how far one fork's windows do,
each a variance of log rps (:func:`benchlab.analysis.precision.design` reads them)."""

from __future__ import annotations

import json
import math

import numpy as np

from .. import schema
from . import cells, stats


def cell_of(record) -> str:
    """A record's cell (:func:`benchlab.schema.cell`, as the summary groups its runs) as one text."""
    return json.dumps(schema.cell(record.params, record.label), default=str)


def noise(servers) -> tuple[float, float]:
    """(between**2, within**2) of the rps logs: each server's random-effects components
    (:func:`benchlab.analysis.stats.components`), the variances averaged over the servers that can tell them;
    NaN where none can. ``servers``: each server's forks, a fork its windows' rps.

    >>> [round(v, 4) for v in noise([[[100, 102, 98], [150, 153, 147]]])]
    [0.0821, 0.0004]
    """
    parts = []
    for forks in servers:
        forks = list(forks)
        keys = [i for i, fork in enumerate(forks) for _ in fork]
        parts.append(stats.components([v for fork in forks for v in fork], keys))
    between = [p["between_cv"] ** 2 for p in parts if p["between_cv"] == p["between_cv"]]
    within = [p["within_cv"] ** 2 for p in parts if p["within_cv"] == p["within_cv"]]
    return (sum(between) / len(between) if between else math.nan, sum(within) / len(within) if within else math.nan)


def beyond_round(records, w2: float) -> float:
    """The variance of a fork's own effect on the rps logs beyond what its round (one ``suite`` and ``repeat``)
    shares with the other servers' forks: what a ratio judged by round (:func:`benchlab.analysis.cells.rounds`)
    carries of the forks. Two-way analysis of variance of the fork means by server and round, per cell over the
    rounds every server has a fork in: the interaction's mean square, (S-1)(R-1) degrees of freedom, less the
    window noise ``w2`` over the forks' windows, 0 when negative; pooled over cells by degrees of freedom. NaN
    where no cell has 2 servers in 2 rounds.

    >>> from benchlab.store.results import Run
    >>> recs = [Run(id=f"{s}{r}", params={"server": s, "repeat": r, "fork": f"{s}{r}"}, metrics={"rps": v},
    ...             metadata={}, suite="x") for r, k in ((1, 1.0), (2, 1.3), (3, 0.8))
    ...         for s, v in (("a", 100 * k), ("b", 150 * k * (1.02 if r == 2 else 1.0)))]
    >>> round(math.sqrt(beyond_round(recs, 0.0)), 4)  # b's round-2 fork 2% off its round: log 1.02 / sqrt 6
    0.0081
    """
    forks: dict[str, dict] = {}
    for record in records:
        rps = record.metrics.get("rps")
        if record.status != "ok" or not isinstance(rps, (int, float)) or not rps > 0:
            continue
        fork = forks.setdefault(cells.fork_key(record.params.get("fork"), record.id, record.started_at), {
            "cell": cell_of(record), "server": record.params["server"],
            "round": (record.suite, record.params.get("repeat")), "logs": []})
        fork["logs"].append(math.log(rps))
    by_cell: dict[str, dict] = {}
    for fork in forks.values():
        if fork["round"][0] is not None and fork["round"][1] is not None:
            by_cell.setdefault(fork["cell"], {}).setdefault(fork["server"], {})[fork["round"]] = fork["logs"]
    found = [(v, df) for v, df in (interaction(servers, w2) for servers in by_cell.values()) if df]
    weight = sum(df for _, df in found)
    return sum(v * df for v, df in found) / weight if weight else math.nan


def interaction(servers: dict, w2: float) -> tuple[float, int]:
    """(variance, degrees of freedom) of the forks' own effects in one cell, ``servers`` as ``{server: {round:
    [log rps of each window]}}``: the server-by-round interaction of the fork means over the rounds every server
    has a fork in, less the window noise ``w2`` it carries, 0 when negative; (NaN, 0) below 2 servers or 2
    rounds."""
    common = sorted(set.intersection(*(set(r) for r in servers.values())), key=str) if servers else []
    size, count = len(servers), len(common)
    if size < 2 or count < 2:
        return math.nan, 0
    y = np.array([[sum(servers[s][r]) / len(servers[s][r]) for r in common] for s in servers])
    m = np.array([[len(servers[s][r]) for r in common] for s in servers], dtype=float)
    rest = y - y.mean(axis=1, keepdims=True) - y.mean(axis=0, keepdims=True) + y.mean()
    df = (size - 1) * (count - 1)
    return max(0.0, float((rest ** 2).sum()) / df - (w2 if w2 == w2 else 0.0) * float((1 / m).mean())), df
